"""Streamed responses: the typed deltas a provider yields, and the message they build.

A provider's ``stream(request)`` yields these deltas in the order the API sent them; `MessageBuilder` turns
them into the `AssistantMessage` so far. A provider that only completes is streamed as the deltas of its
whole answer (`deltas_of`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from ..tools import TextContent
from ._messages import AssistantMessage, RedactedThinking, Thinking, ToolCall, Usage

__all__ = [
    "Delta",
    "MessageBuilder",
    "RedactedThinkingDelta",
    "StopDelta",
    "TextDelta",
    "ThinkingDelta",
    "ThinkingSignatureDelta",
    "ToolCallArgumentsDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "UsageDelta",
    "deltas_of",
]


@dataclass(frozen=True)
class TextDelta:
    """More text: `text` continues the text block numbered `block` (a new number starts a new block)."""

    text: str
    block: int = 0
    type: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True)
class ThinkingDelta:
    """More thinking: `thinking` continues the thinking block numbered `block`."""

    thinking: str
    block: int = 0
    type: Literal["thinking_delta"] = "thinking_delta"


@dataclass(frozen=True)
class ThinkingSignatureDelta:
    """The signature of the thinking block numbered `block` (it arrives after the block's thinking)."""

    signature: str
    block: int = 0
    type: Literal["thinking_signature"] = "thinking_signature"


@dataclass(frozen=True)
class RedactedThinkingDelta:
    """A whole redacted (encrypted) thinking block."""

    data: str
    type: Literal["redacted_thinking"] = "redacted_thinking"


@dataclass(frozen=True)
class ToolCallStart:
    """The model began a tool call: its `id` and `name`; the arguments follow in fragments."""

    id: str
    name: str
    type: Literal["tool_call_start"] = "tool_call_start"


@dataclass(frozen=True)
class ToolCallArgumentsDelta:
    """A fragment of the JSON text of the arguments of the call `id` (fragments concatenate)."""

    id: str
    arguments: str
    type: Literal["tool_call_arguments"] = "tool_call_arguments"


@dataclass(frozen=True)
class ToolCallEnd:
    """The call finished forming: `call` holds its decoded arguments (or `arguments_error`)."""

    call: ToolCall
    type: Literal["tool_call_end"] = "tool_call_end"


@dataclass(frozen=True)
class UsageDelta:
    """The usage the API reported so far for this response (it replaces any earlier one)."""

    usage: Usage
    type: Literal["usage"] = "usage"


@dataclass(frozen=True)
class StopDelta:
    """The response ended: the provider's `stop_reason` and the `model` it reported."""

    stop_reason: str | None
    model: str | None = None
    type: Literal["stop"] = "stop"


Delta: TypeAlias = (
    TextDelta
    | ThinkingDelta
    | ThinkingSignatureDelta
    | RedactedThinkingDelta
    | ToolCallStart
    | ToolCallArgumentsDelta
    | ToolCallEnd
    | UsageDelta
    | StopDelta
)
"""One piece of a streamed response."""


class MessageBuilder:
    """Applies deltas to one live `AssistantMessage` (`message`): the message so far.

    Tool calls join `message.tool_calls` once they finished forming (`ToolCallEnd`); `forming` holds the
    others, by id, as ``(name, arguments JSON so far)``.
    """

    def __init__(self, model: str | None = None) -> None:
        self.message = AssistantMessage(model=model)
        self.forming: dict[str, tuple[str, str]] = {}
        self._text_blocks: dict[int, int] = {}
        self._thinking_blocks: dict[int, int] = {}

    def apply(self, delta: Delta) -> None:
        """Add `delta` to the message."""
        message = self.message
        if isinstance(delta, TextDelta):
            position = self._text_blocks.get(delta.block)
            if position is None:
                self._text_blocks[delta.block] = len(message.content)
                message.content.append(TextContent(delta.text))
            else:
                message.content[position] = TextContent(message.content[position].text + delta.text)
        elif isinstance(delta, (ThinkingDelta, ThinkingSignatureDelta)):
            position = self._thinking_blocks.get(delta.block)
            if position is None:
                position = self._thinking_blocks[delta.block] = len(message.thinking)
                message.thinking.append(Thinking(""))
            block = message.thinking[position]
            assert isinstance(block, Thinking)
            if isinstance(delta, ThinkingDelta):
                message.thinking[position] = replace(block, thinking=block.thinking + delta.thinking)
            else:
                message.thinking[position] = replace(block, signature=delta.signature)
        elif isinstance(delta, RedactedThinkingDelta):
            message.thinking.append(RedactedThinking(delta.data))
        elif isinstance(delta, ToolCallStart):
            self.forming[delta.id] = (delta.name, "")
        elif isinstance(delta, ToolCallArgumentsDelta):
            name, arguments = self.forming.get(delta.id, ("", ""))
            self.forming[delta.id] = (name, arguments + delta.arguments)
        elif isinstance(delta, ToolCallEnd):
            self.forming.pop(delta.call.id, None)
            message.tool_calls.append(delta.call)
        elif isinstance(delta, UsageDelta):
            message.usage = delta.usage
        elif isinstance(delta, StopDelta):
            message.stop_reason = delta.stop_reason
            message.model = delta.model or message.model

    def interrupt(self, stop_reason: str) -> AssistantMessage:
        """End the message early: calls still forming and unsigned thinking are dropped, text is kept."""
        self.forming.clear()
        message = self.message
        message.thinking[:] = [
            block for block in message.thinking if not isinstance(block, Thinking) or block.signature
        ]
        message.stop_reason = stop_reason
        return message


def _pieces(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


_WORDS = re.compile(r"\s*\S+\s*|\s+")


def deltas_of(message: AssistantMessage, *, pieces: bool = False) -> Iterator[Delta]:
    """The deltas that build `message` again: one per block, or, with `pieces`, word by word (text and
    thinking) and a few characters at a time (arguments), as a model would stream them."""
    block = 0
    for item in message.thinking:
        if isinstance(item, RedactedThinking):
            yield RedactedThinkingDelta(item.data)
            continue
        for part in _WORDS.findall(item.thinking) if pieces else [item.thinking]:
            yield ThinkingDelta(part, block)
        if item.signature is not None:
            yield ThinkingSignatureDelta(item.signature, block)
        block += 1
    for text in message.content:
        for part in _WORDS.findall(text.text) if pieces and text.text else [text.text]:
            yield TextDelta(part, block)
        block += 1
    for call in message.tool_calls:
        yield ToolCallStart(call.id, call.name)
        if call.arguments_error is None:
            encoded = json.dumps(call.arguments)
            for part in _pieces(encoded, 8) if pieces else [encoded]:
                yield ToolCallArgumentsDelta(call.id, part)
        yield ToolCallEnd(call)
    if message.usage is not None:
        yield UsageDelta(message.usage)
    yield StopDelta(message.stop_reason, message.model)
