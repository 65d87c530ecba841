"""What a provider is: `Model`, the `ProviderRequest` it answers, and the small `Provider` protocol."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Protocol, runtime_checkable

from ..errors import UserError
from ..tools import AgentTool
from ._messages import AssistantMessage, Message

__all__ = ["Model", "Provider", "ProviderRequest"]


@dataclass(frozen=True)
class Model:
    """A model of a provider: its `id` as the API spells it and the `provider` name that serves it.

    `provider` must match the `name` of the provider the agent uses (``"anthropic"``, ``"openai"``,
    ``"faux"``). `max_tokens` caps each response (the Anthropic API requires a cap; 4096 when unset).
    """

    id: str
    provider: str
    max_tokens: int | None = None


@dataclass(frozen=True)
class ProviderRequest:
    """One request to a model: the system prompt, the transcript so far, and the tools it may call."""

    model: Model
    messages: Sequence[Message]
    tools: Sequence[AgentTool] = ()
    system_prompt: str | None = None


@runtime_checkable
class Provider(Protocol):
    """Anything that answers a `ProviderRequest` with an `AssistantMessage`.

    `name` is matched against `Model.provider`. Errors of the API (authentication, rate limits) raise
    the SDK's own exceptions; a provider never swallows them.
    """

    name: str

    async def complete(self, request: ProviderRequest) -> AssistantMessage:
        """Send the request and return the model's answer."""
        ...


def import_sdk(module: str, extra: str) -> ModuleType:
    """Import an optional SDK, or raise `UserError` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise UserError(
            f'the {module!r} package is needed for this provider: pip install "cubepi[{extra}]"'
        ) from exc
