"""`cubepi.codegen` without a server: what `generate` writes for each kind of schema and name, that it stays
what ruff leaves alone, that server text never becomes code, and what `GeneratedClient` sends to
`execute`. (tests/mcp/test_codegen.py runs generated modules against real servers, ruff and mypy.)"""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import cubepi.codegen
from cubepi.codegen import UNSET, GeneratedClient, Unset, embedded_lock, generate, py_str
from cubepi.errors import UserError
from cubepi.mcp import HttpServer, StdioServer
from cubepi.tools import AgentToolResult

URL = "http://127.0.0.1:9/mcp"


def server(name: str, *tools: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "config": {"type": "http", "url": URL, "transport": "auto"},
        "protocol": None,
        "tools": [{"definition": tool, "sha256": "sha256:0"} for tool in tools],
    }


def lock(*servers: dict[str, Any]) -> dict[str, Any]:
    return {"cubepi_lock": 1, "servers": list(servers)}


def tool(name: str, properties: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if "required" in extra:
        schema["required"] = extra.pop("required")
    return {"name": name, "inputSchema": schema, **extra}


_counter = iter(range(10**6))


@pytest.fixture
def load() -> Iterator[Any]:
    """Import generated source as a module (registered, as pydantic needs), removed afterwards."""
    names: list[str] = []

    def run(source: str) -> types.ModuleType:
        name = f"generated_{next(_counter)}"
        module = types.ModuleType(name)
        sys.modules[name] = module
        names.append(name)
        exec(compile(source, f"{name}.py", "exec"), module.__dict__)
        return module

    yield run
    for name in names:
        sys.modules.pop(name, None)


def functions(source: str) -> dict[str, ast.AsyncFunctionDef]:
    return {node.name: node for node in ast.parse(source).body if isinstance(node, ast.AsyncFunctionDef)}


def classes(source: str) -> dict[str, ast.ClassDef]:
    return {node.name: node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)}


def params(function: ast.AsyncFunctionDef) -> dict[str, tuple[str, str | None]]:
    """Keyword argument -> (annotation, default) as written."""
    args = function.args
    assert not args.args and not args.posonlyargs and args.vararg is None and args.kwarg is None
    return {
        arg.arg: (ast.unparse(arg.annotation) if arg.annotation else "", ast.unparse(d) if d else None)
        for arg, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    }


def fields(cls: ast.ClassDef) -> dict[str, tuple[str, str | None]]:
    return {
        node.target.id: (ast.unparse(node.annotation), ast.unparse(node.value) if node.value else None)
        for node in cls.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }


def ruff(source: str, tmp_path: Path) -> None:
    """The source passes `ruff check` and `ruff format --check` with ruff's defaults."""
    path = tmp_path / "client.py"
    path.write_text(source)
    for command in (["check", "--isolated", "--no-cache"], ["format", "--isolated", "--no-cache", "--check"]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *command, path.name], cwd=tmp_path, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr


# -- string literals -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        ("", '""'),
        ("plain", '"plain"'),
        ('a"b', "'a\"b'"),
        ("it's", '"it\'s"'),
        ('\'""', "'\\'\"\"'"),
        ("\"'", '"\\"\'"'),
        ("back\\slash", '"back\\\\slash"'),
        ("\n\r\t", '"\\n\\r\\t"'),
        ("\x00\x7f", '"\\x00\\x7f"'),
        ("\u00e9", '"\\xe9"'),
        ("\u2028", '"\\u2028"'),
        ("\U0001f600", '"\\U0001f600"'),
        (" ~", '" ~"'),
    ],
)
def test_py_str_writes_an_ascii_literal_quoted_as_ruff_prefers(text: str, literal: str) -> None:
    assert py_str(text) == literal
    assert ast.literal_eval(literal) == text


# -- types -------------------------------------------------------------------------------------------------

