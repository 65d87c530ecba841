"""The provider-neutral transcript: user messages, assistant messages with tool calls, tool results.

Providers translate these to and from their wire format; the agent loop only ever sees these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..tools import AgentToolResult, Content, ImageContent, TextContent

__all__ = [
    "AssistantMessage",
    "Message",
    "RedactedThinking",
    "Thinking",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
]


def _join_text(content: list[Content] | list[TextContent]) -> str:
    return "\n".join(block.text for block in content if isinstance(block, TextContent))


@dataclass
class UserMessage:
    """What the user said: text and images."""

    content: list[Content]
    role: Literal["user"] = "user"

    @classmethod
    def of(cls, text: str) -> UserMessage:
        """A user message with one text block."""
        return cls(content=[TextContent(text)])

    @property
    def text(self) -> str:
        """The text blocks joined by newlines."""
        return _join_text(self.content)


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for.

    `name` is the name as the model sent it (a tool's `api_name`); `arguments` the decoded JSON object.
    `arguments_error` is set when the model sent arguments that are not a JSON object: the agent answers
    such a call with an error result instead of running it.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    arguments_error: str | None = None


@dataclass(frozen=True)
class Usage:
    """Tokens a response consumed, as the provider reported them (0 where it reported nothing).

    `cache_read_tokens` / `cache_write_tokens` are prompt-cache reads and writes (Anthropic's
    ``cache_read_input_tokens`` / ``cache_creation_input_tokens``, OpenAI's ``cached_tokens``). Usages add up
    with ``+``.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


@dataclass(frozen=True)
class Thinking:
    """A thinking block of the model (Anthropic extended thinking), kept to be sent back unchanged.

    `signature` is what the API signed the block with; a block whose stream stopped before its signature
    arrived has none and is not sent back.
    """

    thinking: str
    signature: str | None = None
    type: Literal["thinking"] = "thinking"


@dataclass(frozen=True)
class RedactedThinking:
    """A thinking block the API sent encrypted (`data`), kept to be sent back unchanged."""

    data: str
    type: Literal["redacted_thinking"] = "redacted_thinking"


ABORTED = "aborted"
"""The `stop_reason` of a response that was stopped mid-stream (`Agent.abort`, or `prompt` cancelled)."""


@dataclass
class AssistantMessage:
    """What the model answered: its thinking, text blocks and the tool calls it wants run.

    `stop_reason` is the provider's own word for why it stopped (``end_turn``, ``tool_use``, ``stop``,
    ``tool_calls``, ...), ``"aborted"`` for a response stopped mid-stream and ``"error"`` for one a failure
    ended; `model` the model id the provider reported; `usage` the tokens the API reported for it.
    While a response streams, the agent's events carry this message as it grows.
    """

    content: list[TextContent] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    stop_reason: str | None = None
    model: str | None = None
    usage: Usage | None = None
    thinking: list[Thinking | RedactedThinking] = field(default_factory=list)
    role: Literal["assistant"] = "assistant"

    @property
    def text(self) -> str:
        """The text blocks joined by newlines."""
        return _join_text(self.content)

    @property
    def aborted(self) -> bool:
        """Whether the response was stopped mid-stream (`Agent.abort`, or its `prompt` cancelled)."""
        return self.stop_reason == ABORTED


@dataclass
class ToolResultMessage:
    """The result of one tool call, as the model will read it (`details` is never sent)."""

    tool_call_id: str
    tool_name: str
    content: list[Content] = field(default_factory=list)
    is_error: bool = False
    details: dict[str, Any] = field(default_factory=dict)
    role: Literal["tool"] = "tool"

    @classmethod
    def from_result(cls, call: ToolCall, result: AgentToolResult) -> ToolResultMessage:
        """The message answering `call` with `result`."""
        return cls(
            tool_call_id=call.id,
            tool_name=call.name,
            content=list(result.content),
            is_error=result.is_error,
            details=dict(result.details),
        )

    @property
    def text(self) -> str:
        """The text blocks joined by newlines (images left out)."""
        return _join_text(self.content)

    @property
    def images(self) -> list[ImageContent]:
        """The image blocks."""
        return [block for block in self.content if isinstance(block, ImageContent)]


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage
