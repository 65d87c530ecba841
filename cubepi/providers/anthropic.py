"""`AnthropicProvider`: the Messages API through the official `anthropic` SDK (``AsyncAnthropic``).

``from cubepi.providers.anthropic import AnthropicProvider``; importing this module does not import the SDK,
building a provider does.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..tools import Content, ImageContent, TextContent
from ._base import ProviderRequest, close_shielded, sdk_client
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
    RedactedThinkingDelta,
    StopDelta,
    TextDelta,
    ThinkingDelta,
    ThinkingSignatureDelta,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    UsageDelta,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["AnthropicProvider"]

DEFAULT_MAX_TOKENS = 4096


class AnthropicProvider:
    """The Anthropic Messages API.

    Give `api_key` and/or `base_url` (both optional: the SDK reads ``ANTHROPIC_API_KEY``), or, instead of
    both, a ready `client` (an ``anthropic.AsyncAnthropic``). Tools go out through `AgentTool.to_anthropic()`;
    images in tool results are sent as image blocks inside the ``tool_result``.

    `thinking` turns on extended thinking: the API's own ``thinking`` parameter, sent as given (for example
    ``{"type": "enabled", "budget_tokens": 2048}`` or ``{"type": "adaptive"}``; which forms a model takes is
    the API's to say). Thinking blocks are kept in the transcript with their signatures and sent back
    unchanged.
    """

    name = "anthropic"

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        client: AsyncAnthropic | None = None,
        *,
        thinking: Mapping[str, Any] | None = None,
    ) -> None:
        self.thinking = dict(thinking) if thinking is not None else None
        self._client: Any = sdk_client(
            "AnthropicProvider",
            "anthropic",
            "AsyncAnthropic",
            api_key=api_key,
            base_url=base_url,
            client=client,
        )

    def __repr__(self) -> str:
        return f"AnthropicProvider(thinking={self.thinking!r})" if self.thinking else "AnthropicProvider()"

    @property
    def client(self) -> Any:
        """The SDK client requests go through."""
        return self._client

    def build_request(self, request: ProviderRequest) -> dict[str, Any]:
        """The keyword arguments of ``client.messages.create`` for `request`."""
        kwargs: dict[str, Any] = {
            "model": request.model.id,
            "max_tokens": request.model.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": to_anthropic_messages(request.messages),
        }
        if request.system_prompt:
            kwargs["system"] = request.system_prompt
        if request.tools:
            kwargs["tools"] = [item.to_anthropic() for item in request.tools]
        if self.thinking is not None:
            kwargs["thinking"] = self.thinking
        return kwargs

    async def complete(self, request: ProviderRequest) -> AssistantMessage:
        """Send `request` to ``messages.create`` and translate the answer."""
        response = await self._client.messages.create(**self.build_request(request))
        return from_anthropic_message(response)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Delta]:
        """Send `request` to ``messages.create(stream=True)`` and translate its events as they arrive."""
        events = await self._client.messages.create(**self.build_request(request), stream=True)
        try:
            translator = AnthropicStream()
            async for event in events:
                for delta in translator.feed(event):
                    yield delta
        finally:
            await close_shielded(events)


def _usage(data: Mapping[str, Any] | None, previous: Usage) -> Usage:
    """`previous` updated with the counts `data` reports (the API's stream counts are cumulative)."""
    if not data:
        return previous

    def count(key: str, default: int) -> int:
        value = data.get(key)
        return value if isinstance(value, int) else default

    return Usage(
        count("input_tokens", previous.input_tokens),
        count("output_tokens", previous.output_tokens),
        count("cache_read_input_tokens", previous.cache_read_tokens),
        count("cache_creation_input_tokens", previous.cache_write_tokens),
    )


def _tool_call(call_id: str, name: str, arguments: Any) -> ToolCall:
    if isinstance(arguments, dict):
        return ToolCall(id=call_id, name=name, arguments=arguments)
    return ToolCall(
        id=call_id,
        name=name,
        arguments_error=f"the input was a {type(arguments).__name__}, not a JSON object",
    )


class AnthropicStream:
    """Turns the Messages API's stream events (SDK objects or their JSON) into deltas, one event at a time."""

    def __init__(self) -> None:
        self.model: str | None = None
        self.usage = Usage()
        self.stop_reason: str | None = None
        self._calls: dict[int, tuple[str, str, list[str]]] = {}

    def feed(self, event: Any) -> Iterator[Delta]:
        """The deltas of one event (``ping`` and unknown events have none)."""
        data: dict[str, Any] = event if isinstance(event, dict) else event.model_dump(mode="json")
        kind = data.get("type")
        if kind == "message_start":
            message = data.get("message") or {}
            self.model = message.get("model")
            self.usage = _usage(message.get("usage"), self.usage)
            yield UsageDelta(self.usage)
        elif kind == "content_block_start":
            yield from self._start(data["index"], data.get("content_block") or {})
        elif kind == "content_block_delta":
            yield from self._delta(data["index"], data.get("delta") or {})
        elif kind == "content_block_stop":
            call = self._calls.pop(data["index"], None)
            if call is not None:
                call_id, name, fragments = call
                text = "".join(fragments)
                try:
                    arguments = json.loads(text) if text else {}
                except ValueError as exc:
                    yield ToolCallEnd(
                        ToolCall(call_id, name, arguments_error=f"the input is not valid JSON ({exc})")
                    )
                else:
                    yield ToolCallEnd(_tool_call(call_id, name, arguments))
        elif kind == "message_delta":
            self.stop_reason = (data.get("delta") or {}).get("stop_reason") or self.stop_reason
            self.usage = _usage(data.get("usage"), self.usage)
            yield UsageDelta(self.usage)
        elif kind == "message_stop":
            yield StopDelta(self.stop_reason, self.model)

    def _start(self, index: int, block: dict[str, Any]) -> Iterator[Delta]:
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            yield TextDelta(block["text"], index)
        elif kind == "tool_use":
            self._calls[index] = (block["id"], block["name"], [])
            yield ToolCallStart(block["id"], block["name"])
        elif kind == "thinking":
            yield ThinkingDelta(block.get("thinking") or "", index)
            if block.get("signature"):
                yield ThinkingSignatureDelta(block["signature"], index)
        elif kind == "redacted_thinking":
            yield RedactedThinkingDelta(block["data"])

    def _delta(self, index: int, delta: dict[str, Any]) -> Iterator[Delta]:
        kind = delta.get("type")
        if kind == "text_delta":
            yield TextDelta(delta["text"], index)
        elif kind == "input_json_delta" and index in self._calls:
            call_id, _, fragments = self._calls[index]
            fragments.append(delta["partial_json"])
            yield ToolCallArgumentsDelta(call_id, delta["partial_json"])
        elif kind == "thinking_delta":
            yield ThinkingDelta(delta["thinking"], index)
        elif kind == "signature_delta":
            yield ThinkingSignatureDelta(delta["signature"], index)


def _block(block: Content) -> dict[str, Any]:
    if isinstance(block, ImageContent):
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": block.mime_type, "data": block.data},
        }
    return {"type": "text", "text": block.text}


