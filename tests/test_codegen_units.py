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
        ("\uffff", '"\\uffff"'),
        ("\U00010000", '"\\U00010000"'),
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


# -- nested models and why a type is Any -------------------------------------------------------------------


def test_nested_objects_are_models_named_as_the_runtime_names_them(tmp_path: Path, load: Any) -> None:
    node = {
        "type": "object",
        "properties": {
            "v": {"type": "integer"},
            "kids": {"type": "array", "items": {"$ref": "#/$defs/none"}},
        },
        "required": ["v"],
    }
    properties = {
        "root": {"$ref": "#/$defs/none"},
        "again": {"$ref": "#"},
        "pair": {"anyOf": [{"$ref": "#/$defs/none"}, {"type": "null"}]},
        "shape": {
            "anyOf": [
                {"type": "object", "properties": {"r": {"type": "number"}}},
                {"type": "object", "properties": {"s": {"type": "string"}}, "additionalProperties": False},
            ]
        },
        "table": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    }
    definition = tool("t", properties, required=["root"])
    definition["inputSchema"]["$defs"] = {"none": node}
    source = generate(lock(server("s", definition)))
    ruff(source, tmp_path)
    got = {name: fields(cls) for name, cls in classes(source).items()}
    # "none" would be the keyword None as a class name.
    assert got["None_"] == {"v": ("int", None), "kids": ("list[None_] | None", "None")}
    assert got["TInput"] == {
        "root": ("None_", None),
        "again": ("TInput | None", "None"),
        "pair": ("None_ | None", "None"),
        "shape": ("TShape1 | TShape2 | None", "None"),
        "table": ("dict[str, list[str]] | None", "None"),
    }
    assert params(functions(source)["t"])["pair"] == ("None_ | Unset | None", "UNSET")
    assert params(functions(source)["t"])["again"] == ("TInput | Unset", "UNSET")
    assert 'extra="forbid"' in source.split("class TShape2")[1].split("class")[0]
    assert 'strict=True, extra="allow"' in source.split("class TShape1")[1].split("class")[0]
    module = load(source)
    tree = module.None_(v=1, kids=[module.None_(v=2)])
    assert cubepi.codegen._wire({"x": [tree]}) == {"x": [{"v": 1, "kids": [{"v": 2}]}]}
    assert module.TInput(root=tree).again is None


def test_what_no_type_says_is_any_with_a_comment(tmp_path: Path) -> None:
    properties = {
        "ref": {"$ref": "#/$defs/missing"},
        "enum": {"enum": [{"a": 1}, 1.5]},
        "mixed": {"allOf": [{"type": "string"}, {"minLength": 1}]},
        "tuple": {"type": "array", "prefixItems": [{"type": "string"}]},
        "free": {},
        "loop": {"$ref": "#/$defs/loop"},
        "branch": {"anyOf": [{"$ref": "#/$defs/missing"}, {"type": "string"}, {"enum": [None]}]},
    }
    definition = tool("t", properties, required=list(properties))
    definition["inputSchema"]["$defs"] = {"loop": {"type": "array", "items": {"$ref": "#/$defs/loop"}}}
    source = generate(lock(server("s", definition)))
    ruff(source, tmp_path)
    model = source.split("class TInput")[1].split("async def")[0]
    why = cubepi.codegen
    assert f"    # Any: {why.ANY_REF}\n    ref: Any\n" in model
    assert f"    # Any: {why.ANY_ENUM}\n    enum: Any\n" in model
    assert "    mixed: Any\n" in model and why.ANY_MIXED.split()[0] in model
    assert f"    # Any: {why.ANY_TUPLE}\n    tuple: list[Any]\n" in model
    assert "    free: Any\n" in model and "# Any" not in model.split("free:")[0].splitlines()[-1]
    assert f"    # Any: {why.ANY_REF}\n    loop: list[Any]\n" in model
    assert f"    # Any: {why.ANY_REF}\n    branch: Any\n" in model
    signature = source.split("async def t(")[1]
    assert f"    # Any: {why.ANY_REF}\n    ref: Any,\n" in signature


