"""OpenAIProvider streams through the official SDK from a live server speaking the Chat Completions chunks."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest
from _wire import CUT, Hold, openai_chunks, sse, stream_server
from conftest import LeakChecker

from cubepi import tool
from cubepi.agent import Agent, AgentEnd, AgentEvent, MessageUpdate
from cubepi.providers import (
    AssistantMessage,
    Model,
    OpenAIProvider,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStart,
    Usage,
)

openai = pytest.importorskip("openai")

MODEL = Model(id="gpt-4.1", provider="openai")
ran: list[str] = []


@tool
def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    ran.append(query)
    return f"found {query}"


def completion(content: str | None, calls: list[tuple[str, dict[str, Any]]], finish: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": json.dumps(args)}}
            for call_id, args in calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4.1-2025-04-14",
        "system_fingerprint": "fp_1",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": 82,
            "completion_tokens": 17,
            "total_tokens": 99,
            "prompt_tokens_details": {"cached_tokens": 64},
        },
    }


FINAL = completion("All done.", [], "stop")


@pytest.fixture
async def client_for() -> AsyncIterator[Any]:
    clients: list[Any] = []

    def make(url: str) -> Any:
        client = openai.AsyncOpenAI(api_key="sk-test", base_url=f"{url}/v1", max_retries=0)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


async def test_text_and_several_tool_calls_stream_with_usage(client_for: Any) -> None:
    ran.clear()
    calls = completion(
        "Looking both up.",
        [("call_a", {"query": "the first rather long query"}), ("call_b", {"query": "second"})],
        "tool_calls",
    )
    with stream_server([openai_chunks(calls), openai_chunks(FINAL)]) as server:
        agent = Agent(OpenAIProvider(client=client_for(server.url)), MODEL, tools=[lookup])
        events: list[AgentEvent] = []
        agent.subscribe(events.append)
        answer = await agent.prompt("look up two things")
    assert (
        answer.text == "All done." and answer.stop_reason == "stop" and answer.model == "gpt-4.1-2025-04-14"
    )
    assert answer.usage == Usage(82, 17, cache_read_tokens=64)
    (end,) = [e for e in events if isinstance(e, AgentEnd)]
    assert end.usage == Usage(164, 34, cache_read_tokens=128)
    deltas = [e.delta for e in events if isinstance(e, MessageUpdate)]
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "Looking both up.All done."
    assert [(d.id, d.name) for d in deltas if isinstance(d, ToolCallStart)] == [
        ("call_a", "lookup"),
        ("call_b", "lookup"),
    ]
    fragments = [d.arguments for d in deltas if isinstance(d, ToolCallArgumentsDelta) and d.id == "call_a"]
    assert len(fragments) > 5 and json.loads("".join(fragments)) == {"query": "the first rather long query"}
    assert sorted(ran) == ["second", "the first rather long query"]  # run concurrently, in threads
    first = server.bodies[0]
    assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    assert server.bodies[1]["messages"][1] == {
        "role": "assistant",
        "content": "Looking both up.",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"query": "the first rather long query"}'},
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"query": "second"}'},
            },
        ],
    }


async def test_abort_mid_arguments_runs_nothing_and_the_next_prompt_goes_on(
    client_for: Any, leaks: LeakChecker
) -> None:
    ran.clear()
    frames = openai_chunks(
        completion("Let me check.", [("call_a", {"query": "something long"})], "tool_calls")
    )
    first_fragment = next(i for i, f in enumerate(frames) if b'"arguments": "{\\"' in f)
    hold = Hold()
    script = [*frames[: first_fragment + 1], hold, *frames[first_fragment + 1 :]]
    with stream_server([script, openai_chunks(FINAL)]) as server:
        agent = Agent(OpenAIProvider(client=client_for(server.url)), MODEL, tools=[lookup])

        def listener(event: AgentEvent) -> None:
            if isinstance(event, MessageUpdate) and isinstance(event.delta, ToolCallArgumentsDelta):
                agent.abort()

        agent.subscribe(listener)
        answer = await agent.prompt("check")
        assert await anyio.to_thread.run_sync(hold.reached.wait, 10) and not hold.released.is_set()
        assert answer.aborted and answer.text == "Let me check." and answer.tool_calls == [] and ran == []
        again = await agent.prompt("go on")
    assert again.text == "All done." and ran == []
    assert server.bodies[1]["messages"] == [
        {"role": "user", "content": "check"},
        {"role": "assistant", "content": "Let me check."},
        {"role": "user", "content": "go on"},
    ]


async def test_an_error_chunk_and_a_cut_connection_raise_the_sdk_errors(client_for: Any) -> None:
    frames = openai_chunks(completion("Half of an answer.", [], "stop"))
    error = sse(None, {"error": {"message": "The server had an error", "type": "server_error"}})
    with stream_server([[*frames[:3], error], [*frames[:2], CUT], openai_chunks(FINAL)]) as server:
        agent = Agent(OpenAIProvider(client=client_for(server.url)), MODEL)
        with pytest.raises(openai.APIError, match="The server had an error"):
            await agent.prompt("one")
        with pytest.raises(openai.APIConnectionError) as cut:
            await agent.prompt("two")
        assert isinstance(cut.value.__cause__, httpx2.RemoteProtocolError)
        partial = agent.messages[1]
        assert isinstance(partial, AssistantMessage) and partial.stop_reason == "error"
        assert (await agent.prompt("three")).text == "All done."
    assert server.bodies[2]["messages"] == [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "Half of an"},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "Half "},
        {"role": "user", "content": "three"},
    ]
