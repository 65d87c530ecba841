"""`AgentTool.as_function()` on its own: the signature and docstring a framework reads, and what a call
sends to a real MCP server (tests/servers/recorder.py answers with the arguments it received)."""

from __future__ import annotations

import copyreg
import inspect
import json
import pickle
import typing
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

import pytest
from _recorder import recorder_tools
from conftest import PYTHON, SERVERS
from pydantic import BaseModel, Field

from cubepi import AgentTool, AgentToolResult, TextContent, ToolCallError, UserError, tool
from cubepi.mcp import load_mcp_tools_stdio


@pytest.fixture
async def recorder() -> AsyncIterator[dict[str, AgentTool]]:
    async with recorder_tools() as tools:
        yield tools


def test_the_signature_reads_as_a_person_would_write_it() -> None:
    from servers.recorder import TOOLS

    from cubepi.mcp import StdioServer, make_mcp_agent_tool

    record = make_mcp_agent_tool(TOOLS[0].model_dump(by_alias=True), StdioServer("never-started"))
    function = record.as_function()
    assert function.__name__ == "record"
    assert inspect.iscoroutinefunction(function)
    parameters = inspect.signature(function).parameters
    assert list(parameters) == ["from_", "max_results", "style", "ratio", "when", "tags", "note"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters.values())
    assert parameters["from_"].default is inspect.Parameter.empty
    assert parameters["from_"].annotation is str
    assert (parameters["max_results"].annotation, parameters["max_results"].default) == (int | None, 10)
    assert parameters["style"].annotation == Literal["plain", "excited"] | None
    assert parameters["style"].default == "plain"
    assert parameters["ratio"].annotation == float | None  # JSON Schema's "number"
    assert parameters["tags"].annotation == list[str] | None
    assert parameters["note"].annotation == str | None
    when = typing.get_args(parameters["when"].annotation)
    assert len(when) == 2 and type(None) in when
    nested = next(arg for arg in when if arg is not type(None))
    assert issubclass(nested, BaseModel) and set(nested.model_fields) == {"day", "note"}
    hints = typing.get_type_hints(function)
    assert hints["max_results"] == int | None and hints["return"] is str
    assert "Annotated" not in str(inspect.signature(function))
    assert function.__doc__ == (
        "Record the arguments received.\n\nArgs:\n"
        "    from_: Where the trip starts.\n"
        "    max_results: How many results at most.\n"
        "    style: (no description)\n"
        "    ratio: (no description)\n"
        "    when: (no description)\n"
        "    tags: (no description)\n"
        "    note: (no description)"
    )


def test_validator_wrappers_inside_containers_are_left_out_too() -> None:
    from cubepi.mcp import StdioServer, make_mcp_agent_tool

    schema = {
        "type": "object",
        "properties": {
            "counts": {"type": "array", "items": {"type": "integer"}},
            "weights": {"type": "object", "additionalProperties": {"type": "integer"}},
            "mode": {"anyOf": [{"const": "fast"}, {"const": "slow"}, {"type": "integer"}]},
        },
        "required": ["counts", "weights", "mode"],
    }
    definition = {"name": "t", "inputSchema": schema}
    function = make_mcp_agent_tool(definition, StdioServer("never-started")).as_function()
    hints = function.__annotations__  # as written: typing.get_type_hints would strip Annotated itself
    assert hints["counts"] == list[int] and hints["weights"] == dict[str, int]
    assert hints["mode"] == Literal["fast", "slow"] | int


async def test_a_call_sends_exactly_the_arguments_given_under_their_wire_names(
    recorder: dict[str, AgentTool],
) -> None:
    record = recorder["record"].as_function()
    sent = await record(from_="Paris", max_results=3, when={"day": 2}, ratio=1, note="n")
    assert json.loads(sent) == {
        "arguments": {"from": "Paris", "max-results": 3, "when": {"day": 2}, "ratio": 1, "note": "n"}
    }
    alone = await record(from_="Lyon")  # the defaults the signature shows are not sent
    assert json.loads(alone) == {"arguments": {"from": "Lyon"}}
    # A parameter holding its default object means "left out" (what frameworks that pass every
    # parameter, as AutoGen does, need): None and the default itself are not sent; an equal copy is.
    default = inspect.signature(record).parameters["max_results"].default
    as_default = await record(from_="Lyon", note=None, max_results=default, style="".join("plain"))
    assert json.loads(as_default)["arguments"] == {"from": "Lyon", "style": "plain"}


