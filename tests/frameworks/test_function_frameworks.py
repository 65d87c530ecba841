"""`tool.as_function()` handed to six frameworks that take a Python function, each through its own code
path: the schema it derives, and a call made the way it makes one, reaching a real MCP server
(tests/servers/recorder.py answers with the arguments it received). Offline: no model is asked."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import dspy
import pytest
from _recorder import recorder_tools
from anthropic.lib.tools import beta_async_tool
from autogen_core import CancellationToken
from autogen_core.tools import FunctionTool as AutoGenTool
from conftest import PYTHON, SERVERS
from google import genai
from google.genai import _extra_utils, types
from llama_index.core.tools import FunctionTool as LlamaTool
from smolagents import tool as smolagents_tool

from cubepi import AgentTool, ToolCallError
from cubepi.mcp import load_mcp_tools_stdio

FULL = {"from_": "Paris", "max_results": 3, "when": {"day": 2}, "tags": ["a", "b"], "ratio": 0.5}
WIRE = {"from": "Paris", "max-results": 3, "when": {"day": 2}, "tags": ["a", "b"], "ratio": 0.5}
REQUIRED = {"from_"}
PARAMETERS = {"from_", "max_results", "style", "ratio", "when", "tags", "note"}

Call = Callable[[dict[str, Any]], Awaitable[Any]]


@pytest.fixture
async def recorder() -> AsyncIterator[dict[str, AgentTool]]:
    async with recorder_tools() as tools:
        yield tools


def _sent(answer: str) -> dict[str, Any]:
    arguments: dict[str, Any] = json.loads(answer)["arguments"]
    return arguments


async def _check_calls(call: Call, refuse: Call) -> list[str]:
    """Full arguments, then the required one alone (no default may reach the server), then a failure."""
    assert _sent(await call(FULL)) == WIRE
    assert _sent(await call({"from_": "Lyon"})) == {"from": "Lyon"}
    errors = []
    try:
        errors.append(str(await refuse({"reason": "the moon is full"})))
    except Exception as exc:
        errors.append(str(exc))
    return errors


# -- one test per framework ------------------------------------------------------------------------------


async def test_google_genai(recorder: dict[str, AgentTool]) -> None:
    record, refuse = recorder["record"].as_function(), recorder["refuse"].as_function()
    client = genai.Client(api_key="offline")
    declaration = types.FunctionDeclaration.from_callable(client=client, callable=record)
    assert declaration.name == "record" and declaration.parameters is not None
    assert set(declaration.parameters.properties or {}) == PARAMETERS
    assert set(declaration.parameters.required or []) == REQUIRED
    assert declaration.description is not None and "from_: Where the trip starts." in declaration.description
    config = types.GenerateContentConfig(tools=[record, refuse])
    functions = _extra_utils.get_function_map(config, is_caller_method_async=True)

    async def afc(name: str, args: dict[str, Any]) -> Any:  # automatic function calling, as the SDK runs it
        part = types.Part(function_call=types.FunctionCall(name=name, args=args))
        content = types.Content(role="model", parts=[part])
        response = types.GenerateContentResponse(candidates=[types.Candidate(content=content)])
        (answer,) = await _extra_utils.get_function_response_parts_async(response, functions)
        assert answer.function_response is not None and answer.function_response.response is not None
        reply = answer.function_response.response
        return reply.get("result", reply.get("error"))

    errors = await _check_calls(lambda args: afc("record", args), lambda args: afc("refuse", args))
    assert "the moon is full" in errors[0]


async def test_smolagents() -> None:
    recorder = [str(SERVERS / "recorder.py")]
    async with await load_mcp_tools_stdio(PYTHON, recorder) as tools:  # sync: stateless calls
        by_name = {t.name: t for t in tools}
        record = smolagents_tool(by_name["record"].as_function(sync=True))
        refuse = smolagents_tool(by_name["refuse"].as_function(sync=True))
        assert record.name == "record" and record.output_type == "string"
        assert set(record.inputs) == PARAMETERS
        assert {name for name, spec in record.inputs.items() if not spec.get("nullable")} == REQUIRED
        assert record.inputs["from_"] == {"type": "string", "description": "Where the trip starts."}

        async def call(args: dict[str, Any]) -> Any:
            return record(**args)  # what an agent's tool call runs (Tool.__call__)

        async def fail(args: dict[str, Any]) -> Any:
            return refuse(**args)

        errors = await _check_calls(call, fail)
        assert "the moon is full" in errors[0]


async def test_llama_index(recorder: dict[str, AgentTool]) -> None:
    record = LlamaTool.from_defaults(async_fn=recorder["record"].as_function())
    refuse = LlamaTool.from_defaults(async_fn=recorder["refuse"].as_function())
    schema = record.metadata.get_parameters_dict()
    assert record.metadata.name == "record"
    assert set(schema["properties"]) == PARAMETERS and set(schema["required"]) == REQUIRED

    async def call(args: dict[str, Any]) -> Any:
        return (await record.acall(**args)).raw_output

    async def fail(args: dict[str, Any]) -> Any:
        return (await refuse.acall(**args)).raw_output

    errors = await _check_calls(call, fail)
    assert "the moon is full" in errors[0]


async def test_dspy(recorder: dict[str, AgentTool]) -> None:
    record = dspy.Tool(recorder["record"].as_function())
    refuse = dspy.Tool(recorder["refuse"].as_function())
    assert record.name == "record" and set(record.args or {}) == PARAMETERS
    assert {name for name, spec in (record.args or {}).items() if "default" not in spec} == REQUIRED
    errors = await _check_calls(lambda args: record.acall(**args), lambda args: refuse.acall(**args))
    assert "the moon is full" in errors[0]


async def test_anthropic_tool_runner(recorder: dict[str, AgentTool]) -> None:
    record = beta_async_tool(recorder["record"].as_function())
    refuse = beta_async_tool(recorder["refuse"].as_function())
    definition = record.to_dict()
    assert definition["name"] == "record" and definition["description"] == "Record the arguments received."
    schema: dict[str, Any] = dict(definition["input_schema"])
    assert set(schema["properties"]) == PARAMETERS and set(schema["required"]) == REQUIRED
    assert schema["properties"]["from_"]["description"] == "Where the trip starts."
    errors = await _check_calls(record.call, refuse.call)
    assert "the moon is full" in errors[0]


async def test_autogen(recorder: dict[str, AgentTool]) -> None:
    function = recorder["record"].as_function()
    record = AutoGenTool(function, description=recorder["record"].description)
    refuse = AutoGenTool(recorder["refuse"].as_function(), description="refuse")
    parameters = record.schema.get("parameters", {})
    assert record.name == "record" and set(parameters.get("properties", {})) == PARAMETERS
    assert set(parameters.get("required", [])) == REQUIRED
    token = CancellationToken()
    errors = await _check_calls(
        lambda args: record.run_json(args, token), lambda args: refuse.run_json(args, token)
    )
    assert "the moon is full" in errors[0]


async def test_a_refused_argument_raises_what_the_model_reads(recorder: dict[str, AgentTool]) -> None:
    record = LlamaTool.from_defaults(async_fn=recorder["record"].as_function())  # it does not validate
    with pytest.raises(ToolCallError, match=r"(?s)Invalid arguments for tool 'record'.*max-results"):
        await record.acall(from_="Paris", max_results="3")