def test_schema_fallbacks_type_what_they_can() -> None:
    properties = {
        "nums": {"anyOf": [{"type": "array", "items": {"type": "number"}}, {"const": "x"}, {}]},
        "kinds": {"anyOf": [{"type": ["integer", "null"]}, {"type": "boolean"}, {"$ref": "#"}]},
        "obj": {"anyOf": [{"type": "object"}, {"$ref": "#"}]},
        "odd": {"anyOf": [{"type": "color"}, {"$ref": "#"}]},
        "lit": {"anyOf": [{"enum": ["a", None]}, {"$ref": "#"}]},
    }
    source = generate(lock(server("s", tool("t", properties, required=list(properties)))))
    got = fields(classes(source)["TInput"])
    assert got["nums"] == ("Any", None)
    assert got["kinds"] == ("int | bool | TInput | None", None)
    assert got["obj"] == ("dict[str, Any] | TInput", None)
    assert got["odd"] == ("Any", None)  # an unknown type is normalised to {}: anything
    assert got["lit"] == ("Literal['a'] | TInput | None", None)


def test_numbers_stay_as_given_in_a_model(load: Any) -> None:
    output = {"type": "object", "properties": {"n": {"type": "number"}, "i": {"enum": [1, 2.0]}}}
    source = generate(lock(server("s", tool("t", {"n": {"type": "number"}}, outputSchema=output))))
    assert "from cubepi.codegen import UNSET, GeneratedClient, Number, Unset\n" in source
    module = load(source)
    assert repr(module.TInput(n=1).n) == "1" and repr(module.TOutput.model_validate({"n": 2.5}).n) == "2.5"
    assert fields(classes(source)["TOutput"])["i"] == ("Literal[1, 2] | None", "None")
    # Output models read JSON as JSON Schema does; input models convert nothing.
    assert module.TOutput.model_validate({"i": 2.0}).i == 2
    with pytest.raises(Exception, match="valid"):
        module.TInput(n="1")


def test_long_unions_in_a_list_become_an_alias_after_the_classes(tmp_path: Path, load: Any) -> None:
    branch = {"type": "object", "properties": {"a_rather_long_property_name": {"type": "string"}}}
    items = {"anyOf": [branch, {**branch, "required": ["a_rather_long_property_name"]}, {"type": "string"}]}
    properties = {"things": {"type": "array", "items": items}}
    source = generate(lock(server("s", tool("make_a_long_name", properties, required=["things"]))))
    ruff(source, tmp_path)
    alias = "MakeALongNameThingsItem"
    assert fields(classes(source)["MakeALongNameInput"])["things"] == (f"list[{alias}]", None)
    assert source.index(f"\n{alias} = ") > source.index("async def make_a_long_name(")
    module = load(source)
    one = getattr(module, alias).__args__[0]
    assert module.MakeALongNameInput(things=[one(), "x"]).things[1] == "x"


def test_class_names_are_capped_and_unique(tmp_path: Path) -> None:
    inner = {"type": "object", "properties": {"x": {"type": "string"}}}
    long = "p" * 70
    properties = {long: inner, long + "q": inner | {"required": ["x"]}}
    source = generate(lock(server("s", tool("t", properties))))
    ruff(source, tmp_path)
    names = [name for name in classes(source) if name != "TInput"]
    assert len(names) == 2 and len(set(names)) == 2 and all(len(name) <= 62 for name in names)


# -- what a call returns -------------------------------------------------------------------------------


def answering(module: Any, monkeypatch: pytest.MonkeyPatch, result: AgentToolResult) -> list[Any]:
    """Make every call of `module` answer `result`; the arguments `execute` got, in a list."""
    sent: list[Any] = []

    class Answer:
        async def execute(self, arguments: Any) -> AgentToolResult:
            sent.append(arguments)
            return result

    monkeypatch.setattr(module._CLIENT, "_tool", lambda *_: Answer())
    return sent


OUTPUT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


async def test_returns_and_errors(monkeypatch: pytest.MonkeyPatch, load: Any) -> None:
    from cubepi.errors import ToolCallError
    from cubepi.tools import ImageContent, TextContent

    module = load(generate(lock(server("s", tool("plain"), tool("typed", outputSchema=OUTPUT)))))
    image = ImageContent(data="AAAA", mime_type="image/png")
    answering(module, monkeypatch, AgentToolResult([TextContent("a"), image, TextContent("b")]))
    assert await module.plain() == "a\nb"
    answering(module, monkeypatch, AgentToolResult([image], details={"structuredContent": {"é": 1}}))
    assert await module.plain() == '{"é": 1}'
    answering(module, monkeypatch, AgentToolResult([], details={"structuredContent": {"n": 3}}))
    assert (await module.typed()).n == 3
    failed = AgentToolResult([TextContent("nope")], is_error=True)
    answering(module, monkeypatch, failed)
    for function in (module.plain, module.typed):
        with pytest.raises(ToolCallError, match=r"^nope$") as caught:
            await function()
        assert caught.value.result is failed
    answering(module, monkeypatch, AgentToolResult([], is_error=True))
    with pytest.raises(ToolCallError, match="tool 'plain' failed without a message"):
        await module.plain()
    answering(module, monkeypatch, AgentToolResult([], details={"structuredContentError": "bad at /n"}))
    with pytest.raises(ToolCallError, match=r"^tool 'typed': bad at /n$"):
        await module.typed()
    answering(module, monkeypatch, AgentToolResult([], details={"structuredContent": {"n": "x"}}))
    with pytest.raises(ToolCallError, match=r"^tool 'typed': structuredContent is not a TypedOutput: "):
        await module.typed()