LONG = [f"value-{n}" for n in range(12)]
SCHEMAS: dict[str, tuple[Any, str]] = {
    "s": ({"type": "string"}, "str"),
    "i": ({"type": "integer"}, "int"),
    "n": ({"type": "number"}, "Number"),
    "b": ({"type": "boolean"}, "bool"),
    "z": ({"type": "null"}, "None"),
    "o": ({"type": "object"}, "dict[str, Any]"),
    "a": ({"type": "array", "items": {"type": "string"}}, "list[str]"),
    "a_any": ({"type": "array"}, "list[Any]"),
    "aa": ({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}, "list[list[int]]"),
    "sn": ({"type": ["string", "null"]}, "str | None"),
    "ns": ({"type": ["null", "string"]}, "str | None"),
    "in_": ({"type": ["integer", "number"]}, "Number"),
    "ni": ({"type": ["number", "integer"]}, "Number"),
    "e": ({"enum": ["a", "b"]}, "Literal['a', 'b']"),
    "en": ({"enum": ["a", None]}, "Literal['a'] | None"),
    "e_none": ({"enum": [None]}, "None"),
    "ei": ({"enum": [1, True, "x"]}, "Literal[1, True, 'x']"),
    "e_float": ({"enum": [1.5]}, "Any"),
    "e_obj": ({"enum": [{"a": 1}]}, "Any"),
    "e_empty": ({"enum": []}, "Any"),
    "c": ({"const": "fixed"}, "Literal['fixed']"),
    "c_none": ({"const": None}, "None"),
    "any_of": ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "str | int"),
    "one_of": ({"oneOf": [{"type": "integer"}, {"type": "null"}, {"type": "integer"}]}, "int | None"),
    "any_of_empty": ({"anyOf": [], "type": "string"}, "str"),
    "lit_merge": ({"anyOf": [{"const": "a"}, {"const": "b"}, {"const": "a"}]}, "Literal['a', 'b']"),
    "lit_str": ({"anyOf": [{"const": "a"}, {"type": "string"}]}, "str"),
    "lit_int": ({"anyOf": [{"const": 1}, {"type": "number"}]}, "Number"),
    "lit_int_kept": ({"anyOf": [{"const": 1}, {"type": "string"}]}, "Literal[1] | str"),
    "bool_int": ({"anyOf": [{"const": True}, {"const": 1}]}, "Literal[True, 1]"),
    "with_any": ({"anyOf": [{"type": "string"}, {}]}, "Any"),
    "none_first": ({"anyOf": [{"type": "null"}, {"type": "string"}]}, "str | None"),
    "unknown": ({"type": "color"}, "Any"),
    "mixed_unknown": ({"type": ["string", "color"]}, "Any"),
    "no_type": ({"description": "anything"}, "Any"),
    "not_a_schema": (True, "Any"),
    "long": ({"enum": LONG}, "ToolLong"),
    "long_again": ({"enum": LONG}, "ToolLong"),
    "long_items": ({"type": "array", "items": {"enum": [*LONG, "x"]}}, "list[ToolLongItemsItem]"),
}


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "array", "items": schema}
    return schema


def test_each_schema_gets_its_python_type(tmp_path: Path, load: Any) -> None:
    properties = {name: schema for name, (schema, _) in SCHEMAS.items()}
    properties["deep"] = _deep(8)
    properties["deeper"] = _deep(9)
    source = generate(lock(server("s", tool("tool", properties, required=list(properties)))))
    got = params(functions(source)["tool"])
    for name, (_, expected) in SCHEMAS.items():
        assert got[name] == (expected, None), name
    assert got["deep"][0] == "list[" * 8 + "str" + "]" * 8
    # Past the depth the generator writes, `Any`, and a comment says why.
    assert got["deeper"][0] == "list[" * 9 + "Any" + "]" * 9
    assert source.count(f"    # Any: {cubepi.codegen.ANY_DEEP}\n    deeper:") == 2
    # A long enum is an alias, written once, exploded one value a line (as ruff keeps it).
    assert source.count("ToolLong = Literal[\n") == 1
    assert '\n    "value-11",\n]\n' in source
    ruff(source, tmp_path)
    module = load(source)
    assert module.ToolLong.__args__ == tuple(LONG)


