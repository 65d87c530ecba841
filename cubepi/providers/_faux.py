"""`FauxProvider`: a scripted model for tests and offline prototyping."""

from __future__ import annotations

import inspect
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import TypeAlias

import anyio.lowlevel

from ..errors import UserError
from ..tools import TextContent
from ._base import ProviderRequest
from ._messages import AssistantMessage, ToolCall
from ._stream import Delta, deltas_of

__all__ = ["FauxProvider", "FauxReply"]

FauxReply: TypeAlias = "AssistantMessage | str | ToolCall | list[ToolCall]"
"""One scripted answer: a message, a final text, one tool call, or several calls for one turn."""

_Step: TypeAlias = "FauxReply | Callable[[ProviderRequest], FauxReply | Awaitable[FauxReply]]"


class FauxProvider:
    """A provider that answers from a script instead of a model.

    `script` is a list whose items are used one per request: an `AssistantMessage`, a `str` (a final text
    answer), a `ToolCall` or a list of them (the model calls those tools), or a callable that receives the
    `ProviderRequest` and returns (or awaits to) one of those. A single callable instead of a list answers
    every request; a single `str`, `AssistantMessage` or `ToolCall` is a script of that one answer. Running
    past the end of a script raises `UserError`. Every request is kept in `requests`. Use it with
    ``Model(id=..., provider="faux")``. `stream` sends an answer in pieces, as a model would: text and
    thinking word by word, arguments a few characters at a time.
    """

    name = "faux"

    def __init__(
        self,
        script: Iterable[_Step]
        | str
        | AssistantMessage
        | ToolCall
        | Callable[[ProviderRequest], FauxReply | Awaitable[FauxReply]],
        *,
        name: str = "faux",
    ) -> None:
        self.name = name
        self._responder: Callable[[ProviderRequest], FauxReply | Awaitable[FauxReply]] | None = None
        self._steps: list[_Step] = []
        if isinstance(script, (str, AssistantMessage, ToolCall)):
            self._steps = [script]  # one answer, not a script of characters
        elif callable(script):
            self._responder = script
        else:
            self._steps = list(script)
        self._position = 0
        self._ids = itertools.count(1)
        self.requests: list[ProviderRequest] = []

    def __repr__(self) -> str:
        if self._responder is not None:
            return f"FauxProvider(responder={self._responder!r})"
        return f"FauxProvider({self._position}/{len(self._steps)} replies used)"

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Delta]:
        """The next scripted answer, in pieces."""
        message = await self.complete(request)
        for delta in deltas_of(message, pieces=True):
            await anyio.lowlevel.checkpoint()
            yield delta

    async def complete(self, request: ProviderRequest) -> AssistantMessage:
        """The next scripted answer."""
        self.requests.append(request)
        step: _Step
        if self._responder is not None:
            step = self._responder
        else:
            if self._position >= len(self._steps):
                raise UserError(
                    f"FauxProvider ran out of scripted replies after {len(self._steps)} "
                    f"(request {self._position + 1})"
                )
            step = self._steps[self._position]
            self._position += 1
        reply: object = step(request) if callable(step) else step
        if inspect.isawaitable(reply):
            reply = await reply
        return self._message(reply, request)

    def _message(self, reply: object, request: ProviderRequest) -> AssistantMessage:
        if isinstance(reply, AssistantMessage):
            message = reply
        elif isinstance(reply, str):
            message = AssistantMessage(content=[TextContent(reply)])
        elif isinstance(reply, ToolCall):
            message = AssistantMessage(tool_calls=[reply])
        elif isinstance(reply, list) and all(isinstance(item, ToolCall) for item in reply):
            message = AssistantMessage(tool_calls=list(reply))
        else:
            raise UserError(f"FauxProvider cannot answer with {type(reply).__name__}: {reply!r}")
        calls = [
            call if call.id else _with_id(call, f"faux-{next(self._ids)}") for call in message.tool_calls
        ]
        return AssistantMessage(
            content=list(message.content),
            tool_calls=calls,
            stop_reason=message.stop_reason or ("tool_use" if calls else "end_turn"),
            model=message.model or request.model.id,
            usage=message.usage,
            thinking=list(message.thinking),
        )


def _with_id(call: ToolCall, call_id: str) -> ToolCall:
    return ToolCall(
        id=call_id, name=call.name, arguments=call.arguments, arguments_error=call.arguments_error
    )
