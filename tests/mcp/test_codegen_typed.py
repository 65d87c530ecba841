"""Typed clients (issue 48): nested models, typed returns and errors, checked against real servers.

tests/servers/recorder.py answers with what it received (the arguments' JSON text as sent) or with the
structured content a test chose; server-filesystem and server-everything are real npm servers. A program
using a generated module passes `mypy --strict`, and one reading a field the output lacks fails it.
"""

from __future__ import annotations

import json
import re
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
from conftest import EVERYTHING, FILESYSTEM, PYTHON, SERVERS, TESTS, import_file, mypy

from cubepi.cli import main
from cubepi.codegen import raw_result, run_sync
from cubepi.errors import ToolCallError, UserError
from cubepi.mcp import StdioServer, load_mcp_tools
from cubepi.schema import schema_to_model
from cubepi.tools import AgentToolResult

RECORDER = [PYTHON, str(SERVERS / "recorder.py")]
ROOT = TESTS.parent
DOC = ROOT / "docs" / "pinning.md"
sys.path.insert(0, str(SERVERS))
from recorder import NEST_SCHEMA  # noqa: E402


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The recorder's module, `recorded.py`; server-everything's, `client.py` (as in docs/pinning.md)."""
    out = tmp_path_factory.mktemp("typed")
    assert main(["codegen", "-o", str(out / "recorded.py"), "--", *RECORDER]) == 0
    if EVERYTHING.exists():
        assert main(["codegen", "-o", str(out / "client.py"), "--", str(EVERYTHING), "stdio"]) == 0
    yield out
    for name in ("recorded", "client"):
        sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def recorded(folder: Path) -> types.ModuleType:
    return import_file(folder / "recorded.py")


def _annotation(model: type[pydantic.BaseModel], field: str) -> Any:
    """A field's type, its forward references resolved (as the first validation resolves them)."""
    model.model_rebuild()
    return model.model_fields[field].annotation


# -- nested models ---------------------------------------------------------------------------------------


def _runtime_names(model: type[pydantic.BaseModel]) -> set[str]:
    """The names of the nested models the runtime bridge built (walked through the annotations)."""
    found: set[str] = set()

    def walk(annotation: Any) -> None:
        model = isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel)
        if model and annotation.__name__ not in found:
            found.add(annotation.__name__)
            for field in annotation.model_fields.values():
                walk(field.annotation)
        for arg in typing.get_args(annotation):
            walk(arg)

    for field in model.model_fields.values():
        walk(field.annotation)
    return found


def test_nested_objects_become_the_runtime_bridge_s_models(recorded: types.ModuleType) -> None:
    assert _runtime_names(schema_to_model(NEST_SCHEMA, name="nest")) <= set(recorded.__all__)
    item = recorded.NestEditsItem
    assert set(item.model_fields) == {"oldText", "newText"}
    assert _annotation(recorded.NestInput, "edits") == list[item] | None
    assert _annotation(recorded.NestInput, "shape") == recorded.NestShape1 | recorded.NestShape2 | None
    # A $ref cycle is typed by name; a closed object refuses what its schema refuses.
    assert _annotation(recorded.Node, "children") == list[recorded.Node] | None
    assert _annotation(recorded.Node, "next") == recorded.Node | None
    with pytest.raises(pydantic.ValidationError):
        item(oldText="a", newText="b", extra=1)


async def test_a_call_with_nested_models_sends_what_execute_sends(recorded: types.ModuleType) -> None:
    sent = await recorded.nest(
        path="a.txt",
        edits=[recorded.NestEditsItem(oldText="x", newText="y")],
        tree=recorded.Node(value=1, children=[recorded.Node(value=2, next=None)]),
        shape=recorded.NestShape2(side=3),
        ratio=1,
    )
    arguments = {
        "path": "a.txt",
        "edits": [{"oldText": "x", "newText": "y"}],
        "tree": {"value": 1, "children": [{"value": 2, "next": None}]},
        "shape": {"side": 3},
        "ratio": 1,
    }
    tools = {tool.name: tool for tool in await load_mcp_tools(StdioServer(PYTHON, RECORDER[1:]))}
    assert sent == (await tools["nest"].execute(arguments)).text  # the same JSON text, byte for byte
    assert json.loads(sent) == arguments  # unset fields stay out, an explicit None is sent
    assert '"ratio": 1' in sent and "1.0" not in sent  # a number stays as given


