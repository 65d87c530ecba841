"""Providers: one small protocol between the agent loop and an LLM API.

`AnthropicProvider` (official `anthropic` SDK; its home is `cubepi.providers.anthropic`), `OpenAIProvider`
(official `openai` SDK, Chat Completions; `cubepi.providers.openai`) and the scripted `FauxProvider`. The
SDKs are imported only when a provider is built; a missing one raises `UserError` naming the extra to
install. Messages are provider-neutral: `UserMessage`, `AssistantMessage`
(thinking, text and `ToolCall`s), `ToolResultMessage`. A provider's `stream` yields typed deltas
(`TextDelta`, `ToolCallStart`, ...), which `MessageBuilder` turns into the message so far.
"""

from __future__ import annotations

from ._base import CompletingProvider, Model, Provider, ProviderRequest, stream_response
from ._faux import FauxProvider, FauxReply
from ._messages import (
    AssistantMessage,
    Message,
    RedactedThinking,
    Thinking,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ._stream import (
    Delta,
    MessageBuilder,
    RedactedThinkingDelta,
    StopDelta,
    TextDelta,
    ThinkingDelta,
    ThinkingSignatureDelta,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    UsageDelta,
    deltas_of,
)
from .anthropic import AnthropicProvider
from .openai import OpenAIProvider, image_placeholder

__all__ = [
    "AnthropicProvider",
    "AssistantMessage",
    "CompletingProvider",
    "Delta",
    "FauxProvider",
    "FauxReply",
    "Message",
    "MessageBuilder",
    "Model",
    "OpenAIProvider",
    "Provider",
    "ProviderRequest",
    "RedactedThinking",
    "RedactedThinkingDelta",
    "StopDelta",
    "TextDelta",
    "Thinking",
    "ThinkingDelta",
    "ThinkingSignatureDelta",
    "ToolCall",
    "ToolCallArgumentsDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolResultMessage",
    "Usage",
    "UsageDelta",
    "UserMessage",
    "deltas_of",
    "image_placeholder",
    "stream_response",
]
