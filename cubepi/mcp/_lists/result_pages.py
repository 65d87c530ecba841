"""Results the model can page through: the loader policy ``page_results`` (docs/policies.md).

Where ``max_output_chars`` cuts a result, `PageStore.keep` keeps the text that was cut, in memory, and the
cut text ends with how to read on: ``read_more(ref="…", offset=N)`` (with the list's prefix). The list
gains the ``read_more`` tool (`read_more_tool`), which returns the next ``max_output_chars`` characters.

- Bound: a list keeps at most ``page_results`` characters in all (``True``: `DEFAULT_PAGE_CHARS`); the
  oldest kept text is dropped first. A reference dropped, unknown or malformed is an ``is_error`` result
  the model can read, never an exception. A rest longer than the whole bound is not kept (the hint says so).
- Travel: a store pickles as its bound and its list's token, never its text. Unpickled in a process, every
  copy of one list's store is one store there (a process registry by token), which starts empty and
  hands out references of its own; a reference made in another process (or by another list) is an error
  result saying so. So a tool that travelled pages through results cut where it runs.
- Concurrency: keeping and reading are short sections under one lock (calls at once, from one event loop
  or from threads with `execute_sync`); no await inside.
"""

from __future__ import annotations

import secrets
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from ...errors import UserError
from ...tools import AgentTool, AgentToolResult, Content, TextContent, UpdateCallback

__all__ = ["DEFAULT_PAGE_CHARS", "PageStore", "check_page_results", "read_more_tool"]

DEFAULT_PAGE_CHARS = 1_000_000  # ``page_results=True``: what a list keeps, in characters
READ_MORE = "read_more"

# The stores of this process, by their list's token: copies of one list unpickled here share one store.
_STORES: weakref.WeakValueDictionary[str, PageStore] = weakref.WeakValueDictionary()
_STORES_LOCK = threading.Lock()


def check_page_results(value: Any, max_output_chars: int | None) -> int | None:
    """The bound in characters `page_results` asks for (None: off); a wrong value raises `UserError`."""
    if value is False or value is None:
        return None
    if value is True:
        bound = DEFAULT_PAGE_CHARS
    elif isinstance(value, int) and not isinstance(value, bool) and value > 0:
        bound = value
    else:
        raise UserError(f"page_results must be True, False or a positive int (characters), got {value!r}")
    if max_output_chars is None:
        raise UserError("page_results keeps what max_output_chars cuts: set max_output_chars too")
    return bound


@dataclass(frozen=True)
class _Kept:
    start: int  # the offset of `rest` in the whole text
    rest: str

    @property
    def total(self) -> int:
        return self.start + len(self.rest)


class PageStore:
    """The cut text of one list's results, at most `bound` characters, oldest dropped first."""

    def __init__(self, bound: int, token: str | None = None) -> None:
        self.bound = bound
        self.token = token or secrets.token_hex(4)  # the list's, kept when pickled
        self.instance = secrets.token_hex(4)  # this process's store: references name it
        self._kept: OrderedDict[int, _Kept] = OrderedDict()
        self._chars = 0
        self._count = 0
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_revive, (self.bound, self.token))

    def keep(self, text: str, start: int) -> str | None:
        """Keep `text` (the whole text from `start` on); its reference, or None when it is longer than
        the bound."""
        if len(text) > self.bound:
            return None
        with self._lock:
            while self._chars + len(text) > self.bound:
                _, dropped = self._kept.popitem(last=False)
                self._chars -= len(dropped.rest)
            self._count += 1
            self._kept[self._count] = _Kept(start, text)
            self._chars += len(text)
            return f"{self.instance}-{self._count}"

    def read(self, ref: str, offset: int, size: int, tool: str) -> AgentToolResult:
        """`size` characters of the text `ref` kept, from `offset` (of the whole text), ending with how to
        read on when more is left; what cannot be read is an ``is_error`` result saying why."""
        instance, _, number = ref.partition("-")
        if instance != self.instance or not number.isdigit():
            return _error(
                f"unknown reference {ref!r}: it was not made by this tool list in this process (a cut "
                "result is kept only by the process and list that cut it); call the tool again"
            )
        with self._lock:
            kept = self._kept.get(int(number))
        if kept is None:
            return _error(
                f"the reference {ref!r} has expired: older cut results are dropped to keep within "
                f"page_results={self.bound:,} characters; call the tool again"
            )
        if not kept.start <= offset < kept.total:
            return _error(
                f"offset {offset} is outside what {ref!r} kept: characters {kept.start} to {kept.total} "
                f"of {kept.total}"
            )
        end = min(offset + size, kept.total)
        content: list[Content] = [TextContent(kept.rest[offset - kept.start : end - kept.start])]
        if end < kept.total:
            content.append(TextContent(read_on(tool, ref, end, kept.total)))
        details = {"page": {"ref": ref, "offset": offset, "end": end, "total_chars": kept.total}}
        return AgentToolResult(content=content, details=details)


def _revive(bound: int, token: str) -> PageStore:
    with _STORES_LOCK:
        store = _STORES.get(token)
        if store is None:
            store = _STORES[token] = PageStore(bound, token)
        return store


def register(store: PageStore) -> PageStore:
    """`store` as its process's store for its token (so that a copy unpickled here is the same)."""
    with _STORES_LOCK:
        _STORES[store.token] = store
    return store


def read_on(tool: str, ref: str, offset: int, total: int) -> str:
    """The line that tells the model how to read on."""
    return f"[{total - offset:,} more characters: read on with {tool}(ref={ref!r}, offset={offset})]"


def _error(text: str) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text)], is_error=True)


class ReadMoreArgs(BaseModel):
    ref: str = Field(description="The reference a cut result gave.")
    offset: int = Field(description="Where to read on from, as the cut result (or the last part) gave it.")


class ReadMoreRun:
    """The `run` of the ``read_more`` tool: the next `size` characters of a kept result."""

    def __init__(self, store: PageStore, size: int, tool: str) -> None:
        self.store, self.size, self.tool = store, size, tool

    async def __call__(self, params: BaseModel, on_update: UpdateCallback | None) -> AgentToolResult:
        assert isinstance(params, ReadMoreArgs)
        return self.store.read(params.ref, params.offset, self.size, self.tool)


def read_more_tool(store: PageStore, size: int, name: str, origin: str) -> AgentTool:
    """The tool ``read_more`` of a list (`name` carries the list's prefix)."""
    return AgentTool(
        name=name,
        description=(
            f"Read on in a result of a tool of {origin} that was cut: give the ref and offset the cut "
            f"result ends with; returns the next {size:,} characters."
        ),
        parameters=ReadMoreArgs,
        run=ReadMoreRun(store, size, name),
        input_schema=ReadMoreArgs.model_json_schema(),
        annotations={"readOnlyHint": True},
        origin=origin,
    )
