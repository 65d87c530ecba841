"""`MCPToolList`: the list a loader returns; what the calls of its tools share is
`_calls.shared_state.Shared`.

A loaded list is a plain ``list[AgentTool]`` (indexing, slicing, ``tools + my_tools`` all work) whose tools
share, in each process, one `Shared` (its keepers, launch parameters, limiters: see `_calls.shared_state`).

```python
async with await load_mcp_tools_http("https://host/mcp") as tools:
    await tools[0].execute({...})
# or: tools = await load_mcp_tools_http(...); ...; await tools.aclose()
```

Closing is optional: an unclosed list is harmless. Its keepers end when the list and all its tools are
garbage-collected, and when their event loop ends. After `aclose()`, calling one of its tools raises
`UserError`. `await tools.refresh()` lists the server's tools again and updates the list in place
(`ToolChanges` says what changed); a listing the server marked fresh (2026-07-28 ``ttlMs``) is reused
until it expires.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ...errors import UserError
from ...tools import AgentTool, ensure_unique_names

if TYPE_CHECKING:
    from mcp import types as mcp_types

    from ...tools import Content
    from .._calls.shared_state import Shared
    from .offers import PromptMessage, ServerOffers

__all__ = ["Listing", "MCPToolList", "ToolChanges", "ToolListEdit", "app_only", "merge_changes"]


@dataclass(frozen=True)
class ToolChanges:
    """What a refresh changed in a tool list: the names of the tools added, removed, and those whose
    definition changed (replaced by new tools). True when anything changed."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def merge_changes(changes: Iterable[ToolChanges]) -> ToolChanges:
    """The changes of several lists as one."""
    found = list(changes)
    return ToolChanges(
        added=tuple(name for item in found for name in item.added),
        removed=tuple(name for item in found for name in item.removed),
        changed=tuple(name for item in found for name in item.changed),
    )


@dataclass
class Listing:
    """One listing of a server's tools, built with a list's policies.

    `definitions` maps each tool's name (as in the list, prefix included) to its definition as the server
    listed it; `fresh_until` (`time.monotonic()` seconds) is when the server's cache hints say the listing
    goes stale (None: stale at once, the handshake era or no ``ttlMs``). `app_tools` are the app-only
    tools (`app_only`), kept apart from what a model is offered.
    """

    tools: list[AgentTool]
    definitions: dict[str, Mapping[str, Any]]
    fresh_until: float | None = None
    app_tools: list[AgentTool] = field(default_factory=list)
    offers: ServerOffers | None = None  # what the server offers besides tools (`_lists.offers`)


def app_only(spec: Mapping[str, Any]) -> bool:
    """Whether the MCP Apps extension marks a listed tool as for the application only: its
    ``_meta.ui.visibility`` is a list without ``"model"`` (a model MUST NOT be offered it)."""
    meta = spec.get("_meta")
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    visibility = ui.get("visibility") if isinstance(ui, Mapping) else None
    return isinstance(visibility, list) and "model" not in visibility


# Lists a list's server again (its `Listing`, built with the list's policies).
Relister = Callable[[], Awaitable[Listing]]


@dataclass
class ToolListEdit:
    """What a refresh did to a list, to do to any list holding the same tools: tools to drop (None) or
    replace, by identity, and tools to append."""

    replaced: dict[int, AgentTool | None] = field(default_factory=dict)
    added: list[AgentTool] = field(default_factory=list)

    def apply(self, tools: Iterable[AgentTool]) -> list[AgentTool]:
        kept = [self.replaced.get(id(tool), tool) for tool in tools]
        return [tool for tool in kept if tool is not None] + self.added

    def merge(self, other: ToolListEdit) -> None:
        self.replaced.update(other.replaced)
        self.added.extend(other.added)


