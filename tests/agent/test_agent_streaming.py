"""The agent streams: MessageUpdate events, agent.stream, abort and cancellation, usage (FauxProvider)."""

from __future__ import annotations

from contextlib import aclosing

import anyio
import anyio.lowlevel
import pytest

from cubepi import UserError, tool
from cubepi.agent import (
    Agent,
    AgentEnd,
    AgentEvent,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolExecutionStart,
    TurnEnd,
)
from cubepi.providers import (
    AssistantMessage,
    FauxProvider,
    Model,
    ProviderRequest,
    RedactedThinking,
    StopDelta,
    TextDelta,
    Thinking,
    ThinkingDelta,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResultMessage,
    Usage,
    UsageDelta,
)
from cubepi.tools import TextContent

MODEL = Model(id="faux", provider="faux")
ran: list[str] = []


@tool
def note(text: str) -> str:
    """Write a note."""
    ran.append(text)
    return "noted"


def agent_with(script: object) -> Agent:
    ran.clear()
    return Agent(FauxProvider(script), MODEL, tools=[note])  # type: ignore[arg-type]


async def test_updates_carry_each_piece_and_the_message_so_far() -> None:
    agent = agent_with(["Streaming answers arrive word by word."])
    seen: list[tuple[str, str]] = []
    events: list[AgentEvent] = []

    def listener(event: AgentEvent) -> None:
        events.append(event)
        if isinstance(event, MessageUpdate) and isinstance(event.delta, TextDelta):
            seen.append((event.delta.text, event.message.text))

    agent.subscribe(listener)
    answer = await agent.prompt("go")
    assert seen[:2] == [("Streaming ", "Streaming "), ("answers ", "Streaming answers ")]
    assert seen[-1][1] == answer.text == "Streaming answers arrive word by word."
    start = next(e for e in events if isinstance(e, MessageStart) and isinstance(e.message, AssistantMessage))
    end = next(e for e in events if isinstance(e, MessageEnd) and isinstance(e.message, AssistantMessage))
    assert start.message is end.message is answer is agent.messages[1]


async def test_a_tool_call_forms_before_it_joins_the_message() -> None:
    agent = agent_with([ToolCall("c1", "note", {"text": "a fairly long note to write"}), "ok"])
    snapshots: list[tuple[str, int]] = []

    def listener(event: AgentEvent) -> None:
        if isinstance(event, MessageUpdate):
            snapshots.append((event.delta.type, len(event.message.tool_calls)))

    agent.subscribe(listener)
    await agent.prompt("go")
    first_turn = snapshots[: snapshots.index(("stop", 1)) + 1]
    kinds = [kind for kind, _ in first_turn]
    assert kinds[0] == "tool_call_start" and kinds.count("tool_call_arguments") > 3
    assert all(count == 0 for kind, count in first_turn if kind != "tool_call_end" and kind != "stop")
    assert first_turn[-2:] == [("tool_call_end", 1), ("stop", 1)]
    assert ran == ["a fairly long note to write"]


async def test_stream_yields_the_same_events_as_a_listener() -> None:
    agent = agent_with([ToolCall("c1", "note", {"text": "x"}), "Final words here."])
    heard: list[AgentEvent] = []
    agent.subscribe(heard.append)
    streamed = [event async for event in agent.stream("go")]
    assert streamed == heard and streamed[0].type == "agent_start" and isinstance(streamed[-1], AgentEnd)
    assert isinstance(agent.messages[-1], AssistantMessage) and agent.messages[-1].text == "Final words here."
    assert len(agent._listeners) == 1  # the stream's own listener is gone


async def test_a_stream_while_a_prompt_runs_is_refused_and_hears_nothing_of_it() -> None:
    gate = anyio.Event()

    async def slow(request: ProviderRequest) -> str:
        await gate.wait()
        return "first"

    agent = agent_with(slow)
    async with anyio.create_task_group() as group:
        group.start_soon(agent.prompt, "one")
        await wait_until_running(agent)
        with pytest.raises(UserError, match="already running"):
            async for _ in agent.stream("two"):
                pass
        gate.set()
    assert len(agent._listeners) == 0 and agent.messages[-1].text == "first"


