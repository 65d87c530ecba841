"""The agent loop driven by FauxProvider: turns, concurrency, error results, hooks, approval, events."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
from pydantic import BaseModel

from cubepi import (
    AgentTool,
    AgentToolResult,
    ImageContent,
    MCPError,
    TextContent,
    ToolUpdate,
    UserError,
    tool,
)
from cubepi.agent import (
    Agent,
    AgentEnd,
    AgentEvent,
    AgentState,
    BlockCall,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ReplaceArguments,
    ToolCallContext,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from cubepi.providers import (
    AssistantMessage,
    FauxProvider,
    Model,
    ProviderRequest,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

FAUX = Model(id="faux-1", provider="faux")


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def boom() -> str:
    """Always fails."""
    raise RuntimeError("the disk is on fire")


@tool(needs_approval=True)
async def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def agent_with(script: Any, tools: list[AgentTool], **kwargs: Any) -> tuple[Agent, FauxProvider]:
    provider = FauxProvider(script)
    return Agent(provider=provider, model=FAUX, tools=tools, **kwargs), provider


def results(agent: Agent) -> list[ToolResultMessage]:
    return [m for m in agent.messages if isinstance(m, ToolResultMessage)]


async def test_plain_answer_without_tools() -> None:
    agent, provider = agent_with(["Hello there."], [])
    answer = await agent.prompt("Hi")
    assert isinstance(answer, AssistantMessage) and answer.text == "Hello there."
    assert [type(m) for m in agent.messages] == [UserMessage, AssistantMessage]
    assert agent.messages[0].text == "Hi"
    (request,) = provider.requests
    assert request.model == FAUX and request.tools == () and request.system_prompt is None


async def test_a_single_reply_is_a_script_of_one_answer() -> None:
    agent, _ = agent_with("hello", [])
    assert (await agent.prompt("Hi")).text == "hello"
    with pytest.raises(UserError, match="ran out of scripted replies after 1"):
        await agent.prompt("again")
    calls, _ = agent_with(ToolCall("c1", "add", {"a": 1, "b": 2}), [add])
    with pytest.raises(UserError, match="ran out"):
        await calls.prompt("add")
    assert [m.text for m in results(calls)] == ["3"]


async def test_tool_call_then_answer_and_request_contents() -> None:
    agent, provider = agent_with(
        [ToolCall("c1", "add", {"a": 2, "b": 3}), "The sum is 5."], [add], system_prompt="Be brief."
    )
    answer = await agent.prompt("What is 2+3?")
    assert answer.text == "The sum is 5."
    assert [m.role for m in agent.messages] == ["user", "assistant", "tool", "assistant"]
    (result,) = results(agent)
    assert (result.tool_call_id, result.tool_name, result.text, result.is_error) == ("c1", "add", "5", False)
    assert result.details == {"value": 5}
    first, second = provider.requests
    assert first.tools == (add,) and first.system_prompt == "Be brief."
    assert len(first.messages) == 1 and len(second.messages) == 3
    assert second.messages[-1] == result


async def test_calls_of_one_turn_run_concurrently_and_results_keep_call_order() -> None:
    first_started = anyio.Event()
    second_started = anyio.Event()
    second_finished = anyio.Event()
    finished: list[str] = []

    @tool
    async def first() -> str:
        """Waits for the second call to start, then to finish."""
        first_started.set()
        await second_started.wait()
        await second_finished.wait()
        finished.append("first")
        return "first done"

    @tool
    async def second() -> str:
        """Waits for the first call to start."""
        second_started.set()
        await first_started.wait()
        finished.append("second")
        second_finished.set()
        return "second done"

    agent, _ = agent_with([[ToolCall("1", "first"), ToolCall("2", "second")], "ok"], [first, second])
    with anyio.fail_after(5):  # sequential execution would deadlock
        await agent.prompt("go")
    assert finished == ["second", "first"]
    assert [(r.tool_call_id, r.text) for r in results(agent)] == [("1", "first done"), ("2", "second done")]


async def test_sync_tools_run_concurrently_in_threads() -> None:
    import threading

    barrier = threading.Barrier(2, timeout=5)

    @tool
    def wait_for_peer(n: int) -> int:
        """Blocks until its peer runs too."""
        barrier.wait()
        return n

    agent, _ = agent_with(
        [[ToolCall("a", "wait_for_peer", {"n": 1}), ToolCall("b", "wait_for_peer", {"n": 2})], "ok"],
        [wait_for_peer],
    )
    await agent.prompt("go")
    assert [r.text for r in results(agent)] == ["1", "2"]


async def test_unknown_tool_is_an_error_result_and_the_loop_goes_on() -> None:
    agent, provider = agent_with([ToolCall("c1", "nope", {}), "sorry"], [add])
    answer = await agent.prompt("go")
    assert answer.text == "sorry"
    (result,) = results(agent)
    assert result.is_error and "Unknown tool 'nope'" in result.text and "add" in result.text
    assert result.details["reason"] == "unknown_tool"
    assert provider.requests[1].messages[-1] == result


async def test_invalid_arguments_are_an_error_result_and_never_reach_the_tool() -> None:
    calls: list[int] = []

    @tool
    def count(n: int) -> int:
        """Count."""
        calls.append(n)
        return n

    agent, _ = agent_with([ToolCall("c1", "count", {"n": "many"}), "sorry"], [count])
    await agent.prompt("go")
    (result,) = results(agent)
    assert result.is_error and result.text.startswith("Invalid arguments for tool 'count'")
    assert "n:" in result.text and result.details["reason"] == "invalid_arguments"
    assert calls == []


async def test_arguments_that_are_not_an_object_are_an_error_result() -> None:
    bad = ToolCall("c1", "add", arguments_error="the arguments are not valid JSON (Expecting value)")
    agent, _ = agent_with([bad, "sorry"], [add])
    await agent.prompt("go")
    (result,) = results(agent)
    assert result.is_error and "not valid JSON" in result.text


async def test_an_exception_in_a_tool_is_an_error_result() -> None:
    async def broken_transport(params: BaseModel, on_update: Any) -> AgentToolResult:
        raise MCPError("the server went away", tool_name="fetch", server="stdio: demo")

    class NoArgs(BaseModel):
        pass

    fetch = AgentTool(name="fetch", description="", parameters=NoArgs, run=broken_transport, origin="test")
    agent, _ = agent_with(
        [[ToolCall("1", "boom"), ToolCall("2", "fetch"), ToolCall("3", "add", {"a": 1, "b": 1})], "done"],
        [boom, fetch, add],
    )
    await agent.prompt("go")
    one, two, three = results(agent)
    assert one.is_error and "RuntimeError: the disk is on fire" in one.text
    assert isinstance(one.details["exception"], RuntimeError)
    assert two.is_error and "MCPError: the server went away" in two.text
    assert not three.is_error and three.text == "2"


async def test_error_results_from_the_tool_are_relayed_as_is() -> None:
    @tool
    def soft_fail() -> AgentToolResult:
        """Reports a failure."""
        return AgentToolResult.error("no such file")

    agent, _ = agent_with([ToolCall("1", "soft_fail"), "ok"], [soft_fail])
    await agent.prompt("go")
    assert results(agent)[0].is_error and results(agent)[0].text == "no such file"


async def test_calls_match_the_api_name_of_a_tool() -> None:
    dotted = add.replace(name="math.add", origin="test dotted")
    agent, _ = agent_with([ToolCall("1", "math_add", {"a": 1, "b": 2}), "ok"], [dotted])
    await agent.prompt("go")
    assert results(agent)[0].text == "3"


async def test_images_in_results_reach_the_transcript() -> None:
    @tool
    def snapshot() -> list[TextContent | ImageContent]:
        """A picture."""
        return [TextContent("here"), ImageContent(data="iVBORw0KGgo=", mime_type="image/png")]

    agent, _ = agent_with([ToolCall("1", "snapshot"), "nice"], [snapshot])
    await agent.prompt("go")
    (result,) = results(agent)
    assert result.text == "here" and result.images == [
        ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
    ]


# -- hooks ---------------------------------------------------------------------------------------------------


async def test_before_tool_call_blocks_with_a_reason() -> None:
    seen: list[ToolCallContext] = []

    def before(ctx: ToolCallContext) -> BlockCall | None:
        seen.append(ctx)
        return BlockCall("adding is forbidden today") if ctx.tool.name == "add" else None

    agent, _ = agent_with([ToolCall("1", "add", {"a": 1, "b": 2}), "ok"], [add], before_tool_call=before)
    await agent.prompt("go")
    (result,) = results(agent)
    assert result.is_error and "blocked: adding is forbidden today" in result.text
    assert result.details["block_reason"] == "adding is forbidden today"
    (ctx,) = seen
    assert ctx.tool is add and ctx.arguments == {"a": 1, "b": 2} and ctx.params is None
    assert ctx.tool_call.id == "1" and ctx.assistant_message.tool_calls == [ctx.tool_call]


async def test_before_tool_call_replaces_arguments_before_validation() -> None:
    async def coerce(ctx: ToolCallContext) -> ReplaceArguments:
        await anyio.lowlevel.checkpoint()
        return ReplaceArguments({key: int(str(value).strip()) for key, value in ctx.arguments.items()})

    agent, _ = agent_with(
        [ToolCall("1", "add", {"a": " 4 ", "b": "x5"[1:]}), "ok"], [add], before_tool_call=coerce
    )
    await agent.prompt("go")
    assert results(agent)[0].text == "9"


async def test_after_tool_call_rewrites_the_result() -> None:
    seen: list[tuple[ToolCallContext, AgentToolResult]] = []

    def after(ctx: ToolCallContext, result: AgentToolResult) -> AgentToolResult | None:
        seen.append((ctx, result))
        if result.is_error:
            return None
        return AgentToolResult(content=[TextContent(f"[redacted {len(result.text)} chars]")])

    agent, _ = agent_with(
        [[ToolCall("1", "add", {"a": 10, "b": 5}), ToolCall("2", "boom")], "ok"],
        [add, boom],
        after_tool_call=after,
    )
    await agent.prompt("go")
    one, two = results(agent)
    assert one.text == "[redacted 2 chars]" and two.is_error and "disk is on fire" in two.text
    ctx, _ = next(item for item in seen if item[0].tool is add)
    assert ctx.params is not None and ctx.params.model_dump() == {"a": 10, "b": 5}


async def test_a_raising_hook_propagates() -> None:
    def before(ctx: ToolCallContext) -> None:
        raise ValueError("bug in my hook")

    agent, _ = agent_with([ToolCall("1", "add", {"a": 1, "b": 2}), "ok"], [add], before_tool_call=before)
    with pytest.raises(ValueError, match="bug in my hook"):
        await agent.prompt("go")
    assert not agent.state.is_running
    # Every call is still answered, so the transcript can go back to a provider.
    (settled,) = results(agent)
    assert settled.is_error and "did not complete: the agent stopped: ValueError" in settled.text


async def test_cancelling_a_prompt_answers_the_pending_calls() -> None:
    started = anyio.Event()

    @tool
    async def hang() -> str:
        """Never finishes."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    agent, _ = agent_with(
        [[ToolCall("1", "hang"), ToolCall("2", "add", {"a": 1, "b": 1})], "ok"], [hang, add]
    )
    added_done = anyio.Event()
    agent.subscribe(
        lambda e, s=None: (
            added_done.set() if isinstance(e, ToolExecutionEnd) and e.tool_call_id == "2" else None
        )
    )
    async with anyio.create_task_group() as group:
        group.start_soon(agent.prompt, "go")
        with anyio.fail_after(10):
            await started.wait()
            await added_done.wait()
        group.cancel_scope.cancel()
    hung, added = results(agent)
    assert hung.is_error and "cancelled" in hung.text
    assert added.text == "2" and not added.is_error
    assert not agent.state.is_running


