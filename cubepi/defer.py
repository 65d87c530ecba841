"""Deferred catalogs: hand a model two tools instead of sixty.

`defer_tools(tools)` hides a large catalog behind `search_tools` (keyword search over names and
descriptions, answering each hit's parameters schema) and `call_tool` (invoke a hidden tool by its exact name,
validated by that tool's own model, with its policies intact). Works for any `AgentTool`, MCP or hand-written.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

from .errors import UserError
from .tools import AgentTool, AgentToolResult, TextContent, UpdateCallback, ensure_unique_names

__all__ = ["DeferredCatalog", "defer_tools"]

SEARCH_TOOL = "search_tools"
CALL_TOOL = "call_tool"
_WORD = re.compile(r"[a-z0-9]+")


class DeferredCatalog(NamedTuple):
    """What `defer_tools` returns: the two tools to give the model, and a line for its system prompt."""

    search_tools: AgentTool
    call_tool: AgentTool
    system_prompt: str

    @property
    def tools(self) -> list[AgentTool]:
        """`[search_tools, call_tool]`, ready to concatenate with direct tools."""
        return [self.search_tools, self.call_tool]

    def __iter__(self) -> Iterator[Any]:
        return iter((self.search_tools, self.call_tool, self.system_prompt))


class SearchArgs(BaseModel):
    query: str = Field(description="Words to look for in tool names and descriptions.")
    limit: int = Field(default=5, ge=1, le=50, description="The most tools to return.")


class CallArgs(BaseModel):
    name: str = Field(description="The exact name of the tool, as search_tools returned it.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="The tool arguments, matching the schema search_tools gave."
    )


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower().replace("_", " ")))


def _score(query: set[str], tool: AgentTool, name_words: set[str], desc_words: set[str]) -> int:
    score = 0
    for word in query:
        if word == tool.name.lower():
            score += 10
        if word in name_words:
            score += 3
        elif any(word in part for part in name_words):
            score += 2
        if word in desc_words:
            score += 1
    return score


def defer_tools(tools: Iterable[AgentTool], *, direct: Sequence[AgentTool] = ()) -> DeferredCatalog:
    """Put `tools` behind `search_tools` and `call_tool`.

    `direct` are the tools you will give the model alongside the two; any name shared between them, the
    deferred tools and the two new tools raises `UserError` naming both origins.
    """
    catalog = list(tools)
    if not catalog:
        raise UserError("defer_tools needs at least one tool to defer")
    ensure_unique_names(catalog)
    by_name = {t.name: t for t in catalog}
    index = [(t, _words(t.name), _words(t.description or "")) for t in catalog]

    async def search(params: BaseModel, on_update: UpdateCallback | None) -> AgentToolResult:
        assert isinstance(params, SearchArgs)
        query = _words(params.query)
        ranked = sorted(
            ((score, pos, t) for pos, (t, nw, dw) in enumerate(index) if (score := _score(query, t, nw, dw))),
            key=lambda item: (-item[0], item[1]),
        )
        hits = [
            {"name": t.name, "description": t.description, "parameters": t.json_schema()}
            for _, _, t in ranked[: params.limit]
        ]
        if not hits:
            text = f"No tool matches {params.query!r}. Tools: {', '.join(by_name)}."
            return AgentToolResult(content=[TextContent(text)], details={"matches": []})
        return AgentToolResult(
            content=[TextContent(json.dumps(hits, ensure_ascii=False))],
            details={"matches": [hit["name"] for hit in hits]},
        )

    async def call(params: BaseModel, on_update: UpdateCallback | None) -> AgentToolResult:
        assert isinstance(params, CallArgs)
        target = by_name.get(params.name)
        if target is None:
            close = difflib.get_close_matches(params.name, list(by_name), n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else " Use search_tools to find one."
            return AgentToolResult.error(f"No deferred tool is named {params.name!r}.{hint}")
        return await target.execute(params.arguments, on_update=on_update)

    def call_needs_approval(params: BaseModel) -> bool:
        assert isinstance(params, CallArgs)
        target = by_name.get(params.name)
        if target is None:
            return False
        try:
            return target.requires_approval(target.validate(params.arguments))
        except Exception:
            return bool(target.needs_approval)

    names = ", ".join(by_name)
    search_tool = AgentTool(
        name=SEARCH_TOOL,
        description=(
            "Search the deferred tools by keywords; returns each match's name, description and "
            "parameters schema. Then run one with call_tool."
        ),
        parameters=SearchArgs,
        run=search,
        origin="cubepi.defer_tools",
    )
    call_tool = AgentTool(
        name=CALL_TOOL,
        description="Run a deferred tool by its exact name with arguments matching its parameters schema.",
        parameters=CallArgs,
        run=call,
        needs_approval=call_needs_approval,
        origin="cubepi.defer_tools",
    )
    ensure_unique_names([search_tool, call_tool, *catalog, *direct])
    prompt = f"More tools are available through call_tool (find their parameters with search_tools): {names}."
    return DeferredCatalog(search_tool, call_tool, prompt)