async def test_raw_result_is_for_one_call(monkeypatch: pytest.MonkeyPatch, load: Any) -> None:
    from cubepi.codegen import raw_result

    module = load(generate(lock(server("s", tool("plain", {"a": {"type": "string"}})))))
    failed = AgentToolResult([], is_error=True)
    sent = answering(module, monkeypatch, failed)
    assert await raw_result(module.plain)(a="x") is failed
    assert sent == [{"a": "x"}]
    assert not cubepi.codegen._RAW.get()  # reset: the next call raises again
    with pytest.raises(Exception, match="failed without a message"):
        await module.plain()

    calls: list[bool] = []

    async def nested() -> str:
        calls.append(cubepi.codegen._RAW.get())
        result: str = await module.plain()
        return result

    class Inner:  # a call made while the asked one runs (a callback's) is not raw
        async def execute(self, arguments: Any) -> AgentToolResult:
            calls.append(cubepi.codegen._RAW.get())
            return AgentToolResult([])

    monkeypatch.setattr(module._CLIENT, "_tool", lambda *_: Inner())
    assert (await raw_result(nested)()).content == []
    assert calls == [True, False]


def test_run_sync_returns_what_the_function_returns() -> None:
    from cubepi.codegen import run_sync

    async def add(a: int, *, b: int) -> int:
        return a + b

    assert run_sync(add, 1, b=2) == 3

    async def in_a_loop() -> int:
        return run_sync(add, 2, b=3)

    import anyio

    assert anyio.run(in_a_loop) == 5


def test_dicts_count_toward_the_depth_like_lists(load: Any) -> None:
    def nested(levels: int) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        for _ in range(levels):
            schema = {"type": "object", "additionalProperties": schema}
        return schema

    source = generate(lock(server("s", tool("t", {"d8": nested(8), "d9": nested(9)}, required=["d8", "d9"]))))
    got = params(functions(source)["t"])
    assert got["d8"][0] == "dict[str, " * 8 + "str" + "]" * 8
    assert got["d9"][0] == "dict[str, " * 9 + "Any" + "]" * 9


def test_docstrings_break_at_spaces_only_and_document_via(load: Any) -> None:
    hyphenated = "a-very-long-hyphenated-identifier-that-would-cross-the-line"
    description = "word " * 14 + hyphenated + " end"
    module = load(generate(lock(server("s", tool("t", description=description)))))
    doc = inspect.getdoc(module.t) or ""
    assert any(line.strip().startswith(hyphenated) for line in doc.splitlines()), doc
    assert "    via: call this server instead of the module's (see `use_server`)." in doc


def test_a_docstring_that_ends_in_a_quote_stays_a_docstring(load: Any) -> None:
    properties = {
        "n": {"type": "object", "description": 'a "quoted"', "properties": {"x": {"type": "string"}}}
    }
    module = load(generate(lock(server("s", tool("t", properties)))))
    assert (inspect.getdoc(module.TN) or "").strip() == 'a "quoted"'


def test_several_reasons_for_any_wrap_within_the_line_length(tmp_path: Path) -> None:
    schema = {
        "anyOf": [
            {"type": "array", "prefixItems": [{}]},
            {"type": "object", "additionalProperties": {"$ref": "#/$defs/x"}},
        ]
    }
    source = generate(lock(server("s", tool("t", {"p": schema}, required=["p"]))))
    ruff(source, tmp_path)
    model = source.split("class TInput")[1].split("async def")[0].splitlines()
    comment = [line for line in model if line.lstrip().startswith("# ")]
    why = cubepi.codegen
    assert len(comment) == 2 and max(map(len, comment)) <= why.WIDTH
    assert (
        " ".join(line.strip().removeprefix("# ") for line in comment)
        == f"Any: {why.ANY_TUPLE}; {why.ANY_REF}"
    )