async def test_arguments_the_schema_refuses_raise_without_reaching_the_server(
    recorded: types.ModuleType,
) -> None:
    with pytest.raises(ToolCallError, match="path") as caught:
        await recorded.nest(path=3)
    assert caught.value.result.is_error


# -- what a call returns -----------------------------------------------------------------------------------

REPORT = {"temperature": 21, "conditions": "sunny", "wind": {"speed": 12.5, "unit": "kmh"}}


async def test_a_tool_with_an_output_schema_returns_its_model(recorded: types.ModuleType) -> None:
    weather = await recorded.weather(report=REPORT)
    assert isinstance(weather, recorded.WeatherOutput)
    assert weather.model_dump(by_alias=True, exclude_unset=True) == REPORT
    assert weather.temperature == 21 and isinstance(weather.temperature, int)
    assert isinstance(weather.wind, recorded.WeatherOutputWind) and weather.wind.unit == "kmh"
    extra = await recorded.weather(report={**REPORT, "humidity": 40})
    assert extra.model_dump(by_alias=True, exclude_unset=True) == {**REPORT, "humidity": 40}


async def test_structured_content_that_breaks_the_schema_raises(recorded: types.ModuleType) -> None:
    with pytest.raises(ToolCallError, match="does not match the outputSchema") as caught:
        await recorded.weather(report={"temperature": "hot"})
    assert caught.value.result.details["structuredContent"] == {"temperature": "hot"}
    raw = await raw_result(recorded.weather)(report={"temperature": "hot"})
    assert raw.details["structuredContent"] == {"temperature": "hot"} and not raw.is_error


async def test_an_is_error_answer_raises_with_the_server_s_text(recorded: types.ModuleType) -> None:
    with pytest.raises(ToolCallError) as caught:
        await recorded.refuse(reason="not today")
    assert str(caught.value).endswith("not today")  # as the model reads it: "[tool error] not today"
    assert caught.value.result.is_error and str(caught.value) == caught.value.result.text


async def test_a_tool_without_an_output_schema_returns_its_text(recorded: types.ModuleType) -> None:
    assert await recorded.nest(path="p") == '{"path": "p"}'
    # No text at all: the structured content, as JSON (what `as_function` returns too).
    assert json.loads(await recorded.record(from_="Paris")) == {"arguments": {"from": "Paris"}}


async def test_raw_result_gives_the_whole_result(recorded: types.ModuleType) -> None:
    raw = await raw_result(recorded.record)(from_="Paris", max_results=2)
    assert isinstance(raw, AgentToolResult)
    assert raw.details["structuredContent"] == {"arguments": {"from": "Paris", "max-results": 2}}
    refused = await raw_result(recorded.refuse)(reason="no")
    assert refused.is_error and refused.text.endswith("no")
    # Outside raw_result, the same function returns (or raises) as typed again.
    assert json.loads(await recorded.record(from_="x"))["arguments"] == {"from": "x"}

    async def not_generated() -> str:
        return "x"

    with pytest.raises(UserError, match="raw_result takes a function"):
        await raw_result(not_generated)()


def test_run_sync_calls_a_generated_function_without_a_loop(recorded: types.ModuleType) -> None:
    assert run_sync(recorded.nest, path="sync") == '{"path": "sync"}'
    assert run_sync(recorded.weather, report=REPORT).conditions == "sunny"


async def test_run_sync_works_inside_a_running_loop(recorded: types.ModuleType) -> None:
    assert run_sync(recorded.nest, path="in a loop") == '{"path": "in a loop"}'


# -- real npm servers --------------------------------------------------------------------------------------


@pytest.fixture
def filesystem(tmp_path: Path) -> tuple[Path, Path]:
    """server-filesystem's module, `files.py`, serving `box/` (holding `a.txt`)."""
    if not FILESYSTEM.exists():
        pytest.skip("test servers not installed: npm ci --prefix tests")
    box = tmp_path / "box"
    box.mkdir()
    (box / "a.txt").write_text("hello\nworld\n")
    assert main(["codegen", "-o", str(tmp_path / "files.py"), "--", str(FILESYSTEM), str(box)]) == 0
    return tmp_path / "files.py", box


