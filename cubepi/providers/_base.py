"""What a provider is: `Model`, the `ProviderRequest` it answers, and the small `Provider` protocol."""

from __future__ import annotations

import importlib
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import anyio

from ..errors import UserError
from ..tools import AgentTool
from ._messages import AssistantMessage, Message
from ._stream import Delta, deltas_of

__all__ = ["CompletingProvider", "Model", "Provider", "ProviderRequest", "close_shielded", "stream_response"]


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
class CompletingProvider(Protocol):
    """Anything that answers a `ProviderRequest` with a whole `AssistantMessage` (no streaming).

    The agent streams such a provider's answer as the deltas of the whole message.
    """

    name: str

    async def complete(self, request: ProviderRequest) -> AssistantMessage:
        """Send the request and return the model's answer."""
        ...


@runtime_checkable
class Provider(CompletingProvider, Protocol):
    """A provider that streams: `stream(request)` yields the answer's deltas as the API sends them.

    `name` is matched against `Model.provider`. Errors of the API (authentication, rate limits, an
    error event or a dropped connection mid-stream) raise the SDK's own exceptions; a provider never
    swallows them. Closing the iterator early (``aclose()``) closes the response.
    """

    def stream(self, request: ProviderRequest) -> AsyncIterator[Delta]:
        """Send the request and yield the deltas of the model's answer."""
        ...


async def stream_response(
    provider: Provider | CompletingProvider, request: ProviderRequest
) -> AsyncGenerator[Delta, None]:
    """The deltas of `provider`'s answer: its own stream, or its whole answer as one delta sequence."""
    if isinstance(provider, Provider):
        deltas = provider.stream(request)
        try:
            async for delta in deltas:
                yield delta
        finally:
            close = getattr(deltas, "aclose", None)
            if close is not None:
                await close()
        return
    message = await provider.complete(request)
    for delta in deltas_of(message):
        yield delta


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


async def close_shielded(stream: Any) -> None:
    """Close an SDK stream (its HTTP response) even while the task is being cancelled."""
    with anyio.CancelScope(shield=True):
        await stream.close()