# -- approval ------------------------------------------------------------------------------------------------


async def test_approval_granted_refused_and_missing() -> None:
    asked: list[str] = []

    async def approve(ctx: ToolCallContext) -> bool:
        assert ctx.params is not None
        asked.append(ctx.params.path)  # type: ignore[attr-defined]
        return bool(ctx.params.path.startswith("/tmp/"))  # type: ignore[attr-defined]

    script = [
        [ToolCall("1", "delete", {"path": "/tmp/x"}), ToolCall("2", "delete", {"path": "/etc/passwd"})],
        "ok",
    ]
    agent, _ = agent_with(script, [delete], approve=approve)
    await agent.prompt("go")
    granted, refused = results(agent)
    assert granted.text == "deleted /tmp/x" and not granted.is_error
    assert refused.is_error and "refused" in refused.text and refused.details["reason"] == "not_approved"
    assert sorted(asked) == ["/etc/passwd", "/tmp/x"]

    agent, _ = agent_with([ToolCall("1", "delete", {"path": "/tmp/x"}), "ok"], [delete])
    await agent.prompt("go")
    (missing,) = results(agent)
    assert missing.is_error and "no approve callback" in missing.text


async def test_approval_policy_predicate_and_tools_without_it() -> None:
    asked: list[str] = []
    guarded = add.replace(needs_approval=lambda params: params.a > 100)

    def approve(ctx: ToolCallContext) -> bool:
        asked.append(ctx.tool_call.id)
        return False

    script = [[ToolCall("small", "add", {"a": 1, "b": 1}), ToolCall("big", "add", {"a": 1000, "b": 1})], "ok"]
    agent, _ = agent_with(script, [guarded], approve=approve)
    await agent.prompt("go")
    small, big = results(agent)
    assert small.text == "2" and big.is_error and asked == ["big"]


