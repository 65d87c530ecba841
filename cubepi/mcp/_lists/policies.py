"""Policies the loaders apply to each tool: naming, selection, retries, output, approval, concurrency.

Every policy is a keyword argument of `load_mcp_tools`, `load_mcp_tools_stdio` and `load_mcp_tools_http`.
`Policies` is data: `Policies.create(...)` checks them all before anything connects; the loader selects
and names the listed tools with it (`select`); each call applies the rest in one place (`tool.MCPRun`): the
concurrency limit, `retry_count` retries, and `render` (the renderer, then `max_output_chars`, whose
cut text `page_results` keeps for the list's ``read_more`` tool: `result_pages`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pydantic import BaseModel

from ...errors import UserError
from ...tools import AgentToolResult, Content, ImageContent, TextContent
from .._content import blob_text, render_mcp_content
from .hidden_arguments import check_hidden
from .result_pages import READ_MORE, PageStore, check_page_results, read_on, register

if TYPE_CHECKING:
    from mcp import types as mcp_types

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "ApprovalSetting",
    "Policies",
    "ResultRenderer",
    "RetrySetting",
    "is_destructive",
    "is_retry_safe",
]

PREFIX_SEPARATOR = "__"
DEFAULT_MAX_CONCURRENCY = 8

# `retries`: a count for tools whose annotations mark them safe to repeat; a count per raw tool name
# (annotations ignored); or a function of (raw name, annotations) returning the count.
RetrySetting: TypeAlias = "int | Mapping[str, int] | Callable[[str, Mapping[str, Any]], int]"
# `needs_approval`: every call, none, a predicate on the validated arguments, or "destructive".
ApprovalSetting: TypeAlias = "bool | Callable[[BaseModel], bool] | Literal['destructive']"
# `result_renderer`: the raw `mcp.types.CallToolResult` -> what the model sees.
ResultRenderer: TypeAlias = "Callable[[mcp_types.CallToolResult], AgentToolResult | Sequence[Content] | str]"


def _hint(annotations: Mapping[str, Any] | None, key: str) -> bool | None:
    value = (annotations or {}).get(key)
    return value if isinstance(value, bool) else None


def is_retry_safe(annotations: Mapping[str, Any] | None) -> bool:
    """Whether a tool's annotations say repeating a call is harmless (`readOnlyHint` or `idempotentHint`)."""
    return bool(_hint(annotations, "readOnlyHint") or _hint(annotations, "idempotentHint"))


def is_destructive(annotations: Mapping[str, Any] | None) -> bool:
    """What ``needs_approval="destructive"`` asks approval for, with the MCP specification's defaults.

    A tool is destructive when `destructiveHint` is true, or when it is not read-only (`readOnlyHint`
    defaults to false) and does not say it is only additive (`destructiveHint` defaults to true). So a
    tool without annotations needs approval, and one marked ``readOnlyHint: true`` does not.
    """
    destructive = _hint(annotations, "destructiveHint")
    if destructive is True:
        return True
    return not _hint(annotations, "readOnlyHint") and destructive is not False


def _names(option: str, value: Any) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise UserError(f"{option} takes a list of tool names, got {value!r}")
    names = list(value)
    if not all(isinstance(name, str) for name in names):
        raise UserError(f"{option} takes a list of tool names (strings), got {names!r}")
    return frozenset(names)


