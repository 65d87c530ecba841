"""Wire conversions at their edges: empty turns, empty results, FauxProvider answers."""

from __future__ import annotations

import pytest

from cubepi import TextContent, UserError
from cubepi.providers import (
    AssistantMessage,
    FauxProvider,
    Message,
    Model,
    ProviderRequest,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from cubepi.providers.anthropic import from_anthropic_message, to_anthropic_messages
from cubepi.providers.openai import from_openai_completion, to_openai_messages

CALL = ToolCall("c1", "noop", {})


def test_anthropic_skips_empty_answers_and_empty_result_content() -> None:
    messages: list[Message] = [
        UserMessage.of("hi"),
        AssistantMessage(),
        UserMessage.of("again"),
        AssistantMessage(content=[TextContent("")], tool_calls=[CALL]),
        ToolResultMessage(tool_call_id="c1", tool_name="noop"),
    ]
    assert to_anthropic_messages(messages) == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "noop", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1"}]},
    ]


def test_openai_content_is_null_only_next_to_tool_calls() -> None:
    wire = to_openai_messages([AssistantMessage(), AssistantMessage(tool_calls=[CALL])])
    assert wire[0] == {"role": "assistant", "content": ""}
    assert wire[1]["content"] is None and wire[1]["tool_calls"][0]["id"] == "c1"


def test_parsers_accept_plain_json_and_drop_unknown_blocks() -> None:
    message = from_anthropic_message(
        {
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "x"},
                {"type": "text", "text": "ok"},
            ],
            "stop_reason": "end_turn",
            "model": "claude",
        }
    )
    assert message.text == "ok" and message.tool_calls == [] and message.usage is None
    with pytest.raises(UserError, match="no choices"):
        from_openai_completion({"choices": []})


async def test_faux_provider_answers_and_refuses_nonsense() -> None:
    request = ProviderRequest(model=Model("m", "faux"), messages=())
    provider = FauxProvider([AssistantMessage(content=[TextContent("as is")], stop_reason="custom"), 42])  # type: ignore[list-item]
    first = await provider.complete(request)
    assert (first.text, first.stop_reason, first.model) == ("as is", "custom", "m")
    with pytest.raises(UserError, match="cannot answer with int"):
        await provider.complete(request)
