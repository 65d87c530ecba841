"""Providers: one small protocol between the agent loop and an LLM API.

`AnthropicProvider` (official `anthropic` SDK; its home is `cubepi.providers.anthropic`), `OpenAIProvider`
(official `openai` SDK, Chat Completions; `cubepi.providers.openai`) and the scripted `FauxProvider`. The
SDKs are imported only when a provider is built; a missing one raises `UserError` naming the extra to
install. Messages are provider-neutral: `UserMessage`, `AssistantMessage`
(text and `ToolCall`s), `ToolResultMessage`.
"""

from __future__ import annotations

from ._base import Model, Provider, ProviderRequest
from ._faux import FauxProvider, FauxReply
from ._messages import AssistantMessage, Message, ToolCall, ToolResultMessage, Usage, UserMessage
from .anthropic import AnthropicProvider
from .openai import OpenAIProvider, image_placeholder

__all__ = [
    "AnthropicProvider",
    "AssistantMessage",
    "FauxProvider",
    "FauxReply",
    "Message",
    "Model",
    "OpenAIProvider",
    "Provider",
    "ProviderRequest",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "image_placeholder",
]
