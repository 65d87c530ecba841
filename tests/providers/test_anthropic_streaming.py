"""AnthropicProvider streams through the official SDK from a live server speaking the Messages SSE stream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest
from _wire import CUT, Hold, anthropic_event, anthropic_events, sse, stream_server
from conftest import LeakChecker

from cubepi import tool
from cubepi.agent import Agent, AgentEnd, AgentEvent, MessageUpdate
from cubepi.providers import (
    AnthropicProvider,
    AssistantMessage,
    Model,
    RedactedThinking,
    TextDelta,
    Thinking,
    ThinkingDelta,
    ThinkingSignatureDelta,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResultMessage,
    Usage,
)

anthropic = pytest.importorskip("anthropic")

MODEL = Model(id="claude-sonnet-4-5-20250929", provider="anthropic")
ran: list[dict[str, Any]] = []


@tool
def read_file(path: str, limit: int = 10) -> str:
    """Read a file.

    Args:
        path: The file.
        limit: At most this many lines.
    """
    ran.append({"path": path, "limit": limit})
    return f"contents of {path}"


def message(content: list[dict[str, Any]], stop: str = "end_turn", **usage: int) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": MODEL.id,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5, **usage},
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "read_file", "input": arguments}


FINAL = message([text("Done.")])


@pytest.fixture
async def client_for() -> AsyncIterator[Any]:
    clients: list[Any] = []

    def make(url: str) -> Any:
        client = anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=url, max_retries=0)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


def recorded(agent: Agent) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    agent.subscribe(events.append)
    return events


async def test_text_streams_in_pieces_with_usage(client_for: Any) -> None:
    reply = message(
        [text("Hello there, streaming world.")], cache_read_input_tokens=7, cache_creation_input_tokens=3
    )
    with stream_server([anthropic_events(reply)]) as server:
        agent = Agent(AnthropicProvider(client=client_for(server.url)), MODEL)
        events = recorded(agent)
        answer = await agent.prompt("hi")
    texts = [e.delta.text for e in events if isinstance(e, MessageUpdate) and isinstance(e.delta, TextDelta)]
    assert len(texts) > 3 and "".join(texts) == "Hello there, streaming world."
    assert answer.text == "Hello there, streaming world." and answer.stop_reason == "end_turn"
    assert answer.usage == Usage(10, 5, cache_read_tokens=7, cache_write_tokens=3)
    assert answer.model == MODEL.id and server.bodies[0]["stream"] is True
    (end,) = [e for e in events if isinstance(e, AgentEnd)]
    assert end.usage == answer.usage and not end.aborted


async def test_text_and_several_tool_calls_with_arguments_in_many_chunks(client_for: Any) -> None:
    ran.clear()
    calls = message(
        [
            text("Reading both."),
            tool_use("toolu_1", {"path": "/tmp/a-long-file-name.txt", "limit": 3}),
            text("And the other."),
            tool_use("toolu_2", {"path": "/tmp/b.txt"}),
        ],
        stop="tool_use",
    )
    with stream_server([anthropic_events(calls), anthropic_events(FINAL)]) as server:
        agent = Agent(AnthropicProvider(client=client_for(server.url)), MODEL, tools=[read_file])
        events = recorded(agent)
        answer = await agent.prompt("read a and b")
    assert answer.text == "Done."
    deltas = [e.delta for e in events if isinstance(e, MessageUpdate)]
    fragments = [d.arguments for d in deltas if isinstance(d, ToolCallArgumentsDelta) and d.id == "toolu_1"]
    assert len(fragments) > 4
    starts = [d for d in deltas if isinstance(d, ToolCallStart)]
    assert [(d.id, d.name) for d in starts] == [("toolu_1", "read_file"), ("toolu_2", "read_file")]
    ends = [d.call for d in deltas if isinstance(d, ToolCallEnd)]
    assert [c.arguments for c in ends] == [
        {"path": "/tmp/a-long-file-name.txt", "limit": 3},
        {"path": "/tmp/b.txt"},
    ]
    first = agent.messages[1]
    assert isinstance(first, AssistantMessage) and first.text == "Reading both.\nAnd the other."
    assert sorted(ran, key=lambda call: call["path"]) == [  # run concurrently, in threads
        {"path": "/tmp/a-long-file-name.txt", "limit": 3},
        {"path": "/tmp/b.txt", "limit": 10},
    ]
    assert server.bodies[1]["messages"][1] == {
        "role": "assistant",
        "content": [
            text("Reading both."),
            text("And the other."),
            tool_use("toolu_1", {"path": "/tmp/a-long-file-name.txt", "limit": 3}),
            tool_use("toolu_2", {"path": "/tmp/b.txt"}),
        ],
    }


async def test_thinking_streams_and_goes_back_unchanged_with_the_tool_results(client_for: Any) -> None:
    thinking = {
        "type": "thinking",
        "thinking": "The user wants a file; I should read it.",
        "signature": "EqQBsig==",
    }
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
    call = tool_use("toolu_1", {"path": "/tmp/a.txt"})
    first = message([thinking, redacted, text("Let me look."), call], stop="tool_use")

    def second(body: dict[str, Any]) -> Any:
        # What the Messages API demands with thinking and tool use: the blocks back, unchanged, first.
        assistant = body["messages"][1]
        if assistant["content"][:2] != [thinking, redacted] or body["thinking"]["budget_tokens"] != 1024:
            return (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "thinking"}})
        return anthropic_events(FINAL)

    with stream_server([anthropic_events(first), second]) as server:
        provider = AnthropicProvider(
            client=client_for(server.url), thinking={"type": "enabled", "budget_tokens": 1024}
        )
        agent = Agent(provider, Model(MODEL.id, "anthropic", max_tokens=2048), tools=[read_file])
        events = recorded(agent)
        answer = await agent.prompt("read /tmp/a.txt")
    assert answer.text == "Done."
    deltas = [e.delta for e in events if isinstance(e, MessageUpdate)]
    assert "".join(d.thinking for d in deltas if isinstance(d, ThinkingDelta)) == thinking["thinking"]
    assert [d.signature for d in deltas if isinstance(d, ThinkingSignatureDelta)] == ["EqQBsig=="]
    kept = agent.messages[1]
    assert isinstance(kept, AssistantMessage)
    assert kept.thinking == [Thinking(thinking["thinking"], "EqQBsig=="), RedactedThinking(redacted["data"])]
    assert server.bodies[0]["thinking"] == {"type": "enabled", "budget_tokens": 1024}


def held_after(frames: list[bytes], count: int) -> tuple[list[Any], Hold]:
    hold = Hold()
    return [*frames[:count], hold, *frames[count:]], hold


def abort_on_first(agent: Agent, kind: type) -> None:
    def listener(event: AgentEvent) -> None:
        if isinstance(event, MessageUpdate) and isinstance(event.delta, kind):
            agent.abort()

    agent.subscribe(listener)


async def test_abort_mid_text_keeps_the_partial_answer_and_the_next_prompt_goes_on(
    client_for: Any, leaks: LeakChecker
) -> None:
    frames = anthropic_events(message([text("The first words and then many more words.")]))
    # message_start, content_block_start, first text_delta; then the server waits.
    script, hold = held_after(frames, 3)
    with stream_server([script, anthropic_events(FINAL)]) as server:
        agent = Agent(AnthropicProvider(client=client_for(server.url)), MODEL)
        abort_on_first(agent, TextDelta)
        events = recorded(agent)
        answer = await agent.prompt("talk")
        # the rest was never sent
        assert await anyio.to_thread.run_sync(hold.reached.wait, 10) and not hold.released.is_set()
        assert answer.aborted and answer.text == "The f" and answer is agent.messages[1]
        assert [e.type for e in events][-3:] == ["message_end", "turn_end", "agent_end"]
        assert isinstance(events[-1], AgentEnd) and events[-1].aborted
        again = await agent.prompt("go on")
    assert again.text == "Done."
    assert server.bodies[1]["messages"] == [
        {"role": "user", "content": [text("talk")]},
        {"role": "assistant", "content": [text("The f")]},
        {"role": "user", "content": [text("go on")]},
    ]


async def test_abort_from_another_task_while_the_api_is_silent_closes_the_response(
    client_for: Any, leaks: LeakChecker
) -> None:
    frames = anthropic_events(message([text("Never sent.")]))
    script, hold = held_after(frames, 1)  # message_start only
    with stream_server([script]) as server:
        agent = Agent(AnthropicProvider(client=client_for(server.url)), MODEL)
        started = anyio.Event()  # the client read message_start: it now waits for what the server holds
        agent.subscribe(lambda event: started.set() if isinstance(event, MessageUpdate) else None)

        async def abort_when_held() -> None:
            await started.wait()
            assert await anyio.to_thread.run_sync(hold.reached.wait, 10)
            agent.abort()

        async with anyio.create_task_group() as group:
            group.start_soon(abort_when_held)
            answer = await agent.prompt("hi")
    assert answer.aborted and answer.text == "" and answer.usage == Usage(10, 1)
    assert agent.messages[-1] is answer


async def test_abort_mid_arguments_runs_no_call_and_drops_the_unfinished_one(
    client_for: Any, leaks: LeakChecker
) -> None:
    ran.clear()
    done = tool_use("toolu_1", {"path": "/tmp/a.txt"})
    forming = tool_use("toolu_2", {"path": "/tmp/a-very-long-path/b.txt"})
    frames = anthropic_events(message([text("Two reads."), done, forming], stop="tool_use"))
    toolu_2_start = next(i for i, f in enumerate(frames) if b"toolu_2" in f)
    script, _ = held_after(frames, toolu_2_start + 3)  # two fragments of toolu_2's arguments
    with stream_server([script, anthropic_events(FINAL)]) as server:
        agent = Agent(AnthropicProvider(client=client_for(server.url)), MODEL, tools=[read_file])
        seen: list[str] = []

        def listener(event: AgentEvent) -> None:
            delta = event.delta if isinstance(event, MessageUpdate) else None
            if isinstance(delta, ToolCallArgumentsDelta) and delta.id == "toolu_2" and delta.arguments:
                seen.append(delta.arguments)
                agent.abort()

        agent.subscribe(listener)
        answer = await agent.prompt("read")
        assert seen == ['{"pat'] and answer.aborted and ran == []
        assert [c.id for c in answer.tool_calls] == ["toolu_1"]
        result = agent.messages[2]
        assert isinstance(result, ToolResultMessage) and result.is_error and result.tool_call_id == "toolu_1"
        again = await agent.prompt("go on")
    assert again.text == "Done." and ran == []
    sent = server.bodies[1]["messages"]
    assert sent[1] == {"role": "assistant", "content": [text("Two reads."), done]}
    assert sent[2]["content"][0]["tool_use_id"] == "toolu_1" and sent[2]["content"][0]["is_error"] is True
    assert sent[3] == {"role": "user", "content": [text("go on")]}


async def test_an_error_event_mid_stream_raises_the_sdk_error_and_keeps_the_transcript_valid(
    client_for: Any,
) -> None:
    frames = anthropic_events(message([text("Partial answer that will not finish.")]))
    overloaded = anthropic_event(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    with stream_server([[*frames[:4], overloaded], anthropic_events(FINAL)]) as server:
        agent = Agent(AnthropicProvider(client=client_for(server.url)), MODEL)
        ends = recorded(agent)
        with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
            await agent.prompt("hi")
        partial = agent.messages[1]
        assert isinstance(partial, AssistantMessage) and partial.stop_reason == "error"
        assert partial.text == "Partial an"
        assert isinstance(ends[-1], AgentEnd) and isinstance(ends[-1].error, anthropic.APIStatusError)
        assert (await agent.prompt("again")).text == "Done."
    assert server.bodies[1]["messages"][1] == {"role": "assistant", "content": [text("Partial an")]}


async def test_a_connection_cut_mid_stream_raises_and_the_next_prompt_goes_on(client_for: Any) -> None:
    frames = anthropic_events(message([text("Cut short.")], stop="end_turn"))
    with stream_server([[*frames[:3], CUT], anthropic_events(FINAL)]) as server:
        agent = Agent(AnthropicProvider(client=client_for(server.url)), MODEL)
        # What the SDK raises for a body cut short: anthropic 2.17 wraps httpx2's error.
        cut = (httpx2.RemoteProtocolError, anthropic.APIConnectionError)
        with pytest.raises(cut, match="incomplete chunked read"):
            await agent.prompt("hi")
        assert (await agent.prompt("again")).text == "Done."
    assert [m["role"] for m in server.bodies[1]["messages"]] == ["user", "assistant", "user"]


def test_sse_helper_writes_event_lines() -> None:
    assert sse("ping", {"type": "ping"}) == b'event: ping\ndata: {"type": "ping"}\n\n'