def _count(option: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UserError(f"{option} must be a whole number >= 0, got {value!r}")
    return value


@dataclass(frozen=True)
class Policies:
    """The checked policies of one loaded list (see `create` for what each means)."""

    prefix: str | None = None
    include: frozenset[str] | None = None
    exclude: frozenset[str] | None = None
    retries: RetrySetting = 0
    max_output_chars: int | None = None
    result_renderer: ResultRenderer | None = None
    needs_approval: ApprovalSetting = False
    max_concurrency: int | None = DEFAULT_MAX_CONCURRENCY
    hidden_arguments: Mapping[str, Any] | None = None  # `hidden_arguments`: parameters the application sets
    pages: PageStore | None = field(default=None, compare=False, repr=False)  # `page_results`: `result_pages`

    @classmethod
    def create(
        cls,
        *,
        prefix: str | None = None,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] | None = None,
        retries: RetrySetting = 0,
        max_output_chars: int | None = None,
        result_renderer: ResultRenderer | None = None,
        needs_approval: ApprovalSetting = False,
        max_concurrency: int | None = DEFAULT_MAX_CONCURRENCY,
        hidden_arguments: Mapping[str, Any] | None = None,
        page_results: bool | int = False,
    ) -> Policies:
        """Check the loader's policy arguments; a wrong one raises `UserError` before anything connects."""
        if prefix is not None and (not isinstance(prefix, str) or not prefix):
            raise UserError(f"prefix must be a non-empty string (tools become prefix__name), got {prefix!r}")
        if isinstance(retries, Mapping):
            retries = {str(name): _count(f"retries[{name!r}]", count) for name, count in retries.items()}
        elif not callable(retries):
            _count("retries", retries)
        if max_output_chars is not None:
            if isinstance(max_output_chars, bool) or not isinstance(max_output_chars, int):
                raise UserError(f"max_output_chars must be a positive int or None, got {max_output_chars!r}")
            if max_output_chars < 1:
                raise UserError(f"max_output_chars must be a positive int or None, got {max_output_chars!r}")
        if result_renderer is not None and not callable(result_renderer):
            raise UserError("result_renderer must be a function of the raw CallToolResult")
        if not (
            isinstance(needs_approval, bool) or callable(needs_approval) or needs_approval == "destructive"
        ):
            raise UserError(
                'needs_approval must be True, False, "destructive" or a predicate on the arguments, '
                f"got {needs_approval!r}"
            )
        if max_concurrency is not None and (
            isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1
        ):
            raise UserError(f"max_concurrency must be a positive int or None, got {max_concurrency!r}")
        bound = check_page_results(page_results, max_output_chars)
        return cls(
            prefix=prefix,
            include=_names("include", include),
            exclude=_names("exclude", exclude),
            retries=retries,
            max_output_chars=max_output_chars,
            result_renderer=result_renderer,
            needs_approval=needs_approval,
            max_concurrency=max_concurrency,
            hidden_arguments=check_hidden(hidden_arguments),
            pages=None if bound is None else register(PageStore(bound)),
        )

    # -- selecting and naming -------------------------------------------------------------------------------

    def select(self, specs: Iterable[Mapping[str, Any]], origin: str) -> list[tuple[str, Mapping[str, Any]]]:
        """The listed tools to build, each with its name for the model (the prefix applied), in order.

        Raises `UserError` when `include`, `exclude` or `retries` names a tool the server does not offer.
        """
        listed = list(specs)
        offered = [str(spec["name"]) for spec in listed]
        self._check_known(offered, origin)
        chosen = [
            spec
            for spec in listed
            if (self.include is None or spec["name"] in self.include)
            and (self.exclude is None or spec["name"] not in self.exclude)
        ]
        return [(self.name_of(str(spec["name"])), spec) for spec in chosen]

    def name_of(self, raw: str) -> str:
        return f"{self.prefix}{PREFIX_SEPARATOR}{raw}" if self.prefix else raw

    def offered_only(self, offered: Iterable[str]) -> Policies:
        """These policies with the tool names they give cut down to those the server offers now (a
        refresh: a tool the server dropped is no longer an error)."""
        names = frozenset(offered)
        retries = self.retries
        if isinstance(retries, Mapping):
            retries = {name: count for name, count in retries.items() if name in names}
        return dataclasses.replace(
            self,
            include=None if self.include is None else self.include & names,
            exclude=None if self.exclude is None else self.exclude & names,
            retries=retries,
        )

    def _check_known(self, offered: Sequence[str], origin: str) -> None:
        checks: list[tuple[str, Iterable[str]]] = [
            ("include", self.include or ()),
            ("exclude", self.exclude or ()),
        ]
        if isinstance(self.retries, Mapping):
            checks.append(("retries", self.retries))
        known = set(offered)
        for option, names in checks:
            unknown = sorted(set(names) - known)
            if unknown:
                listing = ", ".join(sorted(known)) or "(no tools)"
                raise UserError(
                    f"{option} names tool(s) {', '.join(map(repr, unknown))} that {origin} does not offer; "
                    f"it offers: {listing} (use the server's names, without the prefix)"
                )

    def retry_count(self, raw: str, annotations: Mapping[str, Any] | None) -> int:
        setting = self.retries
        if isinstance(setting, Mapping):
            return int(setting.get(raw, 0))
        if callable(setting):
            return _count(f"retries({raw!r}, ...)", setting(raw, dict(annotations or {})))
        return setting if is_retry_safe(annotations) else 0

    def approval(self, annotations: Mapping[str, Any] | None) -> bool | Callable[[BaseModel], bool]:
        if self.needs_approval == "destructive":
            return is_destructive(annotations)
        return self.needs_approval

    # -- rendering -----------------------------------------------------------------------------------------

    def render(self, raw: Any) -> AgentToolResult:
        """The raw `CallToolResult` as the model sees it: `result_renderer`, then `max_output_chars` (the
        cut text kept for ``read_more`` under `page_results`)."""
        if self.result_renderer is None:
            if self.max_output_chars is None:
                return render_mcp_content(raw)
            if self.pages is None:  # nothing to keep: the text is cut before it is rendered
                raw, cut = _clip_raw(raw, self.max_output_chars)
                result = render_mcp_content(raw)
                return _clip_result(result, self.max_output_chars, already_cut=cut)
            result = render_mcp_content(raw)
        else:
            result = _as_result(self.result_renderer(raw), raw)
        if self.max_output_chars is not None:
            keep = self._keep if self.pages else None
            result = _clip_result(result, self.max_output_chars, already_cut=None, keep=keep)
        return result

    def _keep(self, text: str, kept: int) -> tuple[str | None, str]:
        """Keep the cut part of `text` (the result's whole text, `kept` characters shown) for
        ``read_more``: its reference and the line saying how to read on."""
        assert self.pages is not None
        ref = self.pages.keep(text[kept:], kept)
        if ref is None:
            bound = self.pages.bound
            return None, f"\n[the rest is too long to keep for reading on (page_results={bound:,})]"
        return ref, "\n" + read_on(self.name_of(READ_MORE), ref, kept, len(text))


