"""Hand-written tools: `@tool`, `AgentTool.execute`, `execute_sync`, results and exporters."""

from __future__ import annotations

import threading
from typing import Annotated, Any

import anyio
import pytest
from pydantic import BaseModel, Field

from cubepi import AgentTool, AgentToolResult, ImageContent, TextContent, ToolUpdate, UserError, tool


@tool
def add(a: int, b: int = 2) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend,
            which defaults to two.
    """
    return a + b


@tool(name="fetch_page", needs_approval=True)
async def fetch(url: str, limit: Annotated[int, Field(ge=1, le=10)] = 5) -> str:
    """Fetch a page."""
    return f"{url}:{limit}"


def test_tool_reads_signature_and_docstring() -> None:
    assert add.name == "add"
    assert add.description == "Add two integers."
    schema = add.parameters.model_json_schema()
    assert schema["required"] == ["a"]
    assert schema["properties"]["a"]["description"] == "The first addend."
    assert schema["properties"]["b"]["description"] == "The second addend, which defaults to two."
    assert schema["properties"]["b"]["default"] == 2


def test_annotated_field_constraints_apply() -> None:
    assert fetch.name == "fetch_page"
    assert fetch.needs_approval is True
    props = fetch.parameters.model_json_schema()["properties"]
    assert props["limit"]["minimum"] == 1
    assert props["limit"]["maximum"] == 10


async def test_execute_accepts_a_mapping_or_a_model_instance() -> None:
    from_dict = await add.execute({"a": 40})
    from_model = await add.execute(add.parameters.model_validate({"a": 40, "b": 3}))
    assert from_dict.text == "42"
    assert from_dict.details == {"value": 42}
    assert from_model.text == "43"
    assert not from_dict.is_error


async def test_bad_arguments_come_back_as_a_readable_error_and_never_run() -> None:
    ran = []

    @tool
    def record(n: int) -> str:
        ran.append(n)
        return "ran"

    result = await record.execute({"n": "not a number"})
    assert result.is_error
    assert "Invalid arguments for tool 'record'" in result.text
    assert "- n:" in result.text
    assert result.details["validation_errors"][0]["loc"] == ("n",)
    missing = await record.execute({})
    assert missing.is_error and "Field required" in missing.text
    assert ran == []


async def test_constraint_violation_is_an_error_result() -> None:
    result = await fetch.execute({"url": "x", "limit": 99})
    assert result.is_error
    assert "limit" in result.text


async def test_non_mapping_arguments_are_refused_readably() -> None:
    result = await add.execute(["a", 1])  # type: ignore[arg-type]
    assert result.is_error
    assert "add" in result.text


async def test_sync_function_runs_in_a_worker_thread() -> None:
    seen: list[str] = []

    @tool
    def where() -> str:
        seen.append(threading.current_thread().name)
        return "ok"

    await where.execute({})
    assert seen and seen[0] != threading.main_thread().name


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        ("plain", [TextContent("plain")]),
        (TextContent("block"), [TextContent("block")]),
        (
            [TextContent("a"), ImageContent("AAAA", "image/png")],
            [TextContent("a"), ImageContent("AAAA", "image/png")],
        ),
        ({"k": [1, 2]}, [TextContent('{"k": [1, 2]}')]),
        (None, []),
    ],
)
async def test_return_values_become_results(returned: Any, expected: list[Any]) -> None:
    @tool
    def give() -> Any:
        return returned

    result = await give.execute({})
    assert result.content == expected


async def test_agent_tool_result_is_passed_through() -> None:
    @tool
    async def fail() -> AgentToolResult:
        return AgentToolResult.error("nope", code=7)

    result = await fail.execute({})
    assert result.is_error and result.text == "nope" and result.details == {"code": 7}


async def test_on_update_reaches_the_function() -> None:
    updates: list[ToolUpdate] = []

    @tool
    async def work(steps: int, on_update: Any = None) -> str:
        for i in range(steps):
            await on_update(ToolUpdate(progress=i + 1, total=steps))
        return "done"

    async def collect(update: ToolUpdate) -> None:
        updates.append(update)

    assert "on_update" not in work.parameters.model_fields
    await work.execute({"steps": 3}, on_update=collect)
    assert [u.progress for u in updates] == [1, 2, 3]


def test_execute_sync_without_a_loop() -> None:
    assert add.execute_sync({"a": 1, "b": 1}).text == "2"
    assert add.execute_sync({"a": "x"}).is_error


async def test_execute_sync_inside_a_running_loop() -> None:
    assert add.execute_sync({"a": 5}).text == "7"


def test_exceptions_of_the_tool_propagate_from_execute_sync() -> None:
    @tool
    def boom() -> str:
        raise ValueError("exploded")

    with pytest.raises(ValueError, match="exploded"):
        boom.execute_sync({})


async def test_lazy_parameters_are_built_once_on_first_use() -> None:
    built: list[int] = []

    class Args(BaseModel):
        x: int

    def factory() -> type[BaseModel]:
        built.append(1)
        return Args

    async def run(params: BaseModel, on_update: Any) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(str(params.x))])  # type: ignore[attr-defined]

    lazy = AgentTool(name="lazy", description="", parameters=factory, run=run)
    assert built == []
    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(lazy.execute, {"x": 1})
    assert lazy.parameters is Args
    assert built == [1]


def test_lists_of_tools_concatenate_and_replace_keeps_behaviour() -> None:
    renamed = add.replace(name="plus")
    tools = [*[add, fetch], *[renamed]]
    assert [t.name for t in tools] == ["add", "fetch_page", "plus"]
    assert renamed.execute_sync({"a": 1}).text == "3"
    with pytest.raises(UserError, match="no attribute"):
        add.replace(colour="red")


def test_empty_names_are_refused() -> None:
    with pytest.raises(UserError, match="non-empty name"):
        add.replace(name="")


def test_exporters_carry_name_description_and_schema() -> None:
    anthropic = add.to_anthropic()
    assert anthropic["name"] == "add"
    assert anthropic["description"] == "Add two integers."
    assert anthropic["input_schema"]["type"] == "object"
    assert set(anthropic["input_schema"]["properties"]) == {"a", "b"}
    openai = add.to_openai()
    assert openai["type"] == "function"
    assert openai["function"]["name"] == "add"
    assert "strict" not in openai["function"]
    strict = add.to_openai(strict=True)["function"]
    assert strict["strict"] is True
    assert strict["parameters"]["additionalProperties"] is False
    assert sorted(strict["parameters"]["required"]) == ["a", "b"]
    gemini = add.to_gemini()
    assert gemini["name"] == "add" and set(gemini["parameters"]["properties"]) == {"a", "b"}

    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    assert ping.to_gemini() == {"name": "ping", "description": "Answer pong."}


def test_strict_export_is_accepted_by_openais_own_helper() -> None:
    from openai.lib._pydantic import _ensure_strict_json_schema

    schema = fetch.to_openai(strict=True)["function"]["parameters"]
    assert _ensure_strict_json_schema(schema, path=(), root=schema) == schema


def test_names_llm_apis_reject_are_rewritten_and_mapped_back() -> None:
    from cubepi.tools import find_tool

    dotted = add.replace(name="fs.read file/v2")
    long = add.replace(name="x" * 80)
    longer = add.replace(name="x" * 81)
    assert dotted.api_name == "fs_read_file_v2"
    assert dotted.to_openai()["function"]["name"] == "fs_read_file_v2"
    assert dotted.to_anthropic()["name"] == "fs_read_file_v2"
    assert len(long.api_name) == 64 and long.api_name != longer.api_name
    assert add.api_name == "add"
    tools = [add, dotted, long, longer]
    assert find_tool(tools, "fs_read_file_v2") is dotted
    assert find_tool(tools, "fs.read file/v2") is dotted
    assert find_tool(tools, long.api_name) is long
    assert find_tool(tools, "missing") is None


def test_collisions_created_by_rewriting_are_reported() -> None:
    from cubepi.tools import ensure_unique_names

    with pytest.raises(UserError, match=r"'a\.b'.*'a/b'.*both become 'a_b'"):
        ensure_unique_names([add.replace(name="a.b", origin="server one"), add.replace(name="a/b")])
    with pytest.raises(UserError, match="server one"):
        ensure_unique_names([add.replace(origin="server one"), add.replace(origin="server two")])