def test_optional_arguments_default_to_unset_and_fields_to_none(tmp_path: Path, load: Any) -> None:
    properties = {
        "need": {"type": "string"},
        "maybe": {"type": "integer"},
        "nullable": {"type": ["string", "null"]},
        "anything": {},
    }
    source = generate(lock(server("s", tool("t", properties, required=["need"]))))
    assert params(functions(source)["t"]) == {
        "need": ("str", None),
        "maybe": ("int | Unset", "UNSET"),
        "nullable": ("str | Unset | None", "UNSET"),
        "anything": ("Any | Unset", "UNSET"),
        "via": ("StdioServer | HttpServer | None", "None"),
    }
    assert fields(classes(source)["TInput"]) == {
        "need": ("str", None),
        "maybe": ("int | None", "None"),
        "nullable": ("str | None", "None"),
        "anything": ("Any", "None"),
    }
    # Required first in the signature; the model keeps the schema's order.
    assert list(params(functions(source)["t"])) == ["need", "maybe", "nullable", "anything", "via"]
    ruff(source, tmp_path)
    module = load(source)
    assert module.TInput(need="x").model_dump(exclude_unset=True) == {"need": "x"}


def test_names_that_are_not_python_keep_their_wire_name_as_alias(tmp_path: Path, load: Any) -> None:
    properties = {
        "max-results": {"type": "integer"},
        "from": {"type": "string"},
        "str": {"type": "string"},
        "list": {"type": "integer"},
        "Any": {"type": "integer"},
        "via": {"type": "string"},
        "ok": {"type": "string"},
        "long": {"enum": LONG},
        "ToolLong": {"enum": LONG},
    }
    source = generate(lock(server("s", tool("tool", properties, required=["from"]))))
    model = fields(classes(source)["ToolInput"])
    assert model["from_"] == ("str", "Field(alias='from')")
    assert model["max_results"] == ("int | None", "Field(default=None, alias='max-results')")
    assert model["str_"] == ("str | None", "Field(default=None, alias='str')")
    assert model["list_"][1] == "Field(default=None, alias='list')"
    assert model["Any_"][1] == "Field(default=None, alias='Any')"
    assert model["via"] == ("str | None", "None")
    assert model["ok"] == ("str | None", "None")
    # The alias of the long enum is taken, so the field with its name is renamed.
    assert model["ToolLong_"] == ("ToolLong | None", "Field(default=None, alias='ToolLong')")
    signature = params(functions(source)["tool"])
    assert list(signature) == [
        "from_",
        "max_results",
        "str_",
        "list_",
        "Any_",
        "via",
        "ok",
        "long",
        "ToolLong_",
        "via_2",
    ]
    assert signature["via_2"] == ("StdioServer | HttpServer | None", "None")
    call = functions(source)["tool"].body[-1]
    assert "'max-results': max_results" in ast.unparse(call) and ast.unparse(call).endswith("via_2)")
    ruff(source, tmp_path)
    module = load(source)
    assert module.ToolInput(from_="a", max_results=2).model_dump(by_alias=True, exclude_unset=True) == {
        "from": "a",
        "max-results": 2,
    }


@pytest.mark.parametrize(
    ("tool_name", "function"),
    [
        ("get-sum", "get_sum"),
        ("Get Sum", "get_sum"),
        ("1st", "t_1st"),
        ("class", "class_"),
        ("match", "match_"),
        ("", "tool"),
        ("\u00e9\u00e9", "tool"),
        ("__init__", "init"),
        ("str", "str_2"),
        ("use_server", "use_server_2"),
        ("annotations", "annotations_2"),
    ],
)
def test_tool_names_become_safe_function_names(tool_name: str, function: str) -> None:
    source = generate(lock(server("s", tool(tool_name))))
    assert function in functions(source)
    assert f"        {py_str(tool_name)},\n" in source


