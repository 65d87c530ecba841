"""`AgentTool.to_langchain()`: a `StructuredTool` driven through LangChain's own tool-calling path (a fake
chat model's tool calls, `ainvoke` / `invoke` with a `ToolCall`), against a real MCP server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from conftest import RunningServer
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from cubepi import AgentTool, AgentToolResult, TextContent, UserError
from cubepi.mcp import HttpServer, MCPToolList, load_mcp_tools
from cubepi.schema import schema_to_model, to_arguments


@pytest.fixture
async def kitchen(kitchen_http: RunningServer) -> AsyncIterator[dict[str, AgentTool]]:
    tools: MCPToolList = await load_mcp_tools(HttpServer(kitchen_http.url))
    async with tools:
        yield {t.name: t for t in tools}


def call(name: str, args: dict[str, Any], call_id: str = "call_1") -> ToolCall:
    return ToolCall(name=name, args=args, id=call_id, type="tool_call")


async def test_a_chat_model_tool_call_runs_the_mcp_tool(kitchen: dict[str, AgentTool]) -> None:
    echo = kitchen["echo"].to_langchain()
    assert echo.name == "echo" and echo.description == "Echo the message back."
    assert echo.args_schema is kitchen["echo"].parameters
    exported = convert_to_openai_tool(echo)["function"]["parameters"]  # what a bound chat model sees
    assert exported["properties"] == {"message": {"type": "string"}} and exported["required"] == ["message"]

    model = GenericFakeChatModel(messages=iter([AIMessage("", tool_calls=[call("echo", {"message": "hi"})])]))
    asked = await model.ainvoke("say hi through the tool")
    assert isinstance(asked, AIMessage)
    message = await echo.ainvoke(asked.tool_calls[0])
    assert isinstance(message, ToolMessage)
    assert (message.content, message.tool_call_id, message.status) == ("hi", "call_1", "success")
    assert isinstance(message.artifact, AgentToolResult) and not message.artifact.is_error


async def test_errors_are_error_tool_messages(kitchen: dict[str, AgentTool]) -> None:
    failed = await kitchen["fail"].to_langchain().ainvoke(call("fail", {"reason": "no coffee"}))
    assert failed.status == "error" and failed.content == "[tool error] Error executing tool fail: no coffee"

    refused = await kitchen["add"].to_langchain().ainvoke(call("add", {"a": "two", "b": 2}))
    assert refused.status == "error"
    assert "Invalid arguments for tool 'add'" in refused.content and "a: Input should be" in refused.content


async def test_images_are_content_blocks(kitchen: dict[str, AgentTool]) -> None:
    message = await kitchen["image"].to_langchain().ainvoke(call("image", {}))
    text, image = message.content
    assert isinstance(text, dict) and isinstance(image, dict)
    assert (text["type"], text["text"]) == ("text", "a 1x1 png")
    assert (image["type"], image["mime_type"]) == ("image", "image/png")
    assert image["base64"].startswith("iVBORw0KGgo")


def test_sync_invocation_without_a_running_loop(kitchen_http: RunningServer) -> None:
    import anyio

    async def load() -> MCPToolList:
        return await load_mcp_tools(HttpServer(kitchen_http.url), include=["add"])

    add = anyio.run(load)[0].to_langchain()
    assert add.invoke(call("add", {"a": 2, "b": 40})).content == "42"
    assert add.invoke({"a": 1, "b": 1}) == "2"


async def test_sync_invocation_inside_a_running_loop(kitchen: dict[str, AgentTool]) -> None:
    message = kitchen["add"].to_langchain().invoke(call("add", {"a": 2, "b": 40}))
    assert message.content == "42"


async def test_the_tool_gets_exactly_what_the_model_sent() -> None:
    # LangChain's own parsing would add the schema's defaults; the tool must see the model's arguments.
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "from": {"type": "string"},
        },
        "required": ["q"],
    }
    sent: list[dict[str, Any]] = []

    async def run(params: Any, on_update: Any) -> AgentToolResult:
        sent.append(to_arguments(params))
        return AgentToolResult([TextContent("ok")])

    search = AgentTool(
        name="search",
        description="Search.",
        parameters=schema_to_model(schema, name="search"),
        run=run,
        input_schema=schema,
    )
    await search.to_langchain().ainvoke(call("search", {"q": "x", "from": "2024"}))
    assert sent == [{"q": "x", "from": "2024"}]


def test_tools_needing_approval_are_refused() -> None:
    async def run(params: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("ok")])

    risky = AgentTool(
        name="rm", description="Remove.", parameters=schema_to_model({"type": "object"}, name="rm"), run=run
    )
    with pytest.raises(UserError, match="needs approval"):
        risky.replace(needs_approval=True).to_langchain()
    assert risky.replace(needs_approval=True).replace(needs_approval=False).to_langchain().name == "rm"