async def wait_until_running(agent: Agent) -> None:
    started = anyio.Event()
    unsubscribe = agent.subscribe(lambda e: started.set())
    if not agent.state.is_running:
        await started.wait()
    unsubscribe()


async def test_stream_raises_the_prompt_error_after_agent_end() -> None:
    def fail(request: ProviderRequest) -> str:
        raise ConnectionError("rate limited")

    agent = agent_with(fail)
    seen: list[str] = []
    with pytest.raises(ConnectionError, match="rate limited"):
        async for event in agent.stream("go"):
            seen.append(event.type)
    assert seen[-1] == "agent_end" and not agent.state.is_running


async def test_leaving_a_stream_early_cancels_the_prompt_and_keeps_the_transcript_valid() -> None:
    agent = agent_with(["one two three four five six", "again"])
    async with aclosing(agent.stream("go")) as events:
        async for event in events:
            if isinstance(event, MessageUpdate):
                break
    assert not agent.state.is_running
    partial = agent.messages[-1]
    assert isinstance(partial, AssistantMessage) and partial.aborted
    assert (await agent.prompt("more")).text == "again"


async def test_cancelling_prompt_mid_arguments_keeps_text_and_runs_no_call() -> None:
    reply = AssistantMessage(
        content=[TextContent("Writing it down.")],
        tool_calls=[
            ToolCall("c1", "note", {"text": "short"}),
            ToolCall("c2", "note", {"text": "a longer one"}),
        ],
    )
    agent = agent_with([reply, "fine"])
    with anyio.CancelScope() as scope:

        def listener(event: AgentEvent) -> None:
            delta = event.delta if isinstance(event, MessageUpdate) else None
            if isinstance(delta, ToolCallArgumentsDelta) and delta.id == "c2":
                scope.cancel()

        unsubscribe = agent.subscribe(listener)
        await agent.prompt("go")
    unsubscribe()
    assert scope.cancelled_caught and not agent.state.is_running and ran == []
    _, partial, result = agent.messages
    assert isinstance(partial, AssistantMessage) and partial.aborted and partial.text == "Writing it down."
    assert [c.id for c in partial.tool_calls] == ["c1"]
    assert isinstance(result, ToolResultMessage) and result.is_error and result.tool_call_id == "c1"
    assert "did not complete" in result.text
    assert (await agent.prompt("and now?")).text == "fine" and ran == []


async def test_abort_while_a_tool_runs_cancels_it_and_prompt_returns() -> None:
    started = anyio.Event()

    @tool
    async def wait_forever() -> str:
        """Never finishes."""
        started.set()
        await anyio.sleep_forever()
        return "unreachable"

    agent = Agent(FauxProvider([ToolCall("w", "wait_forever"), "next"]), MODEL, tools=[wait_forever])
    events: list[AgentEvent] = []
    agent.subscribe(events.append)

    async def abort_once_started() -> None:
        await started.wait()
        agent.abort()

    async with anyio.create_task_group() as group:
        group.start_soon(abort_once_started)
        answer = await agent.prompt("go")
    assert [c.id for c in answer.tool_calls] == ["w"] and not answer.aborted
    result = agent.messages[-1]
    assert isinstance(result, ToolResultMessage) and result.is_error and "did not complete" in result.text
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.aborted and end.error is None
    assert isinstance(events[-2], TurnEnd) and events[-2].tool_results == [result]
    assert isinstance(events[-3], ToolExecutionStart)  # no message_end: no response was streaming
    assert any(isinstance(e, ToolExecutionStart) for e in events)
    assert (await agent.prompt("again")).text == "next"


async def test_abort_before_anything_streamed_and_abort_when_idle() -> None:
    agent = agent_with(["never seen", "seen"])
    agent.abort()  # idle: nothing happens

    def listener(event: AgentEvent) -> None:
        if isinstance(event, MessageStart) and isinstance(event.message, AssistantMessage):
            agent.abort()

    unsubscribe = agent.subscribe(listener)
    events: list[AgentEvent] = []
    unsubscribe_events = agent.subscribe(events.append)
    answer = await agent.prompt("go")
    unsubscribe()
    unsubscribe_events()
    assert answer.aborted and answer.text == "" and answer is agent.messages[-1]
    assert [e.type for e in events[-4:]] == ["message_start", "message_end", "turn_end", "agent_end"]
    assert isinstance(events[-3], MessageEnd) and events[-3].message is answer
    assert (await agent.prompt("again")).text == "seen"