def test_names_that_collide_are_made_unique(tmp_path: Path, load: Any) -> None:
    source = generate(lock(server("s", tool("a-b"), tool("a_b"), tool("a b"))))
    assert set(functions(source)) == {"a_b", "a_b_2", "a_b_3"}
    assert max(len(line) for line in source.split("_LOCK_JSON")[0].splitlines()) <= 88
    assert set(classes(source)) == {"ABInput", "AB2Input", "AB3Input"}
    ruff(source, tmp_path)
    module = load(source)
    assert module.__all__ == ["AB2Input", "AB3Input", "ABInput", "a_b", "a_b_2", "a_b_3", "use_server"]


def test_several_servers_prefix_their_functions(tmp_path: Path) -> None:
    source = generate(lock(server("files", tool("read")), server("web", tool("read"))))
    assert {"files_read", "web_read"} <= set(functions(source))
    assert "'files',\n" in ast.unparse(functions(source)["files_read"]) or '"files",' in source
    ruff(source, tmp_path)


def test_an_output_schema_gets_a_model(tmp_path: Path, load: Any) -> None:
    output = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}
    source = generate(lock(server("s", tool("add", outputSchema=output), tool("plain", outputSchema=[1]))))
    assert fields(classes(source)["AddOutput"])["result"] == ("int", None)
    assert "PlainOutput" not in source
    assert "Returns its structured content as `AddOutput`;" in source
    assert ") -> AddOutput:" in source and ") -> str:" in source
    ruff(source, tmp_path)
    assert load(source).AddOutput.model_validate({"result": 2}).result == 2


def test_imports_are_only_those_used(tmp_path: Path) -> None:
    bare = generate(lock(server("s", tool("t", {"a": {"type": "string"}}, required=["a"]))))
    assert "from typing" not in bare and "UNSET" not in bare and "Field" not in bare
    assert "from cubepi.codegen import GeneratedClient\n" in bare
    assert "from pydantic import BaseModel, ConfigDict\n" in bare
    ruff(bare, tmp_path)
    full = generate(lock(server("s", tool("t", {"a-b": {"enum": ["x"]}, "c": {}}))))
    assert "from typing import Any, Literal\n" in full
    assert "from cubepi.codegen import UNSET, GeneratedClient, Unset\n" in full
    assert "from pydantic import BaseModel, ConfigDict, Field\n" in full
    ruff(full, tmp_path)


def test_long_lines_are_split_as_ruff_splits_them(tmp_path: Path, load: Any) -> None:
    long = "a_very_long_property_name_that_goes_on_and_on_and_on_and_on_for_a_while"
    properties = {
        long: {"type": ["string", "integer", "boolean", "null"]},
        "x-" + long: {"type": "string"},
        "y-" + long: {"type": "string"},
        long + "_three_parts_and_more_more_more": {"type": ["string", "integer", "boolean", "null", "array"]},
    }
    required = ["y-" + long]
    source = generate(lock(server("s", tool("t", properties, required=required))))
    ruff(source, tmp_path)
    # Past the width only where a name alone is longer.
    assert all(len(line) <= 88 or long in line for line in source.split("_LOCK_JSON")[0].splitlines())
    module = load(source)
    assert set(module.TInput.model_fields) == {
        long,
        "x_" + long,
        "y_" + long,
        long + "_three_parts_and_more_more_more",
    }


# -- text from the server ----------------------------------------------------------------------------------

HOSTILE = [
    '"""; import os; os.system("echo pwned") #',
    'ends with a quote"',
    '"starts with a quote',
    'a backslash \\ and \\n and \\""" and a trailing one \\',
    "\u2028line\u2029separators\x0bvertical\x0cfeed\ttab\x00nul",
    "\n    indented\n        more\n    back\n",
    "x" * 200,
]


