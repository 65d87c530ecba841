"""What hooks and the approval callback receive and may return."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from pydantic import BaseModel

from ..providers import AssistantMessage, ToolCall
from ..tools import AgentTool, AgentToolResult

__all__ = [
    "AfterToolCall",
    "ApprovalCallback",
    "BeforeToolCall",
    "BlockCall",
    "ReplaceArguments",
    "ToolCallContext",
]


@dataclass(frozen=True)
class ToolCallContext:
    """One tool call on its way through the agent.

    `tool_call` is what the model sent; `tool` the tool it resolved to; `arguments` the arguments that
    will be (or were) validated, after any `ReplaceArguments`; `params` the validated arguments (``None``
    in `before_tool_call`, which runs before validation); `assistant_message` the message that asked.
    """

    tool_call: ToolCall
    tool: AgentTool
    arguments: Mapping[str, Any]
    assistant_message: AssistantMessage
    params: BaseModel | None = None


@dataclass(frozen=True)
class BlockCall:
    """Returned by `before_tool_call`: do not run the tool; the model reads `reason` as an error result."""

    reason: str


@dataclass(frozen=True)
class ReplaceArguments:
    """Returned by `before_tool_call`: validate and run with these arguments instead (coercion, defaults)."""

    arguments: Mapping[str, Any] | BaseModel


BeforeToolCall: TypeAlias = Callable[
    [ToolCallContext], "BlockCall | ReplaceArguments | Awaitable[BlockCall | ReplaceArguments | None] | None"
]
"""``before_tool_call(ctx)``: return `BlockCall`, `ReplaceArguments`, or ``None`` to go ahead."""

AfterToolCall: TypeAlias = Callable[
    [ToolCallContext, AgentToolResult], "AgentToolResult | Awaitable[AgentToolResult | None] | None"
]
"""``after_tool_call(ctx, result)``: return a new result to replace it, or ``None`` to keep it."""

ApprovalCallback: TypeAlias = Callable[[ToolCallContext], "bool | Awaitable[bool]"]
"""``approve(ctx)`` for tools whose `needs_approval` applies: ``True`` runs the call, ``False`` refuses it."""
