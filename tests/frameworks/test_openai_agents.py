"""`AgentTool.to_openai_agents()`: a `FunctionTool` run by the OpenAI Agents SDK's `Runner` with a scripted
`Model` (no network, tracing off), against a real MCP server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, FunctionTool, Model, ModelResponse, RunConfig, Runner, Usage
from conftest import RunningServer
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from cubepi import AgentTool
from cubepi.mcp import HttpServer, load_mcp_tools

OFFLINE = RunConfig(tracing_disabled=True)


@pytest.fixture
async def kitchen(kitchen_http: RunningServer) -> AsyncIterator[dict[str, AgentTool]]:
    async with await load_mcp_tools(HttpServer(kitchen_http.url)) as tools:
        yield {t.name: t for t in tools}


class Scripted(Model):
    """Calls one tool with raw JSON `arguments`, then answers; keeps the tools and outputs it was sent."""

    def __init__(self, name: str, arguments: str) -> None:
        self.call = (name, arguments)
        self.tools: list[Any] = []
        self.outputs: list[Any] = []

    async def get_response(
        self, system_instructions: Any, input: Any, model_settings: Any, tools: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.tools = list(tools)
        outputs = [
            item["output"]
            for item in input
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        item: Any
        if not outputs:
            name, arguments = self.call
            item = ResponseFunctionToolCall(
                type="function_call", call_id="call_1", name=name, arguments=arguments, id="fc_1"
            )
        else:
            self.outputs = outputs
            text = ResponseOutputText(type="output_text", text="done", annotations=[])
            item = ResponseOutputMessage(
                id="msg_1", type="message", role="assistant", status="completed", content=[text]
            )
        return ModelResponse(output=[item], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


async def run(tool: AgentTool, name: str, arguments: Any) -> Scripted:
    model = Scripted(name, arguments if isinstance(arguments, str) else json.dumps(arguments))
    agent = Agent(name="test", model=model, tools=[tool.to_openai_agents()])
    result = await Runner.run(agent, "go", run_config=OFFLINE)
    assert result.final_output == "done"
    return model


async def test_the_runner_calls_the_mcp_tool_with_the_strict_schema(kitchen: dict[str, AgentTool]) -> None:
    model = await run(kitchen["add"], "add", {"a": 2, "b": 40})
    assert model.outputs == ["42"]
    (sent,) = model.tools
    assert isinstance(sent, FunctionTool) and sent.strict_json_schema
    assert sent.params_json_schema == kitchen["add"].to_openai(strict=True)["function"]["parameters"]


async def test_strict_nulls_mean_left_out(kitchen: dict[str, AgentTool]) -> None:
    # Strict mode makes the optional `reason` required and nullable; null means "not given", so the
    # server applies its own default instead of receiving a null it does not accept.
    schema = kitchen["fail"].to_openai(strict=True)["function"]["parameters"]
    assert schema["required"] == ["reason"]
    model = await run(kitchen["fail"], "fail", {"reason": None})
    assert model.outputs == ["[tool error] Error executing tool fail: it broke"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"a": "two", "b": 40}, "Invalid arguments for tool 'add':\n- a: Input should be a valid integer"),
        ("{oops", "Invalid arguments for tool 'add': not JSON"),
        ("[1, 2]", "Invalid arguments for tool 'add':\n- (arguments): Input should be"),
    ],
)
async def test_bad_arguments_are_read_by_the_model(
    kitchen: dict[str, AgentTool], arguments: Any, expected: str
) -> None:
    model = await run(kitchen["add"], "add", arguments)
    (output,) = model.outputs
    assert output.startswith(expected)


async def test_images_are_image_outputs(kitchen: dict[str, AgentTool]) -> None:
    model = await run(kitchen["image"], "image", {})
    (output,) = model.outputs
    assert [part["type"] for part in output] == ["input_text", "input_image"]
    assert output[0]["text"] == "a 1x1 png"
    assert output[1]["image_url"].startswith("data:image/png;base64,iVBORw0KGgo")


async def test_approval_interrupts_the_run(kitchen: dict[str, AgentTool]) -> None:
    echo = kitchen["echo"].replace(needs_approval=lambda params: params.message != "safe")
    model = Scripted("echo", json.dumps({"message": "rm -rf"}))
    agent = Agent(name="test", model=model, tools=[echo.to_openai_agents()])
    result = await Runner.run(agent, "go", run_config=OFFLINE)
    assert [item.raw_item.name for item in result.interruptions] == ["echo"]
    assert model.outputs == []

    assert (await run(echo, "echo", {"message": "safe"})).outputs == ["safe"]
    assert kitchen["echo"].to_openai_agents().needs_approval is False
