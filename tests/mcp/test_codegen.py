"""Generated clients (issue 35): `cubepi codegen` over the schema corpus (real servers' tools), a 2026-07-28
server, server-everything and hostile definitions. Every module imports, passes ruff and `mypy --strict`,
and a call through a generated function sends exactly what the tool's `execute` sends; `--check` tells
when the server changed."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pydantic
import pytest
from conftest import (
    EVERYTHING,
    FILESYSTEM,
    KITCHEN,
    PYTHON,
    SERVERS,
    TESTS,
    StartServer,
    import_file,
    mypy,
)

from cubepi.cli import main
from cubepi.codegen import UNSET, embedded_lock, generate, py_str, raw_result
from cubepi.errors import UserError
from cubepi.mcp import HttpServer, StdioServer, load_mcp_tools
from cubepi.tools import AgentTool, AgentToolResult

CORPUS_SERVER = str(SERVERS / "corpus.py")
CORPUS = sorted((TESTS / "schema" / "corpus").glob("*.json"))
ROOT = TESTS.parent
# The project's own lint selection on top of ruff's defaults; long lines are the server's text, and a
# server may well name a parameter `timeout` (ASYNC109).
RUFF_SELECT = [
    "--extend-select",
    "E,W,I,B,UP,SIM,RUF,ASYNC",
    "--ignore",
    "E501,RUF001,RUF002,RUF003,ASYNC109",
]

# Definitions a hostile server could send: every name and text tries to end its string or docstring and
# run code (which would create `CANARY`), or to take a name the module needs.
CANARY = "cubepi-codegen-canary"
PAYLOAD = f'__import__("pathlib").Path("{CANARY}").touch()'
HOSTILE_TOOLS: list[dict[str, Any]] = [
    {
        "name": f'x"); {PAYLOAD} #',
        "description": f'Ends a docstring: """ + {PAYLOAD} + """ and a backslash \\ and \\""" too ""',
        "inputSchema": {
            "type": "object",
            "properties": {
                f'a"]: int = {PAYLOAD} #': {"type": "string", "description": f'"""{PAYLOAD}"""'},
                "str": {"type": "integer"},
                "count": {"type": "string", "description": "a field named `str` must not break `str` here"},
                "via": {"type": "string"},
                "UNSET": {"type": "boolean"},
                "class": {"type": "string", "enum": ['a"b', "c'd", "e\\f", "\u00e9\u2028\U0001f600"]},
                "\u00fcber": {"type": ["string", "null"]},
                "model_config": {"type": "number"},
            },
            "required": ["str", "class"],
        },
    },
    {"name": "str", "description": '"quoted first"', "inputSchema": {"type": "object"}},
    {"name": "class", "description": "\\", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "__import__", "description": "\n\n", "inputSchema": {"type": "object"}},
    {"name": "\u00e9t\u00e9 \U0001f600", "inputSchema": {"type": "object"}},
]


# -- helpers -----------------------------------------------------------------------------------------------


def _codegen(out: Path, *server: str) -> Path:
    assert main(["codegen", "-o", str(out), *server]) == 0
    return out


def _wire_names(model: type[pydantic.BaseModel]) -> dict[str, str]:
    """The generated input model's wire names -> Python names."""
    return {(field.alias or name): name for name, field in model.model_fields.items()}


def _answer(result: AgentToolResult | str) -> dict[str, Any]:
    """What the corpus server answered: its structured content (a generated function of a tool without
    an outputSchema returns it as JSON text, having no text to return)."""
    if isinstance(result, str):
        answer: dict[str, Any] = json.loads(result)
        return answer
    assert result.details is not None, result.content
    answer = result.details["structuredContent"]
    return answer


def _run(command: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, env={**os.environ, **env}, check=False
    )


# -- the modules -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_url(http_server_factory: StartServer) -> str:
    """The corpus server over Streamable HTTP: the tools of file ``<name>.json`` at ``<url>/<name>/mcp``."""
    return http_server_factory([PYTHON, CORPUS_SERVER, "http"], "").url