@pytest.mark.parametrize("text", HOSTILE)
def test_server_text_is_a_docstring_and_never_code(text: str, tmp_path: Path, load: Any) -> None:
    properties = {"p": {"type": "string", "description": text, "enum": [text]}}
    definition = tool(text, properties, description=text, title=text)
    source = generate(lock(server(text, definition)))
    ruff(source, tmp_path)
    module = load(source)
    (name,) = [n for n in module.__all__ if n.islower() and n != "use_server"]
    function = getattr(module, name)
    doc = inspect.getdoc(function) or ""
    shown = " ".join("".join(c if c.isprintable() or c == "\n" else " " for c in text).split())
    assert " ".join(doc.split()).startswith(shown)
    assert "Args:" in doc and "p:" in doc
    call = ast.unparse(functions(source)[name].body[-1])
    assert ast.literal_eval(call.split("(", 1)[1].split(", ", 1)[0]) == text  # the server's name, exactly
    assert embedded_lock(source) == lock(server(text, definition))


def test_no_description_is_said(load: Any) -> None:
    module = load(generate(lock(server("s", tool("t", {"p": {"type": "string"}})))))
    assert inspect.getdoc(module.t).startswith("(no description)")  # type: ignore[union-attr]
    assert "    p: (no description)" in (inspect.getdoc(module.t) or "")


def test_the_module_docstring_names_the_servers() -> None:
    stdio = server("s", tool("t"))
    stdio["config"] = {"type": "stdio", "command": "npx", "args": ["-y", "pkg"]}
    source = generate(lock(stdio, server("h", tool("t"))))
    assert ast.get_docstring(ast.parse(source), clean=False).startswith(
        f"Typed client for npx -y pkg, {URL}."
    )  # type: ignore[union-attr]


# -- the embedded lock -------------------------------------------------------------------------------------


def test_the_lock_is_embedded_as_readable_json(tmp_path: Path) -> None:
    data = lock(
        server("s", tool("t", {"p": {"type": "string", "pattern": '^\\d+"$'}}, description='"""\u00e9'))
    )
    source = generate(data)
    assert embedded_lock(source) == data
    body = source.split('_LOCK_JSON = """\\\n', 1)[1]
    assert body.startswith("{\n") and body.rstrip().endswith('}\n"""\n_CLIENT = GeneratedClient(_LOCK_JSON)')
    assert '"cubepi_lock": 1,' in body
    assert source.split("_LOCK_JSON = ")[1].isascii()
    ruff(source, tmp_path)


def test_embedded_lock_refuses_what_codegen_did_not_write() -> None:
    with pytest.raises(UserError, match="not a Python module"):
        embedded_lock("def (")
    for source in (
        "x = 1\n",
        "_LOCK_JSON = 1\n",
        "_LOCK_JSON = '[1]'\n",
        "other = '{}'\n",
        "_LOCK_JSON: str = '{}'\n",
    ):
        with pytest.raises(UserError, match="no embedded lock"):
            embedded_lock(source)
    assert embedded_lock("y = 2\n_LOCK_JSON = '{\"a\": 1}'\n") == {"a": 1}
    assert embedded_lock("x, _LOCK_JSON = 1, 2\n_LOCK_JSON = '{}'\n") == {}


def test_generate_is_deterministic() -> None:
    data = lock(server("s", tool("b"), tool("a", {"z": {"type": "string"}, "y": {"enum": LONG}})))
    assert generate(data) == generate(json.loads(json.dumps(data)))
    source = generate(data)
    assert source.index("async def a(") < source.index("async def b(")


# -- the client ---------------------------------------------------------------------------------------------