async def test_a_failed_call_raises_the_text_the_model_should_read(recorder: dict[str, AgentTool]) -> None:
    with pytest.raises(ToolCallError) as refused:
        await recorder["refuse"].as_function()(reason="the moon is full")
    assert str(refused.value) == refused.value.result.text  # what the model reads, as execute gives it
    assert "the moon is full" in str(refused.value) and refused.value.result.is_error
    with pytest.raises(ToolCallError, match=r"(?s)Invalid arguments for tool 'record'.*max-results") as bad:
        await recorder["record"].as_function()(from_="Paris", max_results="three")
    assert bad.value.result.details["validation_errors"]
    with pytest.raises(TypeError):
        await recorder["record"].as_function()("Paris")  # keyword-only, as the signature says


async def test_the_sync_function_works_inside_a_running_loop() -> None:
    async with await load_mcp_tools_stdio(PYTHON, [str(SERVERS / "recorder.py")]) as tools:
        record = next(t for t in tools if t.name == "record").as_function(sync=True)
        assert not inspect.iscoroutinefunction(record)
        assert json.loads(record(from_="Oslo", tags=["a"])) == {"arguments": {"from": "Oslo", "tags": ["a"]}}


@tool
def shout(text: Annotated[str, Field(description="What to shout.")], times: int = 1) -> dict[str, Any]:
    """Shout a text."""
    return {"said": (text.upper() + "!") * times}


@tool
def scope(locals: str, function: str = "f") -> str:
    """Names the generated function must not confuse with its own."""
    return f"{locals}/{function}"


@tool
def report(kind: str, tags: list[str] = Field(default_factory=list)) -> AgentToolResult:  # noqa: B008
    """Answers with text, structured content, or both."""
    structured = {"kind": kind, "city": "Zürich"}
    text = [TextContent(f"{kind} report")] if kind != "bare" else []
    return AgentToolResult(content=text, details={"structuredContent": structured} if kind != "none" else {})


def test_the_text_wins_over_structured_content_and_json_stays_readable() -> None:
    function = report.as_function(sync=True)
    assert inspect.signature(function).parameters["tags"].default == []  # a default factory, called
    assert function(kind="full") == "full report"
    assert function(kind="bare") == '{"kind": "bare", "city": "Zürich"}'
    assert function(kind="none") == "none report"


def test_parameters_named_like_builtins() -> None:
    assert scope.as_function(sync=True)(locals="l") == "l/f"


def test_a_hand_written_tool_without_a_loop() -> None:
    function = shout.as_function(sync=True)
    assert str(inspect.signature(function)) == "(*, text: str, times: int = 1) -> str"
    assert function.__doc__ == "Shout a text.\n\nArgs:\n    text: What to shout.\n    times: (no description)"
    assert json.loads(function(text="hey", times=2)) == {"said": "HEY!HEY!"}
    with pytest.raises(ToolCallError, match="times: Input should be a valid integer"):
        function(text="hey", times="twice")


def test_a_tool_that_needs_approval_is_refused() -> None:
    with pytest.raises(UserError, match="needs approval"):
        shout.replace(needs_approval=True).as_function()


def _shout_again() -> AgentTool:
    return shout


def test_the_function_travels_as_its_tool_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pickled, the function is its tool and its name: made picklable here (by reference), the tool
    brings the function back, a real function again, bound to a holder of the tool."""
    monkeypatch.setitem(copyreg.dispatch_table, type(shout), lambda _tool: (_shout_again, ()))
    for sync in (True, False):
        again = pickle.loads(pickle.dumps(shout.as_function(sync=sync)))
        assert again.__name__ == "shout" and inspect.iscoroutinefunction(again) is not sync
        assert str(inspect.signature(again)) == "(*, text: str, times: int = 1) -> str"
    assert json.loads(again.__self__.__reduce__()[0](shout, True)._cubepi_function(text="a")) == {
        "said": "A!"
    }


def test_the_function_pickles_whenever_the_tool_does() -> None:
    for sync in (True, False):
        function = shout.as_function(sync=sync)
        again = pickle.loads(pickle.dumps(function))
        assert again.__name__ == "shout" and inspect.signature(again) == inspect.signature(function)
    assert json.loads(pickle.loads(pickle.dumps(shout.as_function(sync=True)))(text="a")) == {"said": "A!"}
