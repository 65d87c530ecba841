"""cubepi tools as OpenAI Agents SDK tools: `to_openai_agents(tool)` gives a `FunctionTool`
(extra ``openai-agents``).

The schema is cubepi's strict export (`AgentTool.to_openai(strict=True)`), which the SDK's
`ensure_strict_json_schema` leaves as it is, with ``strict_json_schema=True``. A model in strict mode sends
every property, null for the ones it leaves out; `AgentTool.execute` validates that and drops the nulls the
server's schema does not allow, so the server gets what its schema says. Arguments that are not JSON, or
fail validation, come back as readable error text; images as `ToolOutputImage` data URLs. A tool's
`needs_approval` becomes the SDK's approval policy.

The SDK has no progress mechanism for function tools (no progress stream event, no hook between
``on_tool_start`` and ``on_tool_end``), so a call's `ToolUpdate`s go to the ``on_update`` you pass, with
the SDK's `ToolContext` (your run context, the tool call's id): ``to_openai_agents(on_update=...)``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

import pydantic

from ._extras import require

if TYPE_CHECKING:
    from agents import FunctionTool, RunContextWrapper
    from agents.tool_context import ToolContext

    from ..tools import AgentTool, AgentToolResult, ToolUpdate

__all__ = ["ContextUpdateCallback", "to_openai_agents"]

ContextUpdateCallback: TypeAlias = "Callable[[ToolContext[Any], ToolUpdate], Awaitable[None] | None]"
"""Receives each progress update of a call, with the SDK's `ToolContext` of that call."""


def to_openai_agents(tool: AgentTool, *, on_update: ContextUpdateCallback | None = None) -> FunctionTool:
    """`tool` as an `agents.FunctionTool`, for ``Agent(name=..., tools=[...])``; `on_update(ctx, update)`
    receives each progress update of a call (sync or async), with the call's `ToolContext`."""
    require("agents", "openai-agents")
    from agents import FunctionTool

    async def invoke(ctx: ToolContext[Any], raw: str) -> Any:
        try:
            arguments = json.loads(raw or "{}")
        except ValueError as exc:
            return f"Invalid arguments for tool {tool.name!r}: not JSON ({exc})"
        relay = None if on_update is None else functools.partial(on_update, ctx)
        return _output(await tool.execute(arguments, on_update=relay))

    return FunctionTool(
        name=tool.api_name,
        description=tool.description or "",
        params_json_schema=tool.to_openai(strict=True)["function"]["parameters"],
        on_invoke_tool=invoke,
        strict_json_schema=True,
        needs_approval=_approval(tool),
    )


def _approval(
    tool: AgentTool,
) -> bool | Callable[[RunContextWrapper[Any], dict[str, Any], str], Awaitable[bool]]:
    if isinstance(tool.needs_approval, bool):
        return tool.needs_approval

    async def needs_approval(ctx: RunContextWrapper[Any], arguments: dict[str, Any], call_id: str) -> bool:
        try:
            return tool.requires_approval(tool.validate(arguments))
        except pydantic.ValidationError:
            return False  # refused before it runs: the model reads why

    return needs_approval


def _output(result: AgentToolResult) -> Any:
    """What the model reads: the text, or text and image outputs when there are images."""
    from agents import ToolOutputImage, ToolOutputText

    if result.is_error or not any(block.type == "image" for block in result.content):
        return result.text
    return [
        ToolOutputText(text=block.text)
        if block.type == "text"
        else ToolOutputImage(image_url=f"data:{block.mime_type};base64,{block.data}")
        for block in result.content
    ]