def _as_result(rendered: Any, raw: Any) -> AgentToolResult:
    if isinstance(rendered, AgentToolResult):
        return rendered
    if isinstance(rendered, str):
        content: list[Content] = [TextContent(rendered)]
    elif isinstance(rendered, Sequence) and all(isinstance(b, (TextContent, ImageContent)) for b in rendered):
        content = list(rendered)
    else:
        kind = type(rendered).__name__
        raise UserError(
            f"result_renderer must return an AgentToolResult, a list of TextContent/ImageContent or a str; "
            f"got {kind}"
        )
    if isinstance(raw, Mapping):
        is_error, structured = bool(raw.get("isError")), raw.get("structuredContent")
    else:  # the SDK's CallToolResult (snake_case in mcp 2.x)
        is_error, structured = bool(getattr(raw, "is_error", False)), getattr(raw, "structured_content", None)
    details = {"structuredContent": structured} if structured is not None else {}
    return AgentToolResult(content=content, details=details, is_error=is_error)


@dataclass
class _Cut:
    """How much text `max_output_chars` kept and cut."""

    limit: int
    total: int = 0
    kept: int = 0

    @property
    def cut(self) -> int:
        return self.total - self.kept

    def marker(self) -> str:
        return (
            f"\n[truncated: {self.cut:,} of {self.total:,} characters cut (max_output_chars={self.limit:,})]"
        )