class Recorded:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def tool(self, client: GeneratedClient) -> Any:
        outer = self

        class Fake:
            def __init__(self, name: str) -> None:
                self.name = name

            async def execute(self, arguments: Any) -> AgentToolResult:
                outer.sent.append((self.name, arguments))
                return AgentToolResult(content=[])

        return lambda server_name, tool_name, via: Fake(f"{server_name}/{tool_name}/{via is not None}")


def test_unset_is_a_falsy_singleton() -> None:
    assert Unset() is UNSET and repr(UNSET) == "UNSET" and not UNSET


async def test_a_call_sends_only_the_arguments_given(monkeypatch: pytest.MonkeyPatch, load: Any) -> None:
    properties = {"a": {"type": "string"}, "b-c": {"type": ["integer", "null"]}, "d": {"type": "boolean"}}
    module = load(generate(lock(server("s", tool("t", properties, required=["a"])))))
    recorded = Recorded()
    monkeypatch.setattr(module._CLIENT, "_tool", recorded.tool(module._CLIENT))
    await module.t(a="x")
    await module.t(a="y", b_c=None, d=False)
    await module.t(a="z", b_c=3, via=HttpServer(URL))
    assert recorded.sent == [
        ("s/t/False", {"a": "x"}),
        ("s/t/False", {"a": "y", "b-c": None, "d": False}),
        ("s/t/True", {"a": "z", "b-c": 3}),
    ]


def test_the_client_builds_each_tool_once_per_server(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = server("s", tool("t", {"a": {"type": "string"}}), tool("u"))
    entry["config"] = {"type": "stdio", "command": "cmd", "args": ["x"], "env": {"TOKEN": "${TOKEN}"}}
    client = GeneratedClient(json.dumps(lock(entry)))
    monkeypatch.setenv("TOKEN", "secret")
    first = client._tool("s", "t", None)
    assert first.name == "t" and client._tool("s", "t", None) is first
    assert client._tool("s", "u", None).name == "u"
    other = StdioServer("other", [])
    replaced = client._tool("s", "t", other)
    assert replaced is not first and client._tool("s", "t", other) is replaced
    client.use_server(other)
    assert client._tool("s", "t", None) is replaced
    assert client._tool("s", "t", StdioServer("third", [])) is not replaced


def test_use_server_names_the_server_to_replace() -> None:
    one = GeneratedClient(json.dumps(lock(server("s", tool("t")))))
    one.use_server(HttpServer(URL))
    one.use_server(HttpServer(URL), "s")
    with pytest.raises(UserError, match="no server 'x'"):
        one.use_server(HttpServer(URL), "x")
    two = GeneratedClient(json.dumps(lock(server("a", tool("t")), server("b", tool("t")))))
    with pytest.raises(UserError, match="say which server to replace: one of a, b"):
        two.use_server(HttpServer(URL))
    two.use_server(HttpServer(URL), "b")
    assert set(two._replaced) == {"b"}


def test_the_module_is_importable_as_generated(tmp_path: Path) -> None:
    (tmp_path / "client_x.py").write_text(generate(lock(server("s", tool("t", {"a": {"type": "string"}})))))
    done = subprocess.run(
        [sys.executable, "-c", "import client_x, inspect; print(inspect.iscoroutinefunction(client_x.t))"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(Path(cubepi.codegen.__file__).parents[1]), "PATH": ""},
    )
    assert done.stdout.strip() == "True", done.stderr


def test_short_literals_stay_inline_and_deep_unions_end_in_any() -> None:
    inline, aliased = "a" * 29, "b" * 30  # Literal["a…"] is 40 characters, at most what stays inline
    nested: dict[str, Any] = {"type": "string"}
    for _ in range(40):
        nested = {"anyOf": [nested]}
    properties = {"x": {"enum": [inline]}, "y": {"enum": [aliased]}, "z": nested}
    source = generate(lock(server("s", tool("t", properties, required=list(properties)))))
    got = params(functions(source)["t"])
    assert got["x"][0] == f"Literal['{inline}']"
    assert got["y"][0] == "TY"
    assert got["z"][0] == "Any"