async def test_abort_before_the_user_message_joined_returns_an_empty_aborted_answer() -> None:
    agent = agent_with(["unused"])
    events: list[AgentEvent] = []

    async def listener(event: AgentEvent) -> None:
        events.append(event)
        if event.type == "turn_start":
            agent.abort()
            await anyio.lowlevel.checkpoint()

    agent.subscribe(listener)
    answer = await agent.prompt("go")
    assert answer.aborted and answer.model == "faux" and agent.messages == []
    assert [e.type for e in events] == ["agent_start", "turn_start", "turn_end", "agent_end"]
    turn_end = events[2]
    assert isinstance(turn_end, TurnEnd) and turn_end.message is answer and turn_end.tool_results == []


async def test_a_provider_that_only_completes_streams_as_one_delta_sequence() -> None:
    class Whole:
        name = "faux"

        async def complete(self, request: ProviderRequest) -> AssistantMessage:
            return AssistantMessage(
                content=[TextContent("all at once")], stop_reason="end_turn", usage=Usage(3, 4)
            )

    agent = Agent(Whole(), MODEL)
    deltas: list[object] = []
    agent.subscribe(lambda e: deltas.append(e.delta) if isinstance(e, MessageUpdate) else None)
    answer = await agent.prompt("go")
    assert deltas == [TextDelta("all at once"), UsageDelta(Usage(3, 4)), StopDelta("end_turn", None)]
    assert answer.text == "all at once" and answer.usage == Usage(3, 4)


async def test_thinking_streams_and_usage_sums_over_the_prompt() -> None:
    thinking = [Thinking("Let me think about it.", "sig-1"), RedactedThinking("opaque")]
    first = AssistantMessage(
        tool_calls=[ToolCall("c1", "note", {"text": "x"})], usage=Usage(10, 2, 5, 1), thinking=thinking
    )
    last = AssistantMessage(content=[TextContent("done")], usage=Usage(20, 3))
    agent = agent_with([first, last])
    events: list[AgentEvent] = []
    agent.subscribe(events.append)
    await agent.prompt("go")
    pieces = [
        e.delta.thinking
        for e in events
        if isinstance(e, MessageUpdate) and isinstance(e.delta, ThinkingDelta)
    ]
    assert len(pieces) == 5 and "".join(pieces) == "Let me think about it."
    kept = agent.messages[1]
    assert isinstance(kept, AssistantMessage) and kept.thinking == thinking
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.usage == Usage(30, 5, 5, 1)


def test_usages_add_up() -> None:
    assert Usage(1, 2, 3, 4) + Usage(10, 20, 30, 40) == Usage(11, 22, 33, 44)


async def test_tool_call_deltas_of_a_faux_reply_rebuild_the_call() -> None:
    agent = agent_with([ToolCall("c1", "note", {"text": "rebuild me"}), "ok"])
    fragments: list[str] = []
    ends: list[ToolCall] = []

    def listener(event: AgentEvent) -> None:
        if isinstance(event, MessageUpdate):
            if isinstance(event.delta, ToolCallArgumentsDelta):
                fragments.append(event.delta.arguments)
            elif isinstance(event.delta, ToolCallEnd):
                ends.append(event.delta.call)
            elif isinstance(event.delta, ToolCallStart):
                assert event.delta.name == "note"

    agent.subscribe(listener)
    await agent.prompt("go")
    assert "".join(fragments) == '{"text": "rebuild me"}' and ends == [
        ToolCall("c1", "note", {"text": "rebuild me"})
    ]


async def test_a_listener_failing_on_a_tool_result_still_leaves_every_result_in_the_transcript() -> None:
    agent = agent_with([[ToolCall("a", "note", {"text": "1"}), ToolCall("b", "note", {"text": "2"})], "x"])

    def listener(event: AgentEvent) -> None:
        if isinstance(event, MessageEnd) and isinstance(event.message, ToolResultMessage):
            raise RuntimeError("listener bug")

    agent.subscribe(listener)
    with pytest.raises(RuntimeError, match="listener bug"):
        await agent.prompt("go")
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [(m.tool_call_id, m.text) for m in results] == [("a", "noted"), ("b", "noted")]