@pytest.mark.mypy
async def test_server_filesystem_edits_take_typed_edits(filesystem: tuple[Path, Path]) -> None:
    out, box = filesystem
    tmp_path = out.parent
    files = import_file(out)
    try:
        assert _annotation(files.EditFileInput, "edits") == list[files.EditFileEditsItem]
        edit = files.EditFileEditsItem(oldText="world", newText="there")
        done = await files.edit_file(path=str(box / "a.txt"), edits=[edit])
        assert "+there" in done.content and (box / "a.txt").read_text() == "hello\nthere\n"
        with pytest.raises(ToolCallError, match=r"denied|outside|not allowed"):
            await files.read_text_file(path=str(tmp_path / "elsewhere.txt"))
    finally:
        sys.modules.pop(out.stem, None)
    typed = mypy(tmp_path, out.name)
    assert typed.returncode == 0, typed.stdout + typed.stderr


# -- mypy --strict on programs that use a module -----------------------------------------------------------


def _doc_program() -> str:
    """The program docs/pinning.md shows using a generated `client.py`."""
    text = DOC.read_text()
    found = re.search(r"```python\n(# program\.py.*?)```", text, re.DOTALL)
    assert found, "docs/pinning.md shows no program.py"
    return found.group(1)


@pytest.mark.mypy
def test_the_documented_program_type_checks_and_a_missing_field_does_not(folder: Path) -> None:
    if not (folder / "client.py").exists():
        pytest.skip("test servers not installed: npm ci --prefix tests")
    program = _doc_program()
    assert "weather.temperature" in program
    (folder / "program.py").write_text(program)
    (folder / "wrong.py").write_text(program.replace("weather.temperature", "weather.pressure"))
    (folder / "typed_use.py").write_text(
        "from recorded import NestEditsItem, nest, weather\n\n\n"
        "async def use() -> float:\n"
        "    await nest(path='p', edits=[NestEditsItem(oldText='a', newText='b')])\n"
        "    report = await weather(report={})\n"
        "    return report.temperature + (report.wind.speed if report.wind else 0)\n"
    )
    typed = mypy(folder, "client.py", "recorded.py", "program.py", "typed_use.py")
    assert typed.returncode == 0, typed.stdout + typed.stderr
    wrong = mypy(folder, "client.py", "wrong.py")
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert '"GetStructuredContentOutput" has no attribute "pressure"' in wrong.stdout


def test_a_wrong_argument_type_failsmypy(folder: Path) -> None:
    (folder / "wrong_edit.py").write_text(
        "from recorded import nest\n\n\nasync def use() -> str:\n"
        "    return await nest(path='p', edits=[{'oldText': 'a'}])\n"
    )
    wrong = mypy(folder, "recorded.py", "wrong_edit.py")
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert 'List item 0 has incompatible type "dict[str, str]"; expected "NestEditsItem"' in wrong.stdout


# -- --check FILE ----------------------------------------------------------------------------------------


def _one_line_error(capsys: pytest.CaptureFixture[str], *needles: str) -> None:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cubepi: error: "), err
    assert all(needle in err for needle in needles), err


def test_check_takes_the_file_as_lock_check_does(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = str(folder / "recorded.py")
    assert main(["codegen", "--check", module]) == 0
    assert main(["codegen", "-o", module, "--check"]) == 0
    assert main(["codegen", "--check", module, "-o", module]) == 0
    assert f"{module}: every tool matches" in capsys.readouterr().out
    lockfile = str(tmp_path / "cubepi.lock")
    assert main(["lock", "-o", lockfile, "--", *RECORDER]) == 0
    assert main(["lock", "--check", lockfile]) == 0
    assert main(["lock", "-o", lockfile, "--check"]) == 0
    assert f"{lockfile}: every tool matches" in capsys.readouterr().out


def test_a_bad_check_spelling_is_one_line_naming_the_right_one(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module, other = str(folder / "recorded.py"), str(tmp_path / "other.py")
    assert main(["codegen", "--check", module, "-o", other]) == 2
    _one_line_error(capsys, f"cubepi codegen --check {module}", "two files")
    assert main(["lock", "--check", "a.lock", "-o", "b.lock"]) == 2
    _one_line_error(capsys, "cubepi lock --check a.lock")
    assert main(["codegen", "--check", other]) == 2
    _one_line_error(capsys, f"no {other} to check", f"cubepi codegen -o {other}", "--check FILE")
    monkeypatch.chdir(tmp_path)  # no client.py, no cubepi.lock here: the defaults
    assert main(["codegen", "--check"]) == 2
    _one_line_error(capsys, "no client.py to check")
    assert main(["lock", "--check"]) == 2
    _one_line_error(capsys, "no cubepi.lock to check", "cubepi lock -o cubepi.lock")
