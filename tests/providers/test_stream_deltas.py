"""Deltas, the message they build, and the translation of each API's stream events into deltas."""

from __future__ import annotations

from cubepi.providers import (
    AssistantMessage,
    MessageBuilder,
    RedactedThinking,
    RedactedThinkingDelta,
    StopDelta,
    TextDelta,
    Thinking,
    ThinkingDelta,
    ThinkingSignatureDelta,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    UsageDelta,
    deltas_of,
)
from cubepi.providers.anthropic import AnthropicStream, from_anthropic_message, to_anthropic_messages
from cubepi.providers.openai import OpenAIStream
from cubepi.tools import TextContent


def build(*deltas: object, model: str | None = "m") -> MessageBuilder:
    builder = MessageBuilder(model=model)
    for delta in deltas:
        builder.apply(delta)  # type: ignore[arg-type]
    return builder


def test_text_blocks_grow_and_a_new_block_number_starts_a_new_block() -> None:
    message = build(TextDelta("Hel"), TextDelta("lo"), TextDelta("World", 3), TextDelta("!", 3)).message
    assert (
        message.content == [TextContent("Hello"), TextContent("World!")] and message.text == "Hello\nWorld!"
    )


def test_thinking_takes_its_signature_by_block_and_redacted_blocks_keep_their_place() -> None:
    message = build(
        ThinkingDelta("a"),
        ThinkingDelta("b"),
        ThinkingSignatureDelta("s0"),
        RedactedThinkingDelta("xyz"),
        ThinkingDelta("c", 2),
        ThinkingSignatureDelta("s2", 2),
    ).message
    assert message.thinking == [Thinking("ab", "s0"), RedactedThinking("xyz"), Thinking("c", "s2")]


def test_calls_join_the_message_when_they_end_and_forming_shows_the_arguments_so_far() -> None:
    builder = build(ToolCallStart("c1", "read"), ToolCallArgumentsDelta("c1", '{"pa'))
    assert builder.message.tool_calls == [] and builder.forming == {"c1": ("read", '{"pa')}
    builder.apply(ToolCallArgumentsDelta("c1", 'th": 1}'))
    assert builder.forming == {"c1": ("read", '{"path": 1}')}
    builder.apply(ToolCallEnd(ToolCall("c1", "read", {"path": 1})))
    assert builder.message.tool_calls == [ToolCall("c1", "read", {"path": 1})] and builder.forming == {}


def test_usage_is_replaced_and_stop_keeps_the_model_when_none_is_reported() -> None:
    message = build(UsageDelta(Usage(1, 1)), UsageDelta(Usage(5, 7)), StopDelta("end_turn")).message
    assert message.usage == Usage(5, 7) and message.stop_reason == "end_turn" and message.model == "m"
    assert build(StopDelta("stop", "m2")).message.model == "m2"


def test_interrupt_keeps_text_and_signed_thinking_and_drops_what_was_still_forming() -> None:
    builder = build(
        ThinkingDelta("signed"),
        ThinkingSignatureDelta("sig"),
        ThinkingDelta("unsigned", 1),
        TextDelta("partial", 2),
        ToolCallStart("c1", "read"),
        ToolCallArgumentsDelta("c1", "{"),
    )
    message = builder.interrupt("aborted")
    assert message is builder.message and message.aborted and builder.forming == {}
    assert message.thinking == [Thinking("signed", "sig")] and message.text == "partial"
    assert not AssistantMessage(stop_reason="error").aborted


def test_deltas_of_a_message_rebuild_it_whole_or_in_pieces() -> None:
    original = AssistantMessage(
        content=[TextContent("one two three"), TextContent("four")],
        tool_calls=[
            ToolCall("c1", "read", {"path": "/a/long/path"}),
            ToolCall("c2", "bad", arguments_error="x"),
        ],
        stop_reason="tool_use",
        model="m",
        usage=Usage(1, 2),
        thinking=[Thinking("hmm ok", "sig"), RedactedThinking("r"), Thinking("no sig")],
    )
    whole = list(deltas_of(original))
    pieces = list(deltas_of(original, pieces=True))
    assert len(pieces) > len(whole)
    assert [d.text for d in pieces if isinstance(d, TextDelta)] == ["one ", "two ", "three", "four"]
    for deltas in (whole, pieces):
        rebuilt = build(*deltas, model=None).message
        assert rebuilt == original
    assert [d for d in whole if isinstance(d, ToolCallArgumentsDelta) and d.id == "c2"] == []