# -- events --------------------------------------------------------------------------------------------------


async def test_events_in_order_with_updates_and_state() -> None:
    @tool
    async def slow(on_update: Any = None) -> str:
        """Reports progress."""
        await on_update(ToolUpdate(progress=1, total=2, message="half"))
        return "done"

    agent, _ = agent_with([ToolCall("1", "slow"), "finished"], [slow])
    events: list[AgentEvent] = []
    states: list[AgentState] = []

    def listener(event: AgentEvent, state: AgentState | None = None) -> None:
        events.append(event)
        assert state is not None
        states.append(state)

    agent.subscribe(listener)
    await agent.prompt("go")
    kinds = [
        e.type
        + (f":{e.message.role}" if isinstance(e, (MessageStart, MessageEnd)) else "")
        + (f":{e.delta.type}" if isinstance(e, MessageUpdate) else "")
        for e in events
    ]
    assert kinds == [
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant",
        "message_update:tool_call_start",
        "message_update:tool_call_arguments",
        "message_update:tool_call_end",
        "message_update:stop",
        "message_end:assistant",
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
        "message_start:tool",
        "message_end:tool",
        "turn_end",
        "turn_start",
        "message_start:assistant",
        "message_update:text_delta",
        "message_update:stop",
        "message_end:assistant",
        "turn_end",
        "agent_end",
    ]
    assert all(state is agent.state for state in states)
    start = next(e for e in events if isinstance(e, ToolExecutionStart))
    update = next(e for e in events if isinstance(e, ToolExecutionUpdate))
    end = next(e for e in events if isinstance(e, ToolExecutionEnd))
    assert (start.tool_call_id, start.tool_name, start.arguments) == ("1", "slow", {})
    assert update.update == ToolUpdate(progress=1, total=2, message="half")
    assert end.result.text == "done" and not end.is_error
    turns = [e for e in events if isinstance(e, (TurnStart, TurnEnd))]
    assert [t.turn for t in turns] == [1, 1, 2, 2]
    first_end = turns[1]
    assert isinstance(first_end, TurnEnd) and [r.text for r in first_end.tool_results] == ["done"]
    final = events[-1]
    assert isinstance(final, AgentEnd) and final.error is None and final.messages == agent.messages