@pytest.fixture(scope="module")
def generated(corpus_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Every generated module of this file, by name, in one directory: one per corpus server, the
    2026-07-28 kitchen server's, server-everything's and server-filesystem's (when installed), the
    recorder's (nested objects, a `$ref` cycle, an output schema) and the hostile server's."""
    out = tmp_path_factory.mktemp("generated")
    modules = {
        path.stem: _codegen(
            out / f"client_{path.stem.replace('-', '_')}.py", "--url", f"{corpus_url}/{path.stem}/mcp"
        )
        for path in CORPUS
    }
    modules["kitchen"] = _codegen(out / "client_kitchen.py", "--", PYTHON, str(KITCHEN))
    if EVERYTHING.exists():
        modules["everything-npm"] = _codegen(out / "client_everything_npm.py", "--", str(EVERYTHING), "stdio")
    if FILESYSTEM.exists():
        (out / "box").mkdir()
        modules["filesystem-npm"] = _codegen(
            out / "client_filesystem_npm.py", "--", str(FILESYSTEM), str(out / "box")
        )
    modules["recorder"] = _codegen(out / "client_recorder.py", "--", PYTHON, str(SERVERS / "recorder.py"))
    hostile = out / "hostile.json"
    hostile.write_text(json.dumps({"tools": HOSTILE_TOOLS}))
    cwd = Path.cwd()
    os.chdir(out)  # where the canary would appear
    try:
        env = ["--env", f"CORPUS_FILE={hostile}"]
        modules["hostile"] = _codegen(out / "client_hostile.py", *env, "--", PYTHON, CORPUS_SERVER)
    finally:
        os.chdir(cwd)
    yield modules
    for path in modules.values():
        sys.modules.pop(path.stem, None)


@pytest.mark.mypy
def test_every_generated_module_passes_ruff_and_mypy_strict(generated: dict[str, Path]) -> None:
    folder = next(iter(generated.values())).parent
    ruff = [PYTHON, "-m", "ruff"]
    # Run where the modules are, as in a project of their own (cubepi is a third-party import there).
    lint = _run([*ruff, "check", "--isolated", "--no-cache", *RUFF_SELECT, "."], folder)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    formatted = _run([*ruff, "format", "--isolated", "--no-cache", "--check", "."], folder)
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    # One run over every module; this checkout's cubepi (its sources, its errors not reported).
    typed = mypy(folder, *(path.name for path in generated.values()))
    assert typed.returncode == 0, typed.stdout + typed.stderr
    assert f"no issues found in {len(generated)} source files" in typed.stdout


def test_every_corpus_tool_has_a_typed_function_and_model(generated: dict[str, Path]) -> None:
    for path in CORPUS:
        module = import_file(generated[path.stem])
        for tool in json.loads(path.read_text())["tools"]:
            name = _function_name(module, tool["name"])
            function = getattr(module, name)
            assert inspect.iscoroutinefunction(function) and name in module.__all__
            model = getattr(module, _class_name(name) + "Input")
            assert issubclass(model, pydantic.BaseModel)
            properties = tool["inputSchema"].get("properties", {})
            required = set(tool["inputSchema"].get("required", []))
            wire = _wire_names(model)
            assert set(wire) == set(properties), tool["name"]
            parameters = inspect.signature(function).parameters
            assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters.values())
            assert list(parameters)[-1] == "via" or "via" in properties
            for wire_name, python in wire.items():
                default = parameters[python].default
                assert (default is inspect.Parameter.empty) == (wire_name in required), (
                    tool["name"],
                    wire_name,
                )
                assert default in (inspect.Parameter.empty, UNSET)
            doc = inspect.getdoc(function) or ""
            assert "Args:" in doc
            if tool.get("description"):
                first = tool["description"].split()[0]
                assert doc.startswith(first), (tool["name"], doc[:60])


def _function_name(module: types.ModuleType, tool_name: str) -> str:
    """The function of `module` that calls `tool_name` (read from its code, as a reader would)."""
    source = inspect.getsource(module)
    marker = f"        {py_str(tool_name)},\n"
    before = source[: source.index(marker)]
    return before[before.rindex("\nasync def ") + len("\nasync def ") :].split("(", 1)[0]


def _class_name(function: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in function.split("_") if part)


# -- calls -----------------------------------------------------------------------------------------------


def _inputs(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Valid inputs for a corpus schema: generated ones (the corpus harness's), restricted to declared
    properties, the richest first; and the richest with its required arguments only."""
    from schema._harness import examples

    found, _ = examples(schema, 6)
    properties = schema.get("properties", {})
    kept = [{k: v for k, v in item.items() if k in properties} for item in found]
    kept.sort(key=len, reverse=True)
    required = set(schema.get("required", []))
    least = [{k: v for k, v in item.items() if k in required} for item in kept[:1]]
    return [*kept[:2], *least]


async def test_a_generated_call_sends_exactly_what_execute_sends(
    generated: dict[str, Path], corpus_url: str
) -> None:
    cases: list[tuple[Any, dict[str, str], AgentTool, dict[str, Any]]] = []
    for path in CORPUS:
        module = import_file(generated[path.stem])
        tools = {t.name: t for t in await load_mcp_tools(HttpServer(f"{corpus_url}/{path.stem}/mcp"))}
        for definition in json.loads(path.read_text())["tools"]:
            function = getattr(module, _function_name(module, definition["name"]))
            wire = _wire_names(getattr(module, _class_name(function.__name__) + "Input"))
            cases += [
                (function, wire, tools[definition["name"]], a) for a in _inputs(definition["inputSchema"])
            ]
    sent: list[str] = []

    async def call(function: Any, wire: dict[str, str], tool: AgentTool, arguments: dict[str, Any]) -> None:
        via_function = await raw_result(function)(**{wire[key]: value for key, value in arguments.items()})
        via_execute = await tool.execute(arguments)
        assert via_function.is_error == via_execute.is_error, (tool.name, arguments)
        if via_execute.is_error:  # refused before sending: the harness's input is not valid after all
            assert via_function.text == via_execute.text
            return
        answer, expected = _answer(via_function), _answer(via_execute)
        assert answer["tool"] == tool.name
        assert _canonical(answer["arguments"]) == _canonical(expected["arguments"]), (tool.name, arguments)
        assert _canonical(answer["arguments"]) == _canonical(arguments)
        sent.append(tool.name)

    limiter = anyio.CapacityLimiter(8)

    async def bounded(*case: Any) -> None:
        async with limiter:
            await call(*case)

    async with anyio.create_task_group() as group:
        for case in cases:
            group.start_soon(bounded, *case)
    assert len(set(sent)) >= 0.9 * len({case[2].name for case in cases}), (len(sent), len(cases))


def _canonical(arguments: Any) -> str:
    """JSON text that tells 1 from 1.0 and True, and keeps key order out of it."""
    return json.dumps(arguments, sort_keys=True)


async def test_an_explicit_none_is_sent_and_an_unset_argument_is_not(
    generated: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The module names the server's environment as a reference (${CORPUS_FILE}), read at the call.
    monkeypatch.setenv("CORPUS_FILE", str(generated["hostile"].parent / "hostile.json"))
    module = import_file(generated["hostile"])
    function = getattr(module, _function_name(module, HOSTILE_TOOLS[0]["name"]))
    result = await function(str_=1, class_='a"b', ber=None)
    assert _answer(result)["arguments"] == {"str": 1, "class": 'a"b', "\u00fcber": None}
    assert _answer(result)["tool"] == HOSTILE_TOOLS[0]["name"]


def _no_canary(folder: Path) -> None:
    assert not (folder / CANARY).exists() and not Path(CANARY).exists()


async def test_hostile_definitions_stay_data(
    generated: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = generated["hostile"].parent
    monkeypatch.setenv("CORPUS_FILE", str(folder / "hostile.json"))
    module = import_file(generated["hostile"])
    _no_canary(folder)
    hostile = HOSTILE_TOOLS[0]
    function = getattr(module, _function_name(module, hostile["name"]))
    doc = " ".join((inspect.getdoc(function) or "").split())  # the description, reflowed
    assert doc.startswith(" ".join(hostile["description"].split()))
    weird = next(k for k in hostile["inputSchema"]["properties"] if k.startswith('a"'))
    parameters = inspect.signature(function).parameters
    assert {"str_", "count", "via", "UNSET_", "class_", "ber", "model_config_", "via_2"} <= set(parameters)
    model = getattr(module, _class_name(function.__name__) + "Input")
    python = _wire_names(model)[weird]
    result = await function(str_=2, class_="e\\f", **{python: PAYLOAD}, via="v", UNSET_=True)
    assert _answer(result)["arguments"] == {
        "str": 2,
        "class": "e\\f",
        weird: PAYLOAD,
        "via": "v",
        "UNSET": True,
    }
    # Tools named like what the module needs get other names; each calls its own tool.
    for tool in HOSTILE_TOOLS[1:]:
        function = getattr(module, _function_name(module, tool["name"]))
        assert _answer(await function())["tool"] == tool["name"]
    _no_canary(folder)


async def test_a_2026_07_28_server_gives_a_working_client(generated: dict[str, Path]) -> None:
    module = import_file(generated["kitchen"])
    assert (
        embedded_lock(generated["kitchen"].read_text())["servers"][0]["protocol"]["version"] == "2026-07-28"
    )
    assert (await module.echo(message="hi")).result == "hi"  # an MCPServer tool has an outputSchema
    added = await module.add(a=40, b=2)
    assert isinstance(added, module.AddOutput) and added.result == 42


async def test_server_everything_gives_a_working_client(generated: dict[str, Path]) -> None:
    if "everything-npm" not in generated:
        pytest.skip("test servers not installed: npm ci --prefix tests")
    module = import_file(generated["everything-npm"])
    assert await module.echo(message="hi") == "Echo: hi"
    assert await module.get_sum(a=40, b=2) == "The sum of 40 and 2 is 42."
    # The input model's fields are the function's keyword arguments (docs/pinning.md).
    given = module.GetSumInput(a=1, b=2).model_dump(exclude_unset=True)
    assert await module.get_sum(**given) == "The sum of 1 and 2 is 3."
    weather = await module.get_structured_content(location="New York")
    assert isinstance(weather, module.GetStructuredContentOutput)
    raw = await raw_result(module.get_structured_content)(location="New York")
    assert weather.model_dump(by_alias=True, exclude_unset=True) == raw.details["structuredContent"]


async def test_the_server_is_replaced_per_call_or_for_the_module(generated: dict[str, Path]) -> None:
    module = import_file(generated["time"])
    stdio = StdioServer(
        PYTHON, [CORPUS_SERVER], env={"CORPUS_FILE": str(TESTS / "schema" / "corpus" / "time.json")}
    )
    assert _answer(await module.get_current_time(timezone="UTC"))["transport"] == "http"
    assert _answer(await module.get_current_time(timezone="UTC", via=stdio))["transport"] == "stdio"
    module.use_server(stdio)
    try:
        assert _answer(await module.get_current_time(timezone="UTC"))["transport"] == "stdio"
    finally:
        module._CLIENT._replaced.clear()
    with pytest.raises(UserError, match="no server 'other'"):
        module.use_server(stdio, "other")


# -- --check -----------------------------------------------------------------------------------------------


def test_check_passes_then_fails_after_the_server_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    version = tmp_path / "version"
    version.write_text("1")
    out = tmp_path / "client.py"
    versioned = str(SERVERS / "versioned.py")
    _codegen(out, "--env", f"VERSION_FILE={version}", "--", PYTHON, versioned)
    assert str(version) not in out.read_text()  # the env value is a ${VERSION_FILE} reference
    capsys.readouterr()
    monkeypatch.setenv("VERSION_FILE", str(version))
    assert main(["codegen", "--check", "-o", str(out)]) == 0
    assert "every tool matches" in capsys.readouterr().out
    version.write_text("2")
    assert main(["codegen", "--check", "-o", str(out)]) == 1
    report = capsys.readouterr().out
    assert "greet" in report and "old" in report and "added" in report
    assert "cubepi codegen" in report
    # The same check against a server given on the command line.
    env = ["--env", f"VERSION_FILE={version}"]
    assert main(["codegen", "--check", "-o", str(out), *env, "--", PYTHON, versioned]) == 1


def test_a_config_gives_one_module_for_every_server(
    tmp_path: Path, corpus_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "mcp.json"
    servers = {name: {"url": f"{corpus_url}/{name}/mcp"} for name in ("time", "fetch")}
    config.write_text(json.dumps({"mcpServers": servers}))
    out = _codegen(tmp_path / "client.py", "--config", str(config))
    assert "3 typed tools of 2 server(s)" in capsys.readouterr().out
    module = import_file(out)
    try:
        assert {"time_get_current_time", "time_convert_time", "fetch_fetch"} <= set(module.__all__)
        with pytest.raises(UserError, match="say which server"):
            module.use_server(HttpServer(corpus_url))
    finally:
        sys.modules.pop(out.stem, None)


def test_check_refuses_a_module_codegen_did_not_write(tmp_path: Path) -> None:
    other = tmp_path / "other.py"
    other.write_text("x = 1\n")
    with pytest.raises(UserError, match="no embedded lock"):
        embedded_lock(other.read_text())
    with pytest.raises(UserError, match="not a Python module"):
        embedded_lock("def (")
    assert main(["codegen", "--check", "-o", str(other)]) == 2


def test_generate_is_deterministic() -> None:
    lock = {
        "cubepi_lock": 1,
        "servers": [
            {"name": "s", "config": {"type": "http", "url": "http://h/mcp"}, "protocol": None, "tools": []}
        ],
    }
    assert generate(lock) == generate(json.loads(json.dumps(lock)))