def anthropic_deltas(*events: dict[str, object]) -> list[object]:
    stream = AnthropicStream()
    return [delta for event in events for delta in stream.feed(event)]


def test_anthropic_tool_input_that_is_not_an_object_or_not_json_is_an_arguments_error() -> None:
    deltas = anthropic_deltas(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "n"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "[1]"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "u", "name": "n"},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{x"},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "tool_use", "id": "v", "name": "n"},
        },
        {"type": "content_block_stop", "index": 2},
        {"type": "content_block_stop", "index": 3},
    )
    first, second, third = (d.call for d in deltas if isinstance(d, ToolCallEnd))
    assert first.arguments_error == "the input was a list, not a JSON object"
    assert second.arguments_error is not None and "not valid JSON" in second.arguments_error
    assert third == ToolCall("v", "n", {})


def test_anthropic_usage_and_stop_reason_accumulate_over_the_stream() -> None:
    deltas = anthropic_deltas(
        {
            "type": "message_start",
            "message": {"model": "claude", "usage": {"input_tokens": 9, "cache_read_input_tokens": 4}},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hi"}},
        {"type": "ping"},
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 30}},
        {"type": "message_delta", "delta": {"stop_reason": None}, "usage": None},
        {"type": "message_stop"},
    )
    assert deltas[1] == TextDelta("Hi", 0)
    assert [d.usage for d in deltas if isinstance(d, UsageDelta)][-1] == Usage(9, 30, cache_read_tokens=4)
    assert deltas[-1] == StopDelta("max_tokens", "claude")


def test_anthropic_messages_send_signed_thinking_first_and_skip_unsigned() -> None:
    message = AssistantMessage(
        content=[TextContent("hi")],
        thinking=[Thinking("t", "s"), Thinking("cut short"), RedactedThinking("r")],
    )
    (sent,) = to_anthropic_messages([message])
    assert sent["content"] == [
        {"type": "thinking", "thinking": "t", "signature": "s"},
        {"type": "redacted_thinking", "data": "r"},
        {"type": "text", "text": "hi"},
    ]
    whole = from_anthropic_message(
        {
            "content": [*sent["content"], {"type": "tool_use", "id": "t1", "name": "n", "input": "oops"}],
            "usage": {"input_tokens": 3, "output_tokens": 4, "cache_creation_input_tokens": 2},
        }
    )
    assert whole.thinking == [Thinking("t", "s"), RedactedThinking("r")]
    assert whole.usage == Usage(3, 4, cache_write_tokens=2) and whole.tool_calls[0].arguments_error


def openai_deltas(*chunks: dict[str, object]) -> list[object]:
    stream = OpenAIStream()
    deltas = [delta for chunk in chunks for delta in stream.feed(chunk)]
    return deltas + list(stream.finish())


def test_openai_calls_end_at_the_finish_reason_and_other_choices_are_ignored() -> None:
    deltas = openai_deltas(
        {
            "model": "gpt",
            "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "f"}}]}}],
        },
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]}}
            ]
        },
        {"choices": [{"index": 1, "delta": {"content": "other choice"}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 6}},
    )
    assert deltas[0] == ToolCallStart("call_0", "f")
    assert not any(isinstance(d, TextDelta) for d in deltas)
    end = next(i for i, d in enumerate(deltas) if isinstance(d, ToolCallEnd))
    assert deltas[end] == ToolCallEnd(ToolCall("call_0", "f", {"a": 1}))
    assert deltas[end + 1 :] == [UsageDelta(Usage(5, 6)), StopDelta("tool_calls", "gpt")]


def test_openai_stream_cut_before_the_finish_still_ends_its_calls() -> None:
    deltas = openai_deltas(
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]}}
            ]
        },
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "[1]"}}]}}
            ]
        },
    )
    end = next(d for d in deltas if isinstance(d, ToolCallEnd))
    assert end.call.id == "c" and end.call.arguments_error == "the arguments are a JSON list"
    assert deltas[-1] == StopDelta(None, None)
