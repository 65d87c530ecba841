"""`AnthropicProvider`: the Messages API through the official `anthropic` SDK (``AsyncAnthropic``).

``from cubepi.providers.anthropic import AnthropicProvider``; importing this module does not import the SDK,
building a provider does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..tools import Content, ImageContent, TextContent
from ._base import ProviderRequest, sdk_client
from ._messages import AssistantMessage, Message, ToolCall, ToolResultMessage, Usage, UserMessage

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["AnthropicProvider"]

DEFAULT_MAX_TOKENS = 4096


class AnthropicProvider:
    """The Anthropic Messages API.

    Give `api_key` and/or `base_url` (both optional: the SDK reads ``ANTHROPIC_API_KEY``), or, instead of
    both, a ready `client` (an ``anthropic.AsyncAnthropic``). Tools go out through `AgentTool.to_anthropic()`;
    images in tool results are sent as image blocks inside the ``tool_result``.
    """

    name = "anthropic"

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        client: AsyncAnthropic | None = None,
    ) -> None:
        self._client: Any = sdk_client(
            "AnthropicProvider",
            "anthropic",
            "AsyncAnthropic",
            api_key=api_key,
            base_url=base_url,
            client=client,
        )

    def __repr__(self) -> str:
        return "AnthropicProvider()"

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
        return kwargs

    async def complete(self, request: ProviderRequest) -> AssistantMessage:
        """Send `request` to ``messages.create`` and translate the answer."""
        response = await self._client.messages.create(**self.build_request(request))
        return from_anthropic_message(response)


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


def to_anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The transcript as Messages API ``messages``; consecutive tool results share one user turn."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": _blocks(message.content)})
        elif isinstance(message, AssistantMessage):
            content: list[dict[str, Any]] = [
                {"type": "text", "text": b.text} for b in message.content if b.text
            ]
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
    for block in data.get("content") or []:
        kind = block.get("type")
        if kind == "text":
            text.append(TextContent(block.get("text", "")))
        elif kind == "tool_use":
            arguments = block.get("input")
            if isinstance(arguments, dict):
                calls.append(ToolCall(id=block["id"], name=block["name"], arguments=arguments))
            else:
                calls.append(
                    ToolCall(
                        id=block["id"],
                        name=block["name"],
                        arguments_error=f"the input was a {type(arguments).__name__}, not a JSON object",
                    )
                )
    usage = data.get("usage") or {}
    return AssistantMessage(
        content=text,
        tool_calls=calls,
        stop_reason=data.get("stop_reason"),
        model=data.get("model"),
        usage=Usage(usage.get("input_tokens") or 0, usage.get("output_tokens") or 0) if usage else None,
    )
