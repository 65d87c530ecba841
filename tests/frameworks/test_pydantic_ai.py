"""`AgentTool.to_pydantic_ai()`: a `pydantic_ai.Tool` run by a pydantic-ai `Agent` whose model is a scripted
`FunctionModel` (no network), against a real MCP server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from conftest import RunningServer
from pydantic_ai import (
    Agent,
    BinaryContent,
    DeferredToolRequests,
    DeferredToolResults,
    ToolReturnPart,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from cubepi import AgentTool, AgentToolResult
from cubepi.mcp import HttpServer, load_mcp_tools


@pytest.fixture
async def kitchen(kitchen_http: RunningServer) -> AsyncIterator[dict[str, AgentTool]]:
    async with await load_mcp_tools(HttpServer(kitchen_http.url)) as tools:
        yield {t.name: t for t in tools}


def scripted(*calls: tuple[str, dict[str, Any]]) -> tuple[FunctionModel, list[Any]]:
    """A model that makes `calls` one turn each, then answers with the last tool result it read; `seen`
    gets every tool return and retry prompt it is sent, and the tool definitions of the first turn."""
    seen: list[Any] = []
    pending = list(calls)

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not seen:
            seen.append(info.function_tools)
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        seen.extend(p for p in last.parts if isinstance(p, (ToolReturnPart, RetryPromptPart)))
        if pending:
            name, args = pending.pop(0)
            call = ToolCallPart(name, json.dumps(args), tool_call_id=f"c{len(pending)}")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond), seen


async def test_the_agent_calls_the_mcp_tool_with_the_server_schema(kitchen: dict[str, AgentTool]) -> None:
    model, seen = scripted(("add", {"a": 2, "b": 40}))
    agent = Agent(model, tools=[kitchen["add"].to_pydantic_ai()])
    assert (await agent.run("add 2 and 40")).output == "done"
    definitions, returned = seen
    assert [d.name for d in definitions] == ["add"]
    assert definitions[0].parameters_json_schema == kitchen["add"].json_schema()
    assert isinstance(returned, ToolReturnPart) and returned.content == "42"
    assert isinstance(returned.metadata, AgentToolResult)
    assert returned.metadata.details["structuredContent"] == {"result": 42}


async def test_wrong_arguments_ask_the_model_to_retry(kitchen: dict[str, AgentTool]) -> None:
    model, seen = scripted(("add", {"a": "two", "b": 40}), ("add", {"a": 2, "b": 40}))
    await Agent(model, tools=[kitchen["add"].to_pydantic_ai()]).run("add")
    retry, returned = seen[1:]
    assert isinstance(retry, ToolReturnPart) and retry.outcome == "retried"
    assert retry.retry is not None and retry.retry.cause == "model_retry"
    assert "Invalid arguments for tool 'add'" in str(retry.content)
    assert "a: Input should be" in str(retry.content)
    assert isinstance(returned, ToolReturnPart) and returned.content == "42" and returned.outcome == "success"


async def test_other_errors_are_read_not_retried(kitchen: dict[str, AgentTool]) -> None:
    model, seen = scripted(("fail", {"reason": "no coffee"}))
    await Agent(model, tools=[kitchen["fail"].to_pydantic_ai()]).run("fail")
    (returned,) = seen[1:]
    assert isinstance(returned, ToolReturnPart) and returned.outcome != "retried"
    assert returned.content == "[tool error] Error executing tool fail: no coffee"


async def test_images_reach_the_model_as_binary_content(kitchen: dict[str, AgentTool]) -> None:
    model, seen = scripted(("image", {}))
    await Agent(model, tools=[kitchen["image"].to_pydantic_ai()]).run("draw")
    (returned,) = seen[1:]
    text, image = returned.content
    assert text == "a 1x1 png"
    assert isinstance(image, BinaryContent) and image.media_type == "image/png"
    assert image.data.startswith(b"\x89PNG")


async def test_approval_defers_the_call_until_approved(kitchen: dict[str, AgentTool]) -> None:
    echo = kitchen["echo"].replace(needs_approval=lambda params: params.message != "safe")
    agent = Agent(FunctionModel(lambda m, i: ModelResponse([])), tools=[echo.to_pydantic_ai()])

    model, seen = scripted(("echo", {"message": "rm -rf"}))
    with agent.override(model=model):
        first = await agent.run("go", output_type=[str, DeferredToolRequests])
    assert isinstance(first.output, DeferredToolRequests)
    (request,) = first.output.approvals
    assert request.tool_name == "echo" and len(seen) == 1  # nothing ran

    with agent.override(model=scripted()[0]):
        second = await agent.run(
            message_history=first.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={request.tool_call_id: True}),
            output_type=[str, DeferredToolRequests],
        )
    returns = [p for m in second.new_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    assert [p.content for p in returns] == ["rm -rf"]

    model, seen = scripted(("echo", {"message": "safe"}))
    with agent.override(model=model):
        assert (await agent.run("go", output_type=[str, DeferredToolRequests])).output == "done"
    assert seen[1].content == "safe"
