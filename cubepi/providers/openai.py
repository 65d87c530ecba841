"""`OpenAIProvider`: Chat Completions through the official `openai` SDK (``AsyncOpenAI``).

``from cubepi.providers.openai import OpenAIProvider``; importing this module does not import the SDK,
building a provider does.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..tools import Content, ImageContent, TextContent
from ._base import ProviderRequest, close_shielded, sdk_client
from ._messages import AssistantMessage, Message, ToolCall, ToolResultMessage, Usage, UserMessage
from ._stream import (
    Delta,
    StopDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    UsageDelta,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIProvider", "image_placeholder"]


def image_placeholder(image: ImageContent) -> str:
    """The text sent instead of an image in a Chat Completions tool result (the wire has no images there)."""
    try:
        size = f"{len(base64.b64decode(image.data, validate=False))} bytes"
    except (binascii.Error, ValueError):
        size = f"{len(image.data)} base64 characters"
    return (
        f"[image omitted: {image.mime_type}, {size}; "
        "images in tool results cannot be sent over OpenAI Chat Completions]"
    )


class OpenAIProvider:
    """The OpenAI Chat Completions API (and servers compatible with it, through `base_url`).

    Give `api_key` and/or `base_url` (both optional: the SDK reads ``OPENAI_API_KEY``), or, instead of
    both, a ready `client` (an ``openai.AsyncOpenAI``). Tools go out through
    `AgentTool.to_openai(strict=strict)`. The wire format has no images in ``tool`` messages: each
    `ImageContent` of a tool result is replaced by a text placeholder (see `image_placeholder`); error
    results are prefixed with ``Error:`` since the wire has no error flag.
    """

    name = "openai"

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        client: AsyncOpenAI | None = None,
        *,
        strict: bool = False,
    ) -> None:
        self._client: Any = sdk_client(
            "OpenAIProvider", "openai", "AsyncOpenAI", api_key=api_key, base_url=base_url, client=client
        )
        self.strict = strict

    def __repr__(self) -> str:
        return f"OpenAIProvider(strict={self.strict!r})"

    @property
    def client(self) -> Any:
        """The SDK client requests go through."""
        return self._client

    def build_request(self, request: ProviderRequest) -> dict[str, Any]:
        """The keyword arguments of ``client.chat.completions.create`` for `request`."""
        messages = to_openai_messages(request.messages)
        if request.system_prompt:
            messages.insert(0, {"role": "system", "content": request.system_prompt})
        kwargs: dict[str, Any] = {"model": request.model.id, "messages": messages}
        if request.model.max_tokens is not None:
            kwargs["max_completion_tokens"] = request.model.max_tokens
        if request.tools:
            kwargs["tools"] = [item.to_openai(strict=self.strict) for item in request.tools]
        return kwargs

    async def complete(self, request: ProviderRequest) -> AssistantMessage:
        """Send `request` to ``chat.completions.create`` and translate the first choice."""
        response = await self._client.chat.completions.create(**self.build_request(request))
        return from_openai_completion(response)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Delta]:
        """Send `request` with ``stream=True`` (usage included) and translate the chunks as they arrive."""
        chunks = await self._client.chat.completions.create(
            **self.build_request(request), stream=True, stream_options={"include_usage": True}
        )
        try:
            translator = OpenAIStream()
            async for chunk in chunks:
                for delta in translator.feed(chunk):
                    yield delta
            for delta in translator.finish():
                yield delta
        finally:
            await close_shielded(chunks)


class OpenAIStream:
    """Turns Chat Completions chunks (SDK objects or their JSON) into deltas, one chunk at a time.

    Tool calls finish forming when the choice's ``finish_reason`` arrives; `finish` ends the response.
    """

    def __init__(self) -> None:
        self.model: str | None = None
        self.stop_reason: str | None = None
        self._calls: dict[int, tuple[str, str, list[str]]] = {}

    def feed(self, chunk: Any) -> Iterator[Delta]:
        """The deltas of one chunk (only the first choice is read)."""
        data: dict[str, Any] = chunk if isinstance(chunk, dict) else chunk.model_dump(mode="json")
        self.model = data.get("model") or self.model
        for choice in data.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("content"):
                yield TextDelta(delta["content"])
            for item in delta.get("tool_calls") or []:
                yield from self._tool_call(item)
            if choice.get("finish_reason"):
                self.stop_reason = choice["finish_reason"]
                yield from self._end_calls()
        usage = data.get("usage")
        if usage:
            yield UsageDelta(_usage(usage))

    def _tool_call(self, item: Mapping[str, Any]) -> Iterator[Delta]:
        index = item.get("index", 0)
        function = item.get("function") or {}
        if index not in self._calls:
            call_id = item.get("id") or f"call_{index}"
            self._calls[index] = (call_id, function.get("name") or "", [])
            yield ToolCallStart(call_id, function.get("name") or "")
        call_id, _, fragments = self._calls[index]
        if function.get("arguments"):
            fragments.append(function["arguments"])
            yield ToolCallArgumentsDelta(call_id, function["arguments"])

    def _end_calls(self) -> Iterator[Delta]:
        for call_id, name, fragments in self._calls.values():
            yield ToolCallEnd(_decode_arguments(call_id, name, "".join(fragments)))
        self._calls.clear()

    def finish(self) -> Iterator[Delta]:
        """The deltas that end the response once the chunks ran out."""
        yield from self._end_calls()
        yield StopDelta(self.stop_reason, self.model)


def _usage(usage: Mapping[str, Any]) -> Usage:
    details = usage.get("prompt_tokens_details") or {}
    return Usage(
        usage.get("prompt_tokens") or 0,
        usage.get("completion_tokens") or 0,
        cache_read_tokens=details.get("cached_tokens") or 0,
    )


def _user_part(block: Content) -> dict[str, Any]:
    if isinstance(block, ImageContent):
        return {"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}}
    return {"type": "text", "text": block.text}


def _tool_text(message: ToolResultMessage) -> str:
    parts = [
        block.text if isinstance(block, TextContent) else image_placeholder(block)
        for block in message.content
    ]
    text = "\n".join(parts)
    return f"Error: {text}" if message.is_error else text


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The transcript as Chat Completions ``messages`` (without the system message)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            if all(isinstance(block, TextContent) for block in message.content):
                out.append({"role": "user", "content": message.text})
            else:
                out.append({"role": "user", "content": [_user_part(b) for b in message.content]})
        elif isinstance(message, AssistantMessage):
            # content may be null only next to tool_calls
            text = message.text or (None if message.tool_calls else "")
            entry: dict[str, Any] = {"role": "assistant", "content": text}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                    for call in message.tool_calls
                ]
            out.append(entry)
        elif isinstance(message, ToolResultMessage):
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": _tool_text(message)})
    return out


def _decode_arguments(call_id: str, name: str, raw: Any) -> ToolCall:
    try:
        arguments = json.loads(raw) if raw else {}
    except (TypeError, ValueError) as exc:
        return ToolCall(id=call_id, name=name, arguments_error=f"the arguments are not valid JSON ({exc})")
    if not isinstance(arguments, dict):
        return ToolCall(
            id=call_id, name=name, arguments_error=f"the arguments are a JSON {type(arguments).__name__}"
        )
    return ToolCall(id=call_id, name=name, arguments=arguments)


def from_openai_completion(response: Any) -> AssistantMessage:
    """An SDK ``ChatCompletion`` (or its JSON as a dict) as an `AssistantMessage` (first choice)."""
    data: dict[str, Any] = response if isinstance(response, dict) else response.model_dump(mode="json")
    choices = data.get("choices") or []
    if not choices:
        raise UserError("the Chat Completions response had no choices")
    choice = choices[0]
    message = choice.get("message") or {}
    content = message.get("content")
    text = [TextContent(content)] if content else []
    calls = [
        _decode_arguments(item["id"], item["function"]["name"], item["function"].get("arguments"))
        for item in message.get("tool_calls") or []
        if item.get("type", "function") == "function"
    ]
    usage = data.get("usage")
    return AssistantMessage(
        content=text,
        tool_calls=calls,
        stop_reason=choice.get("finish_reason"),
        model=data.get("model"),
        usage=_usage(usage) if usage else None,
    )