def _blocks(content: Sequence[Content]) -> list[dict[str, Any]]:
    # The API refuses empty text blocks.
    return [_block(b) for b in content if not (isinstance(b, TextContent) and not b.text)]


def _sendable(block: Thinking | RedactedThinking) -> bool:
    return isinstance(block, RedactedThinking) or block.signature is not None


def _thinking_block(block: Thinking | RedactedThinking) -> dict[str, Any]:
    if isinstance(block, RedactedThinking):
        return {"type": "redacted_thinking", "data": block.data}
    return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}


def to_anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The transcript as Messages API ``messages``; consecutive tool results share one user turn."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": _blocks(message.content)})
        elif isinstance(message, AssistantMessage):
            content: list[dict[str, Any]] = [_thinking_block(b) for b in message.thinking if _sendable(b)]
            content += [{"type": "text", "text": b.text} for b in message.content if b.text]
            content += [
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
                for call in message.tool_calls
            ]
            if content:  # an empty answer cannot be sent back; consecutive user turns are fine
                out.append({"role": "assistant", "content": content})
        elif isinstance(message, ToolResultMessage):
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
            blocks = _blocks(message.content)
            if blocks:
                block["content"] = blocks
            if message.is_error:
                block["is_error"] = True
            previous = out[-1] if out else None
            if (
                previous is not None
                and previous["role"] == "user"
                and previous["content"]
                and all(item.get("type") == "tool_result" for item in previous["content"])
            ):
                previous["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
    return out


def from_anthropic_message(response: Any) -> AssistantMessage:
    """An SDK ``Message`` (or its JSON as a dict) as an `AssistantMessage`; other block types are dropped."""
    data: dict[str, Any] = response if isinstance(response, dict) else response.model_dump(mode="json")
    text: list[TextContent] = []
    calls: list[ToolCall] = []
    thinking: list[Thinking | RedactedThinking] = []
    for block in data.get("content") or []:
        kind = block.get("type")
        if kind == "text":
            text.append(TextContent(block.get("text", "")))
        elif kind == "tool_use":
            calls.append(_tool_call(block["id"], block["name"], block.get("input")))
        elif kind == "thinking":
            thinking.append(Thinking(block.get("thinking") or "", block.get("signature")))
        elif kind == "redacted_thinking":
            thinking.append(RedactedThinking(block["data"]))
    usage = data.get("usage")
    return AssistantMessage(
        content=text,
        tool_calls=calls,
        stop_reason=data.get("stop_reason"),
        model=data.get("model"),
        usage=_usage(usage, Usage()) if usage else None,
        thinking=thinking,
    )
