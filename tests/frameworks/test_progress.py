"""Progress in hand-offs: a real MCP tool's progress notifications (kitchen's `progress`, three steps) reach
each framework's own progress mechanism, through the framework's own runner: LangChain callbacks and
``astream_events`` (custom events), pydantic-ai's event stream (`RunContext.emit`), and, since the OpenAI
Agents SDK has none, the ``on_update`` given to `to_openai_agents`."""

from __future__ import annotations

import json
import pickle
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any
from uuid import UUID

import pytest
from agents import Agent as OpenAIAgent
from agents import Runner
from agents.tool_context import ToolContext
from conftest import PYTHON, SERVERS, RunningServer
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolCall
from langchain_core.runnables import RunnableLambda
from pydantic_ai import Agent, CustomEvent, RunContext, RunUsage
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.models.test import TestModel
from test_openai_agents import OFFLINE, Scripted

from cubepi import AgentTool, AgentToolResult, TextContent, ToolUpdate
from cubepi.frameworks.langchain import PROGRESS_EVENT
from cubepi.frameworks.pydantic_ai import ToolProgressEvent
from cubepi.mcp import HttpServer, StdioServer, load_mcp_tools
from cubepi.schema import schema_to_model

STEPS = [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]
DATA = [{"progress": p, "total": t, "message": m} for p, t, m in STEPS]


@pytest.fixture
async def progress(kitchen_http: RunningServer) -> AsyncIterator[AgentTool]:
    async with await load_mcp_tools(HttpServer(kitchen_http.url), include=["progress"]) as tools:
        yield tools[0]


def spy() -> tuple[AgentTool, list[Any]]:
    """A tool that records the `on_update` each call gets, and sends one update when there is one."""
    got: list[Any] = []

    async def run(params: Any, on_update: Any) -> AgentToolResult:
        got.append(on_update)
        if on_update is not None:
            await on_update(ToolUpdate(progress=1, message="hi"))
        return AgentToolResult([TextContent("ok")])

    model = schema_to_model({"type": "object"}, name="spy")
    return AgentTool(name="spy", description="Spy.", parameters=model, run=run), got


# LangChain: custom events on the tool's run


def lc_call(args: dict[str, Any]) -> ToolCall:
    return ToolCall(name="progress", args=args, id="call_1", type="tool_call")


async def test_langchain_progress_is_a_custom_event_in_astream_events(progress: AgentTool) -> None:
    reply = AIMessage("", tool_calls=[lc_call({"steps": 3})])
    model = GenericFakeChatModel(messages=iter([reply]), disable_streaming=True)
    chain = model | RunnableLambda(lambda message: message.tool_calls[0]) | progress.to_langchain()
    events = [event async for event in chain.astream_events("count to three", version="v2")]

    custom = [event for event in events if event["event"] == "on_custom_event"]
    assert [(event["name"], event["data"]) for event in custom] == [(PROGRESS_EVENT, d) for d in DATA]
    (tool_start,) = [event for event in events if event["event"] == "on_tool_start"]
    assert {event["run_id"] for event in custom} == {tool_start["run_id"]}  # the tool's run
    (tool_end,) = [event for event in events if event["event"] == "on_tool_end"]
    assert tool_end["data"]["output"].content == "done after 3 steps"


class Handler(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.tools: list[UUID] = []
        self.events: list[tuple[str, Any, UUID]] = []

    async def on_tool_start(self, serialized: Any, input_str: str, *, run_id: UUID, **kwargs: Any) -> None:
        self.tools.append(run_id)

    async def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append((name, data, run_id))


class SyncHandler(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append((name, data))


async def test_langchain_progress_reaches_a_callback_handler(progress: AgentTool) -> None:
    handler = Handler()
    message = await progress.to_langchain().ainvoke(lc_call({"steps": 3}), config={"callbacks": [handler]})
    assert message.content == "done after 3 steps"
    assert handler.events == [(PROGRESS_EVENT, d, handler.tools[0]) for d in DATA]

    synchronous = SyncHandler()  # `invoke`, inside a running loop: the call runs in a worker thread
    message = progress.to_langchain().invoke(lc_call({"steps": 2}), config={"callbacks": [synchronous]})
    assert message.content == "done after 2 steps"
    assert [data["message"] for _, data in synchronous.events] == ["step 1", "step 2"]


async def test_langchain_task_status_is_progress_too(tmp_path: Any) -> None:
    # A task-only tool (tests/servers/tasks.py): the task's status messages are its progress.
    pytest.importorskip("fastmcp_tasks")
    server = StdioServer(PYTHON, [str(SERVERS / "tasks.py")], env={"GATES": str(tmp_path)})
    async with await load_mcp_tools(server, include=["double"]) as tools:
        handler = Handler()
        double = tools[0].to_langchain()
        message = await double.ainvoke(
            ToolCall(name="double", args={"n": 21}, id="c", type="tool_call"), config={"callbacks": [handler]}
        )
    assert message.content == "42"
    messages = [data["message"] for _, data, _ in handler.events]
    assert messages[0] == "task working" and messages[-1] == "task completed"


async def test_langchain_relays_nothing_without_a_handler() -> None:
    tool, got = spy()
    assert (await tool.to_langchain().ainvoke({})) == "ok"
    assert got == [None]  # no callback: the call gets no `on_update` at all
    handler = Handler()
    await tool.to_langchain().ainvoke({}, config={"callbacks": [handler]})
    assert got[1] is not None
    assert [(name, data) for name, data, _ in handler.events] == [
        (PROGRESS_EVENT, {"progress": 1, "total": None, "message": "hi"})
    ]


# pydantic-ai: `ToolProgressEvent`s in the run's event stream


def pa_model(steps: int) -> FunctionModel:
    """A model that calls `progress` once, then answers "done" (both streamed and not)."""
    arguments = json.dumps({"steps": steps})

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("progress", arguments, "c1")])
        return ModelResponse(parts=[TextPart("done")])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {0: DeltaToolCall(name="progress", json_args=arguments, tool_call_id="c1")}
        else:
            yield "done"

    return FunctionModel(respond, stream_function=stream)