def _clip_raw(raw: Any, limit: int) -> tuple[Any, _Cut]:
    """Cut the text blocks of an SDK `CallToolResult` before rendering, so the text is never copied whole."""
    cut = _Cut(limit)
    blocks = getattr(raw, "content", None)
    if not isinstance(blocks, list) or not hasattr(raw, "model_copy"):
        return raw, cut  # a dict: clipped after rendering
    clipped: list[Any] = []
    for block in blocks:
        text = getattr(block, "text", None)
        resource = getattr(block, "resource", None)
        if resource is not None and not isinstance(getattr(resource, "text", None), str):
            block, resource = _as_text_resource(block, resource)
        holder, inner = (
            (block, text) if isinstance(text, str) else (resource, getattr(resource, "text", None))
        )
        if not isinstance(inner, str) or holder is None:
            clipped.append(block)
            continue
        room = max(limit - cut.kept, 0)
        cut.total += len(inner)
        if len(inner) <= room:
            cut.kept += len(inner)
            clipped.append(block)
            continue
        cut.kept += room
        if room == 0:
            continue  # no room left: the block is dropped, counted in the marker
        short = holder.model_copy(update={"text": inner[:room]})
        clipped.append(short if holder is block else block.model_copy(update={"resource": short}))
    if cut.cut == 0:
        return raw, cut
    return raw.model_copy(update={"content": clipped}), cut


def _as_text_resource(block: Any, resource: Any) -> tuple[Any, Any]:
    """An embedded blob that the rendering would show as text, as the text resource it reads as, so
    its text is cut like any other."""
    text = blob_text(getattr(resource, "blob", None), getattr(resource, "mime_type", None))
    if text is None:
        return block, resource
    from mcp import types

    readable = types.TextResourceContents(
        uri=resource.uri, mime_type=resource.mime_type, text=text, _meta=resource.meta
    )
    return block.model_copy(update={"resource": readable}), readable


def _clip_result(
    result: AgentToolResult,
    limit: int,
    *,
    already_cut: _Cut | None,
    keep: Callable[[str, int], tuple[str | None, str]] | None = None,
) -> AgentToolResult:
    """Cut the text of a rendered result to `limit` characters and say how much went; `keep` (of the
    whole text and the characters shown) keeps the rest and says how to read on."""
    if already_cut is not None and already_cut.cut:
        cut = already_cut  # the raw blocks were clipped; only the marker is left to add
        content = list(result.content)
    else:
        cut = _Cut(limit)
        content = []
        for block in result.content:
            if not isinstance(block, TextContent):
                content.append(block)
                continue
            room = max(limit - cut.kept, 0)
            cut.total += len(block.text)
            cut.kept += min(room, len(block.text))
            if len(block.text) <= room:
                content.append(block)
            elif room:
                content.append(TextContent(block.text[:room]))
        if cut.cut == 0:
            return result
    marker = cut.marker()
    truncated: dict[str, Any] = {"total_chars": cut.total, "kept_chars": cut.kept, "limit": cut.limit}
    if keep is not None:
        whole = "".join(block.text for block in result.content if isinstance(block, TextContent))
        ref, hint = keep(whole, cut.kept)
        marker += hint
        if ref is not None:
            truncated["ref"] = ref
    texts = [i for i, block in enumerate(content) if isinstance(block, TextContent)]
    if texts:
        last = texts[-1]
        block = content[last]
        assert isinstance(block, TextContent)
        content[last] = TextContent(block.text + marker)
    else:
        content.append(TextContent(marker.lstrip("\n")))
    details = dict(result.details)
    details["truncated"] = truncated
    return AgentToolResult(content=content, details=details, is_error=result.is_error)
