"""cubepi tools as pydantic-ai tools: `to_pydantic_ai(tool)` gives a `pydantic_ai.Tool`
(extra ``pydantic-ai``).

The model sees the server's schema (`AgentTool.json_schema`); what it sends is validated by the tool's
own model inside `AgentTool.execute`. Arguments that fail validation raise `ModelRetry`, so pydantic-ai
asks the model to correct them (within the tool's retry budget); any other `is_error` result comes back
as the readable error text, since retrying the same call would not help. Images go back as
`BinaryContent` in the tool result; the whole `AgentToolResult` is the return's `metadata`. A tool that
needs approval raises `ApprovalRequired` until the call is approved (pydantic-ai's deferred tools).

Progress reaches pydantic-ai's event stream: each `ToolUpdate` of a call (MCP progress, task status) is
emitted with `RunContext.emit` as a `ToolProgressEvent` (a `CustomEvent` named ``"cubepi.progress"``,
stamped with the tool call's id and name), which ``event_stream_handler``, ``run_stream_events``, ``iter``
and the UI adapters deliver.
"""

from __future__ import annotations

import base64
import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pydantic

from ._extras import require

if TYPE_CHECKING:
    from pydantic_ai import RunContext, Tool

    from ..tools import AgentTool, AgentToolResult, ToolUpdate

__all__ = ["to_pydantic_ai"]  # and `ToolProgressEvent`, made on first use (module `__getattr__`)


def to_pydantic_ai(tool: AgentTool) -> Tool[Any]:
    """`tool` as a `pydantic_ai.Tool`, for ``Agent(model, tools=[...])``."""
    require("pydantic_ai", "pydantic-ai")
    from pydantic_ai import ApprovalRequired, ModelRetry, Tool

    async def call(ctx: RunContext[Any], **arguments: Any) -> Any:
        if tool.needs_approval is not False and not ctx.tool_call_approved:
            try:
                params = tool.validate(arguments)
            except pydantic.ValidationError:
                params = None  # `execute` below reports it
            if params is not None and tool.requires_approval(params):
                raise ApprovalRequired()
        result = await tool.execute(arguments, on_update=_relay(ctx))
        if result.is_error and "validation_errors" in result.details:
            raise ModelRetry(result.text)
        return _return(result)

    made: Tool[Any] = Tool.from_schema(
        call,
        name=tool.api_name,
        description=tool.description,
        json_schema=tool.json_schema(),
        takes_ctx=True,
    )
    return made


def _relay(ctx: RunContext[Any]) -> Callable[[ToolUpdate], Awaitable[None]]:
    """`on_update` emitting each update into the run's event stream; a context outside a run (no stream to
    emit into) drops them."""
    from pydantic_ai.exceptions import UserError

    event_type = _event_type()

    async def relay(update: ToolUpdate) -> None:
        with contextlib.suppress(UserError):  # no run, no stream
            await ctx.emit(event_type(progress=update.progress, total=update.total, message=update.message))

    return relay


@functools.cache
def _event_type() -> type[Any]:
    """`ToolProgressEvent`, made on first use so that importing this module does not need pydantic-ai."""
    from dataclasses import dataclass

    from pydantic_ai import CustomEvent

    @dataclass(kw_only=True, repr=False)
    class ToolProgressEvent(CustomEvent, name="cubepi.progress"):
        """A cubepi tool's progress (`cubepi.ToolUpdate`) in a pydantic-ai run's event stream."""

        progress: float | None = None
        total: float | None = None
        message: str | None = None

    ToolProgressEvent.__module__ = __name__
    ToolProgressEvent.__qualname__ = "ToolProgressEvent"  # pickles by the module attribute
    return ToolProgressEvent


def __getattr__(name: str) -> Any:
    if name == "ToolProgressEvent":
        require("pydantic_ai", "pydantic-ai")
        return _event_type()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _return(result: AgentToolResult) -> Any:
    """What the model reads: the text, with images as `BinaryContent` (the result kept as metadata)."""
    from pydantic_ai import BinaryContent, ToolReturn

    if result.is_error or not any(block.type == "image" for block in result.content):
        return ToolReturn(return_value=result.text, metadata=result)
    parts: list[Any] = [
        block.text
        if block.type == "text"
        else BinaryContent(data=base64.b64decode(block.data), media_type=block.mime_type)
        for block in result.content
    ]
    return ToolReturn(return_value=parts, metadata=result)
