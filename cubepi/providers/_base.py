"""What a provider is: `Model`, the `ProviderRequest` it answers, and the small `Provider` protocol."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

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


def sdk_client(
    owner: str, module: str, client_class: str, *, api_key: str | None, base_url: str | None, client: Any
) -> Any:
    """The SDK client a provider sends through: `client` as given, or one built from `api_key`/`base_url`.

    Giving both forms is a `UserError`; a missing SDK raises `UserError` naming the extra that installs it.
    """
    if client is not None:
        if api_key is not None or base_url is not None:
            raise UserError(f"give {owner} either client=... or api_key/base_url, not both")
        return client
    try:
        sdk = importlib.import_module(module)
    except ImportError as exc:
        raise UserError(
            f'the {module!r} package is needed for this provider: pip install "cubepi[{module}]"'
        ) from exc
    return getattr(sdk, client_class)(api_key=api_key, base_url=base_url)