def progress_of(events: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (e.name, e.progress, e.total, e.message, e.tool_call_id, e.tool_name)
        for e in events
        if isinstance(e, ToolProgressEvent)
    ]


async def test_pydantic_ai_progress_reaches_the_event_stream_handler(progress: AgentTool) -> None:
    agent = Agent(pa_model(3), tools=[progress.to_pydantic_ai()])
    seen: list[Any] = []

    async def handler(ctx: Any, events: AsyncIterable[Any]) -> None:
        async for event in events:
            seen.append(event)

    result = await agent.run("count to three", event_stream_handler=handler)
    assert result.output == "done"
    expected = [("cubepi.progress", p, t, m, "c1", "progress") for p, t, m in STEPS]
    assert progress_of(seen) == expected
    assert all(isinstance(e, CustomEvent) for e in seen if isinstance(e, ToolProgressEvent))

    async with agent.run_stream_events("count to three") as stream:
        assert progress_of([event async for event in stream]) == expected

    assert (await agent.run("count to three")).output == "done"  # nobody listening: the run is unchanged


async def test_pydantic_ai_progress_outside_a_run_is_dropped() -> None:
    # A RunContext made by hand (a test of your own calling the tool) has no stream to emit into.
    tool, got = spy()
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    returned = await tool.to_pydantic_ai().function(ctx)
    assert got[0] is not None and returned.return_value == "ok"


def test_pydantic_ai_progress_events_pickle() -> None:
    event = ToolProgressEvent(progress=1.0, total=2.0, message="half")
    assert event.name == "cubepi.progress"
    assert pickle.loads(pickle.dumps(event)) == event


# OpenAI Agents SDK: no progress mechanism; the `on_update` given to the hand-off


async def test_openai_agents_progress_reaches_on_update_with_the_tool_context(progress: AgentTool) -> None:
    got: list[tuple[Any, str, ToolUpdate]] = []

    async def on_update(ctx: ToolContext[Any], update: ToolUpdate) -> None:
        got.append((ctx.context, ctx.tool_call_id, update))

    model = Scripted("progress", json.dumps({"steps": 3}))
    agent = OpenAIAgent(name="test", model=model, tools=[progress.to_openai_agents(on_update=on_update)])
    result = await Runner.run(agent, "count to three", context={"user": "ada"}, run_config=OFFLINE)
    assert result.final_output == "done" and model.outputs == ["done after 3 steps"]
    assert [(c, i, (u.progress, u.total, u.message)) for c, i, u in got] == [
        ({"user": "ada"}, "call_1", step) for step in STEPS
    ]

    synchronous: list[str | None] = []  # a sync callback works too
    tool = progress.to_openai_agents(on_update=lambda ctx, update: synchronous.append(update.message))
    model = Scripted("progress", json.dumps({"steps": 2}))
    await Runner.run(OpenAIAgent(name="test", model=model, tools=[tool]), "go", run_config=OFFLINE)
    assert synchronous == ["step 1", "step 2"]


async def test_openai_agents_without_on_update_relays_nothing() -> None:
    tool, got = spy()
    model = Scripted("spy", "{}")
    agent = OpenAIAgent(name="test", model=model, tools=[tool.to_openai_agents()])
    await Runner.run(agent, "go", run_config=OFFLINE)
    assert got == [None] and model.outputs == ["ok"]
