"""One MCP tool definition as an `AgentTool` (`make_mcp_agent_tool`, mcp/_lists/tool.py): what a definition
must hold, what a missing or odd field becomes, that a tool which travelled (pickled) still checks its
output against the `outputSchema`, and what a call sends of a hidden argument. Calls go to
tests/servers/kitchen.py over stdio."""

from __future__ import annotations

import logging
import pickle
from typing import Any

import pytest
from conftest import KITCHEN, PYTHON
from mcp import types

from cubepi import UserError
from cubepi.mcp import StdioServer, load_mcp_tools, make_mcp_agent_tool


def kitchen() -> StdioServer:
    return StdioServer(PYTHON, [str(KITCHEN)])


WEATHER = {
    "name": "weather",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.mark.parametrize("definition", [{"name": ""}, {"name": 7}, {"name": None}, {}])
def test_a_definition_needs_a_non_empty_string_name(definition: dict[str, Any]) -> None:
    with pytest.raises(UserError, match="needs a non-empty 'name'"):
        make_mcp_agent_tool({**definition, "inputSchema": {"type": "object"}}, kitchen())


def test_a_definition_must_be_a_tool_or_a_dict() -> None:
    with pytest.raises(UserError, match=r"expected an MCP tool definition .* got list"):
        make_mcp_agent_tool(["echo"], kitchen())  # type: ignore[arg-type]


def test_the_server_must_be_a_stdio_or_http_server() -> None:
    with pytest.raises(UserError, match="needs a StdioServer or an HttpServer, got str") as caught:
        make_mcp_agent_tool(WEATHER, "python kitchen.py")  # type: ignore[arg-type]
    assert "make_mcp_agent_tool" in str(caught.value)


def test_an_sdk_tool_and_its_dict_make_the_same_tool() -> None:
    sdk = types.Tool(
        name="weather",
        description="Structured weather",
        input_schema=WEATHER["inputSchema"],
        annotations=types.ToolAnnotations(read_only_hint=True),
    )
    from_sdk = make_mcp_agent_tool(sdk, kitchen())
    from_dict = make_mcp_agent_tool(sdk.model_dump(mode="json", by_alias=True, exclude_none=True), kitchen())
    for tool in (from_sdk, from_dict):
        assert tool.name == "weather" and tool.description == "Structured weather"
        assert tool.input_schema == WEATHER["inputSchema"]
        assert tool.annotations == {"readOnlyHint": True}


def test_missing_or_odd_fields_get_plain_defaults() -> None:
    tool = make_mcp_agent_tool(
        {"name": "pid", "inputSchema": "nope", "annotations": ["readOnlyHint"], "outputSchema": 3}, kitchen()
    )
    assert tool.name == "pid" and tool.description == ""
    assert tool.input_schema == {"type": "object", "properties": {}}
    assert tool.annotations is None and tool.output_schema is None
    assert tool.parameters.model_json_schema()["properties"] == {}


async def test_a_tool_without_an_input_schema_still_calls() -> None:
    tool = make_mcp_agent_tool({"name": "pid"}, kitchen(), timeout=30)
    result = await tool.execute({})
    assert not result.is_error and int(result.text) > 0


async def test_a_pickled_tool_still_checks_its_output_schema() -> None:
    """The copy's check is made again from the schema: a mismatch is still reported, a match is not."""
    matching = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}},
        "required": ["city", "temperature"],
    }
    wrong = {"type": "object", "properties": {"humidity": {"type": "number"}}, "required": ["humidity"]}
    good = pickle.loads(pickle.dumps(make_mcp_agent_tool({**WEATHER, "outputSchema": matching}, kitchen())))
    bad = pickle.loads(pickle.dumps(make_mcp_agent_tool({**WEATHER, "outputSchema": wrong}, kitchen())))
    ok = await good.execute({"city": "Oslo"})
    assert not ok.is_error and ok.details["structuredContent"]["city"] == "Oslo"
    assert "structuredContentError" not in ok.details
    mismatch = await bad.execute({"city": "Oslo"})
    assert "humidity" in mismatch.details["structuredContentError"]
    assert mismatch.details["structuredContent"]["city"] == "Oslo"  # the result itself is kept


async def test_a_structured_content_error_names_the_root_and_stays_short(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A rule broken at the top of the output is placed at "(root)"; a short message is kept whole, a long
    one (and its log line) is cut to 500 characters ending with an ellipsis; the result itself is kept."""
    short = make_mcp_agent_tool(
        {**WEATHER, "outputSchema": {"type": "object", "required": ["humidity"]}}, kitchen()
    )
    result = await short.execute({"city": "Oslo"})
    assert not result.is_error and result.details["structuredContent"]["city"] == "Oslo"
    error = result.details["structuredContentError"]
    assert "at (root):" in error and error.endswith("'humidity' is required")
    long_name = "humidity_" * 80  # a required name longer than the message may be
    long = make_mcp_agent_tool(
        {**WEATHER, "outputSchema": {"type": "object", "required": [long_name]}}, kitchen()
    )
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="cubepi.mcp"):
        result = await long.execute({"city": "Oslo"})
    assert not result.is_error and result.details["structuredContent"]["city"] == "Oslo"
    error = result.details["structuredContentError"]
    assert len(error) == 500 and error.endswith("…")
    assert f"at (root): '{long_name}".startswith(error[error.index("at (root):") : -1])
    (warning,) = [r for r in caplog.records if r.name == "cubepi.mcp" and r.levelno == logging.WARNING]
    summary = warning.args[1]  # type: ignore[index]
    assert len(summary) == 500 and summary.startswith("at (root): 'humidity_")


async def test_a_hidden_argument_is_sent_by_the_app_and_refused_from_the_model() -> None:
    """`hidden_arguments` binds echo's `message`: it leaves the schema, every call sends the bound value, and
    a model that sets it gets an error result instead of a call."""
    async with await load_mcp_tools(
        kitchen(), include=["echo"], hidden_arguments={"message": "from the app"}
    ) as tools:
        (echo,) = tools
        assert "message" not in echo.input_schema["properties"]
        sent = await echo.execute({})
        assert not sent.is_error and sent.text == "from the app"
        refused = await echo.execute({"message": "from the model"})
        assert refused.is_error and "message" in refused.text
        assert "from the app" not in refused.text
