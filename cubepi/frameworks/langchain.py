"""cubepi tools as LangChain tools: `to_langchain(tool)` gives a `StructuredTool` (extra ``langchain``).

`args_schema` is the tool's Pydantic model, so LangChain and the chat models it binds see the server's
schema. The arguments a model sends reach `AgentTool.execute` as sent (validated there, exactly the
fields the model set, no defaults injected); LangChain's own re-validation, which would add defaults,
is skipped. An `is_error` result raises `ToolException`, which the tool turns into a ``status="error"``
`ToolMessage` the model reads; images become standard image content blocks; the whole
`AgentToolResult` is the message's `artifact`.

Progress reaches LangChain's callbacks: each `ToolUpdate` of a call (MCP progress, task status) is a
custom event named `PROGRESS_EVENT` (``"cubepi.progress"``) on the tool's run, the event
`adispatch_custom_event` would send, so ``astream_events`` yields it as ``on_custom_event`` and a
callback handler's ``on_custom_event`` receives it. Without a callback handler nothing is relayed.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ._extras import require

if TYPE_CHECKING:
    from langchain_core.callbacks import AsyncCallbackManager, CallbackManager
    from langchain_core.tools import StructuredTool

    from ..tools import AgentTool, AgentToolResult, ToolUpdate, UpdateCallback

__all__ = ["PROGRESS_EVENT", "to_langchain"]

PROGRESS_EVENT = "cubepi.progress"
"""The name of the custom event carrying a call's progress: data ``{"progress", "total", "message"}``."""


def to_langchain(tool: AgentTool) -> StructuredTool:
    """`tool` as a LangChain `StructuredTool`, invocable with ``ainvoke`` and ``invoke`` (sync works with
    or without a running event loop). A tool that needs approval is refused: LangChain has no approval
    step, so hand over ``tool.replace(needs_approval=False)`` if your graph asks the user itself."""
    require("langchain_core", "langchain")
    if tool.needs_approval is not False:
        raise UserError(
            f"tool {tool.name!r} needs approval, which LangChain tools cannot ask for; approve calls in "
            "your graph and pass tool.replace(needs_approval=False)"
        )

    # LangChain passes the tool run's child callback manager to a function with a `callbacks` parameter.
    async def arun(arguments: Any, callbacks: Any = None) -> tuple[Any, AgentToolResult]:
        return _message(await tool.execute(arguments, on_update=_relay(callbacks)))

    def run(arguments: Any, callbacks: Any = None) -> tuple[Any, AgentToolResult]:
        return _message(tool.execute_sync(arguments, on_update=_relay(callbacks)))

    return _tool_class()(
        name=tool.api_name,
        description=tool.description or tool.name,
        args_schema=tool.parameters,
        func=run,
        coroutine=arun,
        response_format="content_and_artifact",
        handle_tool_error=True,
    )


def _relay(callbacks: CallbackManager | AsyncCallbackManager | None) -> UpdateCallback | None:
    """`on_update` sending each update as a `PROGRESS_EVENT` on the tool's run, or None when no handler
    listens (the call then relays nothing)."""
    if callbacks is None or not callbacks.handlers:
        return None
    run_id = callbacks.parent_run_id  # the tool's run, as `adispatch_custom_event` addresses it

    def relay(update: ToolUpdate) -> Awaitable[None] | None:
        data = {"progress": update.progress, "total": update.total, "message": update.message}
        return callbacks.on_custom_event(PROGRESS_EVENT, data, run_id=run_id)

    return relay


@functools.cache
def _tool_class() -> type[StructuredTool]:
    from langchain_core.tools import StructuredTool

    class CubepiStructuredTool(StructuredTool):
        """A `StructuredTool` that passes the model's arguments, untouched, to `AgentTool.execute`."""

        def _to_args_and_kwargs(
            self, tool_input: str | dict[str, Any], tool_call_id: str | None
        ) -> tuple[tuple[Any, ...], dict[str, Any]]:
            return (), {"arguments": tool_input}

    return CubepiStructuredTool


def _message(result: AgentToolResult) -> tuple[Any, AgentToolResult]:
    """(content for the `ToolMessage`, the result as its artifact); raises `ToolException` on is_error."""
    from langchain_core.messages.content import create_image_block, create_text_block
    from langchain_core.tools import ToolException

    if result.is_error:
        raise ToolException(result.text)
    if not any(block.type == "image" for block in result.content):
        return result.text, result
    blocks = [
        create_text_block(block.text)
        if block.type == "text"
        else create_image_block(base64=block.data, mime_type=block.mime_type)
        for block in result.content
    ]
    return blocks, result