async def test_updates_from_a_sync_tool_in_a_worker_thread() -> None:
    @tool
    def crunch(on_update: Any = None) -> str:
        """Reports progress from its thread."""
        on_update(ToolUpdate(progress=0.5, message="halfway"))
        return "crunched"

    agent, _ = agent_with([ToolCall("1", "crunch"), "ok"], [crunch])
    updates: list[ToolUpdate] = []
    agent.subscribe(
        lambda e, s=None: updates.append(e.update) if isinstance(e, ToolExecutionUpdate) else None
    )
    await agent.prompt("go")
    assert updates == [ToolUpdate(progress=0.5, message="halfway")]
    assert results(agent)[0].text == "crunched"


def _report_from_own_threads(on_update: Any, count: int) -> None:
    threads = [
        threading.Thread(target=on_update, args=(ToolUpdate(progress=i + 1, total=count),))
        for i in range(count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


async def test_updates_from_threads_a_sync_tool_starts_itself() -> None:
    @tool
    def fan_out(on_update: Any = None) -> str:
        """Reports progress from threads of its own."""
        _report_from_own_threads(on_update, 3)
        return "fanned"

    agent, _ = agent_with([ToolCall("1", "fan_out"), "ok"], [fan_out])
    updates: list[ToolUpdate] = []
    agent.subscribe(lambda e: updates.append(e.update) if isinstance(e, ToolExecutionUpdate) else None)
    await agent.prompt("go")
    assert results(agent)[0].text == "fanned" and not results(agent)[0].is_error
    assert sorted(u.progress or 0 for u in updates) == [1, 2, 3]


async def test_updates_from_threads_of_a_hand_built_tool() -> None:
    class NoArgs(BaseModel):
        pass

    async def run(params: BaseModel, on_update: Any) -> AgentToolResult:
        await anyio.to_thread.run_sync(_report_from_own_threads, on_update, 2)
        return AgentToolResult(content=[TextContent("threaded")])

    threaded = AgentTool(name="threaded", description="", parameters=NoArgs, run=run)
    agent, _ = agent_with([ToolCall("1", "threaded"), "ok"], [threaded])
    updates: list[ToolUpdate] = []
    agent.subscribe(lambda e: updates.append(e.update) if isinstance(e, ToolExecutionUpdate) else None)
    await agent.prompt("go")
    assert results(agent)[0].text == "threaded"
    assert sorted(u.progress or 0 for u in updates) == [1, 2]


async def test_state_while_tools_run() -> None:
    snapshots: list[tuple[bool, int, set[str]]] = []

    def listener(event: AgentEvent, state: AgentState) -> None:
        if isinstance(event, ToolExecutionStart):
            snapshots.append((state.is_running, state.turn, set(state.running_tool_calls)))

    agent, _ = agent_with(
        [[ToolCall("1", "add", {"a": 1, "b": 1}), ToolCall("2", "add", {"a": 1, "b": 2})], "ok"], [add]
    )
    agent.subscribe(listener)
    await agent.prompt("go")
    assert snapshots[0] == (True, 1, {"1", "2"})
    assert not agent.state.is_running and agent.state.turn == 0 and not agent.state.running_tool_calls


async def test_async_and_one_argument_listeners_and_unsubscribe() -> None:
    seen_async: list[str] = []
    seen_one: list[str] = []

    async def async_listener(event: AgentEvent, state: AgentState) -> None:
        await anyio.lowlevel.checkpoint()
        seen_async.append(event.type)

    agent, _ = agent_with(["one", "two"], [])
    unsubscribe = agent.subscribe(async_listener)
    agent.subscribe(lambda e: seen_one.append(e.type))
    agent.subscribe(lambda e, s=None: None)  # the documented form
    await agent.prompt("first")
    assert seen_async == seen_one and seen_async[0] == "agent_start" and seen_async[-1] == "agent_end"
    count = len(seen_async)
    unsubscribe()
    unsubscribe()  # idempotent
    await agent.prompt("second")
    assert len(seen_async) == count and len(seen_one) == 2 * count


async def test_a_raising_listener_propagates_even_from_a_tool_task() -> None:
    def listener(event: AgentEvent, state: AgentState) -> None:
        if isinstance(event, ToolExecutionEnd):
            raise KeyError("listener bug")

    agent, _ = agent_with([ToolCall("1", "add", {"a": 1, "b": 1}), "ok"], [add])
    agent.subscribe(listener)
    with pytest.raises(KeyError, match="listener bug"):
        await agent.prompt("go")


# -- construction and failures -------------------------------------------------------------------------------


def test_duplicate_tool_names_name_both_origins() -> None:
    other = add.replace(origin="mcp stdio: calculator")
    with pytest.raises(UserError) as info:
        Agent(provider=FauxProvider([]), model=FAUX, tools=[add, other])
    message = str(info.value)
    assert "'add'" in message and "mcp stdio: calculator" in message and "test_agent_loop.add" in message


def test_model_must_match_the_provider() -> None:
    with pytest.raises(UserError, match="provider 'anthropic'"):
        Agent(provider=FauxProvider([]), model=Model(id="claude", provider="anthropic"))
    with pytest.raises(UserError, match="AgentTool"):
        Agent(provider=FauxProvider([]), model=FAUX, tools=[add.name])  # type: ignore[list-item]


async def test_a_failing_provider_propagates_and_ends_the_agent_with_the_error() -> None:
    def fail(request: ProviderRequest) -> str:
        raise ConnectionError("rate limited")

    agent, _ = agent_with(fail, [])
    ends: list[AgentEnd] = []
    agent.subscribe(lambda e, s=None: ends.append(e) if isinstance(e, AgentEnd) else None)
    with pytest.raises(ConnectionError):
        await agent.prompt("go")
    assert isinstance(ends[0].error, ConnectionError)
    assert [m.role for m in agent.messages] == ["user"] and not agent.state.is_running


async def test_one_prompt_at_a_time() -> None:
    gate = anyio.Event()
    asked = anyio.Event()

    async def slow_reply(request: ProviderRequest) -> str:
        asked.set()
        await gate.wait()
        return "done"

    agent, _ = agent_with(slow_reply, [])
    async with anyio.create_task_group() as group:
        group.start_soon(agent.prompt, "first")
        with anyio.fail_after(5):
            await asked.wait()
        with pytest.raises(UserError, match="already running"):
            await agent.prompt("second")
        gate.set()


async def test_faux_provider_script_runs_out_and_takes_callables() -> None:
    agent, _ = agent_with([lambda request: f"{len(request.messages)} messages so far"], [])
    assert (await agent.prompt("go")).text == "1 messages so far"
    with pytest.raises(UserError, match="ran out of scripted replies"):
        await agent.prompt("again")
    auto = FauxProvider([ToolCall("", "add", {"a": 1, "b": 1}), "ok"])
    agent = Agent(provider=auto, model=FAUX, tools=[add])
    await agent.prompt("go")
    assert results(agent)[0].tool_call_id == "faux-1"


async def test_max_turns_stops_a_model_that_never_stops_calling_tools() -> None:
    def forever(request: ProviderRequest) -> Any:
        return ToolCall(f"c{len(request.messages)}", "add", {"a": 1, "b": 1})

    agent, provider = agent_with(forever, [add], max_turns=3)
    with pytest.raises(UserError, match="still calling tools after 3 turns"):
        await agent.prompt("loop")
    assert len(provider.requests) == 3
    assert len(results(agent)) == 3
    with pytest.raises(UserError, match="max_turns"):
        Agent(provider=FauxProvider([]), model=FAUX, max_turns=0)