class MCPToolList(list[AgentTool]):
    """The tools of one MCP server, as a list; `aclose()` (or ``async with``) releases what they share.

    Slicing or concatenating gives a plain list whose tools keep working; they share the same resources,
    which are closed by `aclose()` on this list or when nothing refers to them any more.
    """

    drift: ToolChanges | None = None  # loaded with lock=: how the server differed from the lockfile

    def __init__(self, tools: Iterable[AgentTool] = (), *, shared: Shared | None = None) -> None:
        super().__init__(tools)
        self._shared = shared
        self._relist: Relister | None = None
        self._definitions: dict[str, Mapping[str, Any]] = {}
        self._own: dict[str, AgentTool] = {}  # the tools this list built, by name
        self._fresh_until: float | None = None
        self._app_tools: list[AgentTool] = []
        self._offers: ServerOffers | None = None

    @property
    def app_tools(self) -> list[AgentTool]:
        """The server's app-only tools (MCP Apps: ``_meta.ui.visibility`` without ``"model"``): never in
        this list, so never offered to a model or exported with it, but callable by the application."""
        return list(self._app_tools)

    @classmethod
    def from_listing(cls, listing: Listing, relist: Relister, *, shared: Shared | None = None) -> MCPToolList:
        """The list of a loader: `listing`'s tools, refreshed by calling `relist`."""
        tools = cls(listing.tools, shared=shared)
        tools._relist = relist
        tools._absorb(listing)
        return tools

    async def refresh(self, *, force: bool = False) -> ToolChanges:
        """List the server's tools again and update this list in place; returns what changed.

        Tools the server added are appended, tools it removed are dropped, and a tool whose definition
        changed is replaced by a new tool; the others stay the same objects. The loader's policies apply
        as at load (a name in `include` / `exclude` that the server no longer offers is ignored). While
        the server's cache hints say the last listing is fresh (a 2026-07-28 server's ``ttlMs``), nothing
        is sent and nothing changes; ``force=True`` always asks.
        """
        changes, _ = await self._refreshed(force)
        return changes

    async def _refreshed(self, force: bool) -> tuple[ToolChanges, ToolListEdit]:
        """`refresh`, and the edit it made (for lists that hold these tools too)."""
        if self._relist is None:
            raise UserError("this list was not loaded from an MCP server; there is nothing to refresh")
        if self._shared is not None:
            self._shared.check_open()
        if not force and self._fresh_until is not None and time.monotonic() < self._fresh_until:
            return ToolChanges(), ToolListEdit()
        listing = await self._relist()
        old, new = self._definitions, listing.definitions
        built = {tool.name: tool for tool in listing.tools}
        changes = ToolChanges(
            added=tuple(name for name in new if name not in old),
            removed=tuple(name for name in old if name not in new),
            changed=tuple(name for name in new if name in old and new[name] != old[name]),
        )
        edit = ToolListEdit(
            replaced={id(self._own[name]): None for name in changes.removed}
            | {id(self._own[name]): built[name] for name in changes.changed},
            added=[built[name] for name in changes.added],
        )
        updated = edit.apply(self)
        ensure_unique_names(updated)
        self[:] = updated
        kept = {name: self._own[name] for name in new if name in old and name not in changes.changed}
        self._absorb(listing, {**built, **kept})
        return changes, edit

    def _absorb(self, listing: Listing, own: Mapping[str, AgentTool] | None = None) -> None:
        """Remember `listing` as the last one; `own`: the list's tools by name (default: the listing's)."""
        self._own = dict(own) if own is not None else {tool.name: tool for tool in listing.tools}
        self._definitions = dict(listing.definitions)
        self._fresh_until = listing.fresh_until
        self._app_tools = list(listing.app_tools)
        self._offers = listing.offers or self._offers

    @property
    def failures(self) -> Mapping[str, Exception]:
        """The servers that failed to load, by name, and why (``on_error="skip"`` of a config; empty
        otherwise). `refresh()` tries them again."""
        return MappingProxyType({})

    # -- what the server offers besides tools (docs/resources-prompts-instructions.md) --------------------

    def _server_offers(self) -> ServerOffers:
        if self._offers is None:
            raise UserError("this list was not loaded from an MCP server; it has no resources or prompts")
        if self._shared is not None:
            self._shared.check_open()
        return self._offers

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions`` (None: it sent none). Untrusted text, written by the server."""
        return self._offers.instructions if self._offers is not None else None

    async def list_resources(self) -> list[mcp_types.Resource]:
        """The server's resources (every page), each a fresh session or one request, like a call."""
        return await self._server_offers().list_resources()

    async def list_resource_templates(self) -> list[mcp_types.ResourceTemplate]:
        """The server's resource templates (every page)."""
        return await self._server_offers().list_resource_templates()

    async def read_resource(self, uri: str) -> list[Content]:
        """A resource's contents as content blocks: text, images as `ImageContent`, other binaries as
        size-stamped text; bounded like a call (`timeout`, `max_duration`, `max_response_bytes`)."""
        return await self._server_offers().read_resource(uri)

    async def list_prompts(self) -> list[mcp_types.Prompt]:
        """The server's prompts (every page)."""
        return await self._server_offers().list_prompts()

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> list[PromptMessage]:
        """A prompt's messages, each with its role and content blocks."""
        return await self._server_offers().get_prompt(name, arguments)

    @property
    def closed(self) -> bool:
        """True once `aclose()` ran (tools loaded from a live connection: never, the connection decides)."""
        return self._shared is not None and self._shared.closed

    async def aclose(self) -> None:
        """Stop what the list runs beside its calls and wait for it (its keepers: sessions still closing,
        the spare server, the shared HTTP client); later calls raise `UserError`.

        Idempotent. Tools loaded from a live connection do not own it: closing their list does nothing.
        """
        if self._shared is not None:
            await self._shared.aclose()

    async def __aenter__(self) -> MCPToolList:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        state = ", closed" if self.closed else ""
        return f"MCPToolList({list.__repr__(self)}{state})"

    def __getstate__(self) -> dict[str, Any]:
        """The list travels with its tools, its server, policies and last listing; a listing's freshness
        is a time of this process's clock, so the copy asks again at its first refresh."""
        return {**self.__dict__, "_fresh_until": None}
