"""The typed events an `Agent` sends to its listeners, in the order they happen.

```
AgentStart
  TurnStart(1)
    MessageStart/MessageEnd(UserMessage)
    MessageStart MessageUpdate* MessageEnd(AssistantMessage)             (one update per streamed delta)
    ToolExecutionStart ... ToolExecutionUpdate* ToolInputRequested* ... ToolExecutionEnd   (per call; overlap)
    MessageStart/MessageEnd(ToolResultMessage)                          (per call, in call order)
  TurnEnd(1)
  TurnStart(2) ...
AgentEnd
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..providers import AssistantMessage, Delta, Message, ToolResultMessage, Usage
from ..tools import AgentToolResult, ToolUpdate

__all__ = [
    "AgentEnd",
    "AgentEvent",
    "AgentStart",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "ToolInputRequested",
    "TurnEnd",
    "TurnStart",
]


@dataclass(frozen=True)
class AgentStart:
    """`prompt` began."""

    type: Literal["agent_start"] = "agent_start"


@dataclass(frozen=True)
class AgentEnd:
    """`prompt` finished: `messages` are the ones this prompt added; `error` is set when it failed,
    `aborted` when `Agent.abort` stopped it; `usage` sums the usage of this prompt's responses."""

    messages: list[Message] = field(default_factory=list)
    error: BaseException | None = None
    usage: Usage = field(default_factory=Usage)
    aborted: bool = False
    type: Literal["agent_end"] = "agent_end"


@dataclass(frozen=True)
class TurnStart:
    """A turn (one model response and the tool calls it asked for) began; turns count from 1."""

    turn: int
    type: Literal["turn_start"] = "turn_start"


@dataclass(frozen=True)
class TurnEnd:
    """A turn ended: the assistant's `message` and the `tool_results` answering its calls."""

    turn: int
    message: AssistantMessage
    tool_results: list[ToolResultMessage] = field(default_factory=list)
    type: Literal["turn_end"] = "turn_end"


@dataclass(frozen=True)
class MessageStart:
    """A message began: a user or tool result message about to join the transcript, or a response about to
    stream (`message` is then the live `AssistantMessage`, empty for now, that grows with each update)."""

    message: Message
    type: Literal["message_start"] = "message_start"


@dataclass(frozen=True)
class MessageUpdate:
    """A response streamed one more `delta`; `message` is the response so far (the same live object).

    Tool calls join ``message.tool_calls`` once they finished forming; before that their name comes in a
    `ToolCallStart` delta and their arguments in `ToolCallArgumentsDelta` fragments.
    """

    delta: Delta
    message: AssistantMessage
    type: Literal["message_update"] = "message_update"


@dataclass(frozen=True)
class MessageEnd:
    """A message joined the transcript."""

    message: Message
    type: Literal["message_end"] = "message_end"


@dataclass(frozen=True)
class ToolExecutionStart:
    """A tool call began: `tool_name` as the model sent it, `arguments` as the model sent them."""

    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]
    type: Literal["tool_execution_start"] = "tool_execution_start"


@dataclass(frozen=True)
class ToolExecutionUpdate:
    """A running tool reported progress through its `on_update` callback."""

    tool_call_id: str
    tool_name: str
    update: ToolUpdate
    type: Literal["tool_execution_update"] = "tool_execution_update"


@dataclass(frozen=True)
class ToolInputRequested:
    """A running MCP tool's server asked for input (elicitation); `message` is its question. The agent's
    ``elicitation_callback`` answers it."""

    tool_call_id: str
    tool_name: str
    message: str
    type: Literal["tool_input_requested"] = "tool_input_requested"


@dataclass(frozen=True)
class ToolExecutionEnd:
    """A tool call finished with `result` (an error result if unknown, invalid, blocked, or failed)."""

    tool_call_id: str
    tool_name: str
    result: AgentToolResult
    type: Literal["tool_execution_end"] = "tool_execution_end"

    @property
    def is_error(self) -> bool:
        """Whether the result is an error result."""
        return self.result.is_error


AgentEvent: TypeAlias = (
    AgentStart
    | AgentEnd
    | TurnStart
    | TurnEnd
    | MessageStart
    | MessageUpdate
    | MessageEnd
    | ToolExecutionStart
    | ToolExecutionUpdate
    | ToolInputRequested
    | ToolExecutionEnd
)
