"""Typed client modules generated from a server's tools (`cubepi codegen`), and what they call through.

`generate(lock)` turns a lockfile's JSON (`cubepi.mcp._lockfile.lock_servers`) into the text of a Python
module: a Pydantic model per tool input (and output, where the tool has an ``outputSchema``), one per
nested object, and a typed ``async def`` per tool whose keyword arguments are the tool's, under Python
names. The types are read from the models the runtime bridge builds (`cubepi.schema.schema_to_model`), so
the module and a loaded tool agree on every shape and name. A call sends exactly the arguments given,
under their wire names (`UNSET` ones left out, an explicit ``None`` kept, nested models as the fields
set), through the tool's own `execute`; it returns the output model (or the text), and an ``isError``
answer raises `ToolCallError`. The lockfile entry is embedded, so ``cubepi codegen --check`` can tell
when the server no longer matches the module (`embedded_lock`).
"""

from __future__ import annotations

import ast
import contextvars
import inspect
import json
import keyword
import re
import textwrap
import types
import typing
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal, ParamSpec, TypeAlias, TypeVar, Union

import pydantic
from pydantic import BaseModel

from ._calling import run_in_a_loop_of_its_own
from .errors import SchemaError, ToolCallError, UserError
from .mcp import HttpServer, StdioServer
from .mcp._calls.limits import DEFAULT_MAX_DURATION, SAME_AS_TIMEOUT, Timeouts
from .mcp._calls.runner import Stateless
from .mcp._lists.from_lock import locked_server
from .mcp._lists.output_schema import STRUCTURED_CONTENT_ERROR
from .mcp._lists.policies import Policies
from .mcp._lists.tool import build_tool
from .mcp._lockfile import LockedServer, learned_of, read_lock
from .schema import schema_to_model
from .schema._build import ClosedBridgeModel
from .schema._names import class_name, field_names
from .schema._validator import resolve_ref
from .tools import AgentTool, AgentToolResult

__all__ = [
    "UNSET",
    "GeneratedClient",
    "Number",
    "Unset",
    "embedded_lock",
    "generate",
    "raw_result",
    "run_sync",
]

P = ParamSpec("P")
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

# A JSON number: in a model, 1 stays 1 (a `float` field would make it 1.0, and send that).
Number: TypeAlias = int | float

LOCK_NAME = "_LOCK_JSON"


class Unset:
    """The type of `UNSET`: an argument not given, so not sent (the server applies its own default)."""

    _instance: Unset | None = None

    def __new__(cls) -> Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = Unset()


class GeneratedClient:
    """The servers of a generated module: by default those `cubepi codegen` ran against (their
    ``${NAME}`` references read from the environment at the first call), replaceable for the whole
    module (`use_server`) or per call (a function's `via`). Stateless: every call opens its own session."""

    def __init__(self, lock_json: str) -> None:
        self._entries = {entry.name: entry for entry in read_lock(json.loads(lock_json))}
        self._replaced: dict[str, StdioServer | HttpServer] = {}
        self._tools: dict[tuple[str, str, int], tuple[AgentTool, object]] = {}

    def use_server(self, server: StdioServer | HttpServer, name: str | None = None) -> None:
        """Call `server` from now on instead of the server `name` (the only one, if not given)."""
        if name is None:
            if len(self._entries) != 1:
                raise UserError(f"say which server to replace: one of {', '.join(self._entries)}")
            name = next(iter(self._entries))
        if name not in self._entries:
            raise UserError(f"this module has no server {name!r}")
        self._replaced[name] = server

    async def call(
        self,
        server_name: str,
        tool_name: str,
        arguments: Mapping[str, Any],
        via: StdioServer | HttpServer | None = None,
    ) -> AgentToolResult:
        """Call `tool_name` with the `arguments` given (`UNSET` ones left out, models as the fields set)
        through its `execute`; the whole result, an ``isError`` one included."""
        given = {key: _wire(value) for key, value in arguments.items() if value is not UNSET}
        return await self._tool(server_name, tool_name, via).execute(given)

    async def text(
        self,
        server_name: str,
        tool_name: str,
        arguments: Mapping[str, Any],
        via: StdioServer | HttpServer | None = None,
    ) -> str:
        """What a generated function of a tool without an ``outputSchema`` returns: the result's text
        (its structured content as JSON when it has no text); ``isError`` raises `ToolCallError`."""
        result = _succeeded(tool_name, await self._result(server_name, tool_name, arguments, via))
        if not result.text and "structuredContent" in result.details:
            return json.dumps(result.details["structuredContent"], ensure_ascii=False)
        return result.text

    async def output(
        self,
        server_name: str,
        tool_name: str,
        arguments: Mapping[str, Any],
        via: StdioServer | HttpServer | None,
        model: type[M],
    ) -> M:
        """What a generated function of a tool with an ``outputSchema`` returns: its structured content
        as `model`; ``isError``, or structured content that breaks the schema, raises `ToolCallError`."""
        result = _succeeded(tool_name, await self._result(server_name, tool_name, arguments, via))
        mismatch = result.details.get(STRUCTURED_CONTENT_ERROR)
        if mismatch is not None:
            raise ToolCallError(f"tool {tool_name!r}: {mismatch}", result=result)
        try:
            return model.model_validate(result.details.get("structuredContent"))
        except pydantic.ValidationError as exc:
            message = f"tool {tool_name!r}: structuredContent is not a {model.__name__}: {exc}"
            raise ToolCallError(message, result=result) from exc

    async def _result(
        self,
        server_name: str,
        tool_name: str,
        arguments: Mapping[str, Any],
        via: StdioServer | HttpServer | None,
    ) -> AgentToolResult:
        """The call's result; under `raw_result`, handed to it whole instead (`_Raw`)."""
        raw = _RAW.get()
        _RAW.set(False)  # a call made while this one runs (a callback's) is not the one asked for
        result = await self.call(server_name, tool_name, arguments, via)
        if raw:
            raise _Raw(result)
        return result

    def _tool(self, server_name: str, tool_name: str, via: StdioServer | HttpServer | None) -> AgentTool:
        entry = self._entries[server_name]
        server = via or self._replaced.get(server_name)
        key = (server_name, tool_name, id(server))
        if key not in self._tools:
            timeouts = Timeouts.from_options(30.0, SAME_AS_TIMEOUT, DEFAULT_MAX_DURATION)
            if server is None:  # the locked server: what the lock learned of its protocol is adopted
                runner = Stateless(locked_server(entry), timeouts, learned=learned_of(entry), owned=False)
            else:
                runner = Stateless(server, timeouts, owned=False)
            spec = entry.tools[tool_name]["definition"]
            self._tools[key] = (build_tool(spec, runner, Policies(max_concurrency=None)), server)
        return self._tools[key][0]


def _wire(value: Any) -> Any:
    """An argument as `execute` takes it: a generated model as the fields set, under their wire names
    (nested ones too), lists and objects of them likewise; anything else as given."""
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_unset=True)
    if isinstance(value, list):
        return [_wire(item) for item in value]
    if isinstance(value, dict):
        return {key: _wire(item) for key, item in value.items()}
    return value


def _succeeded(tool_name: str, result: AgentToolResult) -> AgentToolResult:
    """`result`, unless the tool reported an error: then `ToolCallError` with the server's text."""
    if result.is_error:
        raise ToolCallError(result.text or f"tool {tool_name!r} failed without a message", result=result)
    return result


_RAW: contextvars.ContextVar[bool] = contextvars.ContextVar("cubepi_codegen_raw", default=False)


class _Raw(BaseException):
    """Carries a call's whole result from `GeneratedClient` up to `raw_result` (past any `except
    Exception` between them), so the generated function keeps its one return type."""

    def __init__(self, result: AgentToolResult) -> None:
        super().__init__()
        self.result = result


def raw_result(function: Callable[P, Awaitable[object]]) -> Callable[P, Awaitable[AgentToolResult]]:
    """A generated function that returns the whole `AgentToolResult` instead (an ``isError`` one too,
    images and structured content included): ``await raw_result(client.get_sum)(a=1, b=2)``."""

    async def raw(*args: P.args, **kwargs: P.kwargs) -> AgentToolResult:
        token = _RAW.set(True)
        try:
            await function(*args, **kwargs)
        except _Raw as done:
            return done.result
        finally:
            _RAW.reset(token)
        raise UserError("raw_result takes a function of a module `cubepi codegen` wrote")

    return raw


def run_sync(function: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Call a generated (async) function from synchronous code, with no running loop or inside one (a
    notebook): ``run_sync(client.get_sum, a=1, b=2)``, typed as the function is."""
    return run_in_a_loop_of_its_own(function, *args, **kwargs)


# -- generating -----------------------------------------------------------------------------------------

# Lines are kept to ruff's default length, in the shapes `ruff format` leaves as they are (long literals
# become aliases, long calls are split with a trailing comma).
WIDTH = 88
_BUILTINS = frozenset({"str", "int", "float", "bool", "list", "dict", "None"})
# Names the module itself uses: no tool, model, alias or field may take them.
_RESERVED = frozenset(
    {
        *_BUILTINS,
        *(
            "Any",
            "Literal",
            "BaseModel",
            "ConfigDict",
            "Field",
            "UNSET",
            "Unset",
            "GeneratedClient",
            "Number",
        ),
        *("HttpServer", "StdioServer", "AgentToolResult", "annotations", "use_server"),
    }
)
_MAX_DEPTH = 8  # the schema the runtime left untyped, read this deep
_MAX_NAME = 60  # a function name (and its classes' names) stays within a line
_SHORT_LITERAL = 40
_SHORT_CONTAINER = 50  # a longer list or dict of a union names the union (an alias)


def py_str(text: str) -> str:
    """`text` as a Python string literal: ASCII only (anything else escaped), quoted as ruff prefers."""
    quote = "'" if text.count('"') > text.count("'") else '"'
    out = []
    for char in text:
        if char in ("\\", quote):
            out.append("\\" + char)
        elif " " <= char <= "~":
            out.append(char)
        elif char in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[char])
        else:
            code = ord(char)
            out.append(
                f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
            )
    return quote + "".join(out) + quote


def _value(value: Any) -> str:
    return py_str(value) if isinstance(value, str) else repr(value)


class _Literal(tuple[Any, ...]):
    """The values of a `Literal` part of a union (strings, integers, booleans)."""


class _Any(str):
    """`Any` as a part of a union, with why the generator wrote it (empty: the schema allows anything)."""

    why: str

    def __new__(cls, why: str = "") -> _Any:
        part = super().__new__(cls, "Any")
        part.why = why
        return part


# Why a type is `Any` (fixed text, never the server's): each becomes a comment above the field.
ANY_DEEP = "nested deeper than the generator types"
ANY_REF = "a `$ref` to no object model (unresolvable, or a cycle through a non-object)"
ANY_ENUM = "enum values a `Literal` cannot hold (objects, arrays, fractions)"
ANY_TUPLE = "a tuple (`prefixItems`); the call checks its items"
ANY_UNKNOWN = "a type JSON Schema does not define"
ANY_MIXED = "`allOf`, `not` or `if`, which no Python type says; the call checks them"
_PY = {str: "str", int: "int", float: "Number", bool: "bool", type(None): "None"}
_SIMPLE = {"string": ["str"], "integer": ["int"], "number": ["Number"], "boolean": ["bool"], "null": ["None"]}


def _merge(parts: list[Any]) -> list[Any]:
    """A union's parts, flat and without repeats: one `Literal` (first), literals of a type the union has
    whole left out, ``None`` last; `Any` swallows everything."""
    values: dict[tuple[str, Any], Any] = {}
    plain: list[str] = []
    for part in parts:
        if isinstance(part, _Any):
            return [part]
        if isinstance(part, _Literal):
            values.update({(type(v).__name__, v): v for v in part})
        elif part not in plain:
            plain.append(part)
    if "Number" in plain:  # a JSON number holds every integer
        plain = [part for part in plain if part != "int"]
    whole = [*plain, *(("int", "float") if "Number" in plain else ())]
    kept = [v for (kind, _), v in values.items() if kind not in whole]
    merged: list[Any] = [_Literal(kept)] if kept else []
    merged += [part for part in plain if part != "None"]
    return merged + (["None"] if "None" in plain else [])


def _literal(values: Collection[Any]) -> list[Any]:
    return _merge([_Literal(v for v in values if v is not None), *(["None"] if None in values else [])])


def _origin(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    return Union if origin is types.UnionType else origin


class _Graph:
    """The models `schema_to_model` built for one schema, under module names, and the type of each of
    their fields as union parts: read from the runtime annotation; where that is `Any`, from the schema
    (a `$ref` cycle is named by the model of its target). Each model is visited once."""

    def __init__(self, model: type[BaseModel], name: str, taken: set[str], hint: str) -> None:
        self.root: Any = getattr(model, "__cubepi_root__", None)
        self.hint = hint  # what the runtime named the root's parts after
        self.taken = taken
        self.names: dict[type[BaseModel], str] = {}
        self.by_node: dict[int, type[BaseModel]] = {}
        self.queue: list[type[BaseModel]] = []
        self._add(model, name)

    def _add(self, model: type[BaseModel], name: str) -> str:
        self.names[model] = name
        self.by_node[id(getattr(model, "__cubepi_schema__", None))] = model
        self.queue.append(model)
        return name

    def name(self, model: type[BaseModel]) -> str:
        """The module name of a runtime model (its own name, made safe and unique), queued to be written."""
        if model in self.names:
            return self.names[model]
        name = class_name(model.__name__)[:_MAX_NAME]
        return self._add(model, _free(name + "_" if keyword.iskeyword(name) else name, self.taken))

    def deref(self, node: Any) -> Any:
        """`node`, its `$ref`s followed (a few, as the runtime follows them)."""
        for _ in range(_MAX_DEPTH):
            if not isinstance(node, Mapping) or "$ref" not in node:
                return node
            node = resolve_ref(node["$ref"], self.root)
        return None

    def parts(self, annotation: Any, node: Any, depth: int = 0) -> list[Any]:
        """A runtime annotation as union parts; `node` is the schema it was built from, where known;
        `depth` counts the lists and dicts around it (a line holds only so many)."""
        if depth > _MAX_DEPTH:
            return [_Any(ANY_DEEP)]
        if annotation is Any:
            return self.schema_parts(node, depth)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return [self.name(annotation)]
        if annotation in _PY:
            return [_PY[annotation]]
        origin, args = _origin(annotation), typing.get_args(annotation)
        if origin is Annotated:
            return self.parts(args[0], node, depth)
        if origin is Literal:
            return _literal(args)
        node = self.deref(node)
        if origin is list:
            items = _Any(ANY_TUPLE) if isinstance(node, Mapping) and "prefixItems" in node else None
            return [("list", [items] if items else self.parts(args[0], _get(node, "items"), depth + 1))]
        if origin is dict:
            return [("dict", self.parts(args[1], _get(node, "additionalProperties"), depth + 1))]
        if origin is Union:
            branches = _branches(node, args)
            return _merge(
                [p for arg, sub in zip(args, branches, strict=True) for p in self.parts(arg, sub, depth)]
            )
        return [_Any(ANY_UNKNOWN)]

    def schema_parts(self, node: Any, depth: int) -> list[Any]:
        """The parts of a schema the runtime typed `Any`: a `$ref` to a model by its name, unions,
        arrays and simple types as the runtime would, anything else `Any` with why."""
        if not isinstance(node, Mapping) or not node:
            return [_Any()]
        if depth > _MAX_DEPTH:
            return [_Any(ANY_DEEP)]
        if "$ref" in node:
            model = self.by_node.get(id(resolve_ref(node["$ref"], self.root)))
            return [self.name(model)] if model is not None else [_Any(ANY_REF)]
        enum = [node["const"]] if "const" in node else node.get("enum")
        if isinstance(enum, list) and enum:
            if all(v is None or isinstance(v, (str, int)) for v in enum):
                return _literal(enum)
            return [_Any(ANY_ENUM)]
        for key in ("anyOf", "oneOf"):
            options = node.get(key)
            if isinstance(options, list) and options:
                return _merge([p for option in options for p in self.schema_parts(option, depth + 1)])
        kind = node.get("type")
        if kind is None:
            return [_Any(ANY_MIXED if _MIXED & node.keys() else "")]
        parts: list[Any] = []
        for item in kind if isinstance(kind, list) else [kind]:
            if item == "array":
                parts.append(("list", self.schema_parts(node.get("items"), depth + 1)))
            elif item == "object":
                model = self.by_node.get(id(node))
                parts.append(self.name(model) if model is not None else ("dict", [_Any()]))
            elif isinstance(item, str) and item in _SIMPLE:
                parts += _SIMPLE[item]
            else:
                return [_Any(ANY_UNKNOWN)]
        return _merge(parts)

    def nullable(self, node: Any) -> bool:
        """Whether a property's own schema allows ``null`` (not just leaving it out); a bounded look."""
        stack, budget = [node], 64
        while stack and budget:
            item, budget = self.deref(stack.pop()), budget - 1
            if not isinstance(item, Mapping):
                continue
            kind = item.get("type")
            enum = [item["const"]] if "const" in item else item.get("enum")
            if kind == "null" or (isinstance(kind, list) and "null" in kind):
                return True
            if isinstance(enum, list) and None in enum:
                return True
            for key in ("anyOf", "oneOf"):
                if isinstance(item.get(key), list):
                    stack += item[key]
        return False


_MIXED = frozenset({"allOf", "not", "if", "then", "else"})


def _get(node: Any, key: str) -> Any:
    return node.get(key) if isinstance(node, Mapping) else None


def _branches(node: Any, args: tuple[Any, ...]) -> list[Any]:
    """The schemas a union's members were built from: `anyOf` / `oneOf` branches one by one where they
    line up (an optional field's added ``None`` last), unknown (None) where they do not; else the node
    itself for each (a type list, or an optional field's one type)."""
    for key in ("anyOf", "oneOf"):
        options = _get(node, key)
        if isinstance(options, list):
            if len(options) == len(args):
                return list(options)
            if len(options) + 1 == len(args) and args[-1] is type(None):
                return [*options, None]
            return [None] * len(args)
    return [node] * len(args)


def _free(name: str, taken: set[str]) -> str:
    """`name`, or `name` with a suffix, not in `taken` (and now taken)."""
    base, n = name, 2
    while name in taken or name in _RESERVED:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


class _Writer:
    """Renders union parts as annotations; a long `Literal` becomes a module-level alias."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken
        self.aliases: dict[tuple[str, ...], str] = {}
        self.lines: list[str] = []
        self.unions: dict[tuple[str, ...], str] = {}
        self.tail: list[str] = []
        self.used: set[str] = set()

    def annotation(self, parts: list[Any], hint: str) -> list[str]:
        """The union's members as text, ``None`` last."""
        out: list[str] = []
        for part in parts:
            if isinstance(part, _Literal):
                out.append(self._literal(part, hint))
            elif isinstance(part, tuple):
                kind, inner = part
                inner_hint = f"{hint} {'item' if kind == 'list' else 'value'}"
                members = self.annotation(inner, inner_hint)
                key = "str, " if kind == "dict" else ""
                text = f"{kind}[{key}{' | '.join(members)}]"
                if len(text) > _SHORT_CONTAINER and len(members) > 1:
                    text = f"{kind}[{key}{self._union(tuple(members), inner_hint)}]"
                out.append(text)
            else:
                if isinstance(part, _Any) or part == "Number":
                    self.used.add(str(part))
                out.append(part)
        return out

    def why(self, parts: list[Any]) -> str:
        """Why the parts hold an `Any` the schema did not ask for (empty when none does)."""
        return "; ".join(dict.fromkeys(reason for reason in _reasons(parts) if reason))

    def _union(self, members: tuple[str, ...], hint: str) -> str:
        """A long union inside a list or dict as an alias, written after the classes it names (ruff
        would split a long subscript in shapes this module does not write)."""
        if members not in self.unions:
            name = self.unions[members] = _free(class_name(hint), self.taken)
            line = f"{name} = {' | '.join(members)}"
            inner = f"    {' | '.join(members)}"
            split = (
                [inner]
                if len(inner) <= WIDTH
                else [f"    {members[0]}", *(f"    | {m}" for m in members[1:])]
            )
            self.tail += ["", "", *([line] if len(line) <= WIDTH else [f"{name} = (", *split, ")"])]
        return self.unions[members]

    def _literal(self, values: tuple[Any, ...], hint: str) -> str:
        self.used.add("Literal")
        items = tuple(_value(v) for v in values)
        text = f"Literal[{', '.join(items)}]"
        if len(text) <= _SHORT_LITERAL:
            return text
        if items not in self.aliases:
            name = self.aliases[items] = _free(class_name(hint), self.taken)
            line = f"{name} = {text}"
            exploded = [f"{name} = Literal[", *(f"    {item}," for item in items), "]"]
            self.lines += ["", "", *([line] if len(line) <= WIDTH else exploded)]
        return self.aliases[items]


def _reasons(parts: list[Any]) -> typing.Iterator[str]:
    for part in parts:
        if isinstance(part, _Any):
            yield part.why
        elif isinstance(part, tuple) and not isinstance(part, _Literal):
            yield from _reasons(part[1])


def _text(value: Any) -> str:
    """Server text made safe for a docstring: printable, no backslashes or triple quotes to end it."""
    text = inspect.cleandoc(str(value or ""))
    text = "".join(c if c.isprintable() or c == "\n" else " " for c in text)
    return text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').strip()


def _wrap(text: str, indent: str, hang: str = "") -> list[str]:
    """`text` wrapped to the width at `indent`, its paragraphs' later lines indented by `hang` more."""
    lines: list[str] = []
    for paragraph in text.splitlines():
        wrapped = textwrap.wrap(
            paragraph,
            WIDTH - len(indent),
            subsequent_indent=hang,
            break_on_hyphens=False,
            break_long_words=False,
        ) or [""]
        lines.extend((indent + line).rstrip() for line in wrapped)
    return lines


def _docstring(summary: str, args: list[tuple[str, str]], indent: str) -> list[str]:
    body = _wrap(_text(summary) or "(no description)", indent)
    if args:
        body += ["", f"{indent}Args:"]
        for name, text in args:
            body += _wrap(f"{name}: {_text(text) or '(no description)'}", indent + "    ", "    ")
    first = body[0].lstrip()
    body[0] = indent + '"""' + (" " + first if first.startswith('"') else first)
    if len(body) > 1 or body[-1].endswith('"'):  # ruff keeps a one-line docstring on one line
        body.append(indent)
    body[-1] += '"""'
    return body


def _identifier(text: str, taken: set[str]) -> str:
    """A Python function name for a tool name: ASCII letters, digits and underscores, no keyword."""
    name = re.sub(r"\W+", "_", text, flags=re.ASCII).strip("_").lower()[:_MAX_NAME].strip("_") or "tool"
    if name[0].isdigit():
        name = "t_" + name
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        name += "_"
    return _free(name, taken)


def _lock_constant(lock: Mapping[str, Any]) -> list[str]:
    """The lock as a readable Python string: the lockfile's JSON (ASCII), backslashes doubled, keys in
    the server's order (a schema's property order is the order its arguments are sent in). JSON never
    has three quotes in a row (a quote inside a string is escaped), so nothing ends the string early."""
    text = json.dumps(lock, indent=2, ensure_ascii=True).replace("\\", "\\\\")
    return [f'{LOCK_NAME} = """\\', *text.splitlines(), '"""']


def _split(head: str, members: list[str], tail: str, indent: str) -> list[str]:
    """``head members tail`` on one line, or split at the union's ``|`` as `ruff format` splits it."""
    line = f"{indent}{head}{' | '.join(members)}{tail}"
    if len(line) <= WIDTH or len(members) < 2:
        return [line]
    return [
        f"{indent}{head}{members[0]}",
        *(f"{indent}| {m}" for m in members[1:-1]),
        f"{indent}| {members[-1]}{tail}",
    ]


def _field(name: str, members: list[str], optional: bool, alias: str | None, writer: _Writer) -> list[str]:
    args = [*(["default=None"] if optional else []), *([f"alias={alias}"] if alias else [])]
    default = "None" if optional else ""
    if alias is not None:
        writer.used.add("Field")
        default = f"Field({', '.join(args)})"
    tail = f" = {default}" if default else ""
    line = f"    {name}: {' | '.join(members)}{tail}"
    if len(line) <= WIDTH:
        return [line]
    exploded = ["Field(", *(f"        {a}," for a in args), "    )"] if alias is not None else [default]
    head = f"    {name}: {' | '.join(members)}"
    # ruff keeps a lone name (no union) beside `= Field(` even past the width.
    if alias is not None and (len(f"{head} = Field(") <= WIDTH or len(members) == 1):
        return [f"{head} = Field(", *exploded[1:]]
    inner = f"        {' | '.join(members)}"
    body = (
        [inner]
        if len(inner) <= WIDTH
        else [f"        {members[0]}", *(f"        | {m}" for m in members[1:])]
    )
    if not default:
        return [f"    {name}: (", *body, "    )"]
    return [f"    {name}: (", *body, f"    ) = {exploded[0]}", *exploded[1:]]


@dataclass
class _Field:
    """A field of a runtime model as the module writes it: its wire name, its type as union parts (with
    ``None`` only where the schema allows null), whether it is required, its description."""

    wire: str
    parts: list[Any]
    required: bool
    description: str


def _fields(graph: _Graph, model: type[BaseModel]) -> list[_Field]:
    properties = _get(getattr(model, "__cubepi_schema__", None), "properties")
    out = []
    for python, info in model.model_fields.items():
        wire = info.alias or python
        node = properties.get(wire) if isinstance(properties, Mapping) else None
        parts = graph.parts(info.annotation, node)
        if not info.is_required() and not graph.nullable(node):  # the None the runtime adds
            parts = [part for part in parts if part != "None"] or [_Any()]
        description = _get(node, "description")
        out.append(
            _Field(wire, parts, info.is_required(), description if isinstance(description, str) else "")
        )
    return out


def _names(wires: list[str], used: Collection[str]) -> dict[str, str]:
    """Python names for wire names that shadow no name the class's annotations use (in a class body, a
    field named like a type would change what later annotations mean) nor one the module needs."""
    names = field_names(wires)
    taken: set[str] = set()
    for wire, name in names.items():
        while name in used or name in _RESERVED or name in taken:
            name += "_"
        names[wire] = name
        taken.add(name)
    return names


_STRING = re.compile(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"")


def _words(annotation: str) -> list[str]:
    """The names an annotation's text uses (what its string literals hold left out)."""
    return re.findall(r"\w+", _STRING.sub("", annotation))


def _comment(why: str, indent: str) -> list[str]:
    return (
        [f"{indent}# {line}" for line in textwrap.wrap(f"Any: {why}", WIDTH - len(indent) - 2)] if why else []
    )


def _model(
    name: str, what: str, fields: list[_Field], config: str, writer: _Writer, hint: str
) -> tuple[list[str], dict[str, str]]:
    """A model class's lines, and its fields' Python names by wire name (`hint` names long enums)."""
    members = {field.wire: writer.annotation(field.parts, f"{hint} {field.wire}") for field in fields}
    used = {word for texts in members.values() for text in texts for word in _words(text)}
    names = _names([field.wire for field in fields], used)
    lines = [f"class {name}(BaseModel):", *_docstring(what, [], "    "), ""]
    lines.append(f"    model_config = ConfigDict({config})")
    if fields:
        lines.append("")
    for field in fields:
        python, own = names[field.wire], members[field.wire]
        alias = py_str(field.wire) if python != field.wire else None
        lines += _comment(writer.why(field.parts), "    ")
        if field.required:
            lines += _field(python, own, False, alias, writer)
        else:
            optional = own if own[-1] in ("None", "Any") else [*own, "None"]
            lines += _field(python, optional, True, alias, writer)
    return lines, names


def _config(model: type[BaseModel], side: str) -> str:
    """What a model accepts: input models convert nothing (what is given is what is sent), output ones
    read JSON as JSON Schema does (1.0 is an integer); extra properties as the schema allows them."""
    extra = '"forbid"' if issubclass(model, ClosedBridgeModel) else '"allow"'
    strict = "strict=True, " if side == "input" else ""
    return f"populate_by_name=True, {strict}extra={extra}"


_Root = tuple[list["_Field"], dict[str, str]]


def _models(graph: _Graph, what: str, side: str, writer: _Writer) -> tuple[list[str], _Root]:
    """Every class of one schema, the root first: their lines, and the root's fields and Python names."""
    lines: list[str] = []
    root: _Root = ([], {})
    for model in graph.queue:  # grows while its fields are read
        fields = _fields(graph, model)
        own = model.__doc__ if isinstance(model.__doc__, str) and model.__doc__.strip() else ""
        doc = own or f"An object in {what[:1].lower()}{what[1:-1]}." if lines else what
        hint = model.__name__ if lines else graph.hint
        code, names = _model(graph.names[model], doc, fields, _config(model, side), writer, hint)
        if not lines:
            root = (fields, names)
        lines += ["", "", *code]
    return lines, root


def _build(schema: Any, name: str) -> type[BaseModel] | None:
    """The runtime bridge's model of a schema (None for one that is no object schema at all)."""
    if not isinstance(schema, Mapping):
        return None
    try:
        return schema_to_model(dict(schema), name=name)
    except SchemaError:
        return None


def _function(
    server: str,
    name: str,
    tool: Mapping[str, Any],
    classes: tuple[str, str | None],
    root: tuple[list[_Field], dict[str, str]],
    writer: _Writer,
) -> list[str]:
    fields, names = root
    model, output = classes
    via = _free("via", set(names.values()))
    params = ["    *,"]
    args: list[tuple[str, str]] = []
    for field in sorted(fields, key=lambda field: not field.required):  # required first, for reading
        python = names[field.wire]
        members = writer.annotation(field.parts, f"{name} {field.wire}")
        params += _comment(writer.why(field.parts), "    ")
        if field.required:
            params += _split(f"{python}: ", members, ",", "    ")
        else:
            writer.used.add("UNSET")
            unset = [m for m in members if m != "None"] + ["Unset"] + (["None"] if "None" in members else [])
            params += _split(f"{python}: ", unset, " = UNSET,", "    ")
        args.append((python, field.description))
    params.append(f"    {via}: StdioServer | HttpServer | None = None,")
    args.append((via, "call this server instead of the module's (see `use_server`)."))
    summary = str(tool.get("description") or "").strip() or "(no description)"
    returns = f"its structured content as `{output}`" if output else "its text"
    doc = _docstring(
        f"{summary}\n\nReturns {returns}; an error the tool reports raises `ToolCallError`. The arguments "
        f"model: `{model}`.",
        args,
        "    ",
    )
    arguments = [f"            {py_str(field.wire)}: {names[field.wire]}," for field in fields]
    return [
        f"async def {name}(",
        *params,
        f") -> {output or 'str'}:",
        *doc,
        f"    return await _CLIENT.{'output' if output else 'text'}(",
        f"        {py_str(server)},",
        f"        {py_str(str(tool['name']))},",
        *(["        {", *arguments, "        },"] if arguments else ["        {},"]),
        f"        {via},",
        *([f"        {output},"] if output else []),
        "    )",
    ]


def _sorted_all(names: list[str]) -> list[str]:
    """`__all__` in the order ruff keeps it: constants, classes, the rest."""
    return sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[:1].isupper() else 2, n))


_EMPTY: Final[Mapping[str, Any]] = {"type": "object", "properties": {}}


def _tool_code(
    server: str, function: str, tool: Mapping[str, Any], writer: _Writer
) -> tuple[list[str], list[str]]:
    """The classes and the function of one tool, and the names they export."""
    name = str(tool["name"])
    inputs = _build(tool.get("inputSchema"), function) or schema_to_model(dict(_EMPTY), name=function)
    base = class_name(function)
    graph = _Graph(inputs, _free(base + "Input", writer.taken), writer.taken, base)
    body, root = _models(graph, f"The arguments of `{name}`.", "input", writer)
    exported = list(graph.names.values())
    output = _build(tool.get("outputSchema"), f"{function}_output")
    output_name = None
    if output is not None:
        outputs = _Graph(output, _free(base + "Output", writer.taken), writer.taken, base + "Output")
        code, _ = _models(outputs, f"The structured content of `{name}`.", "output", writer)
        body += code
        output_name = outputs.names[output]
        exported += outputs.names.values()
    classes = (graph.names[inputs], output_name)
    body += ["", "", *_function(server, function, tool, classes, root, writer)]
    return body, [*exported, function]


def generate(lock: Mapping[str, Any]) -> str:
    """The text of a typed client module for the servers of `lock` (a lockfile's JSON)."""
    entries = read_lock(lock)
    taken: set[str] = set()
    writer = _Writer(taken)
    body: list[str] = []
    exported: list[str] = ["use_server"]
    several = len(entries) > 1
    for entry in entries:
        for tool_name, item in sorted(entry.tools.items()):
            function = _identifier(f"{entry.name}_{tool_name}" if several else tool_name, taken)
            code, names = _tool_code(entry.name, function, item["definition"], writer)
            body += code
            exported += names
    describe = ", ".join(_describe(entry) for entry in entries)
    typing_names = [name for name in ("Any", "Literal") if name in writer.used]
    pydantic_names = ["BaseModel", "ConfigDict", *(["Field"] if "Field" in writer.used else [])]
    codegen = [
        *(["UNSET"] if "UNSET" in writer.used else []),
        "GeneratedClient",
        *(["Number"] if "Number" in writer.used else []),
        *(["Unset"] if "UNSET" in writer.used else []),
    ]
    lines = [
        *_wrap(f'"""Typed client for {_text(describe)}.', ""),
        "",
        "Generated by `cubepi codegen`; do not edit. `cubepi codegen --check` tells when the",
        "server changed.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        *([f"from typing import {', '.join(typing_names)}", ""] if typing_names else []),
        f"from cubepi.codegen import {', '.join(codegen)}",
        "from cubepi.mcp import HttpServer, StdioServer",
        f"from pydantic import {', '.join(pydantic_names)}",
        "",
        "__all__ = [",
        *(f"    {py_str(name)}," for name in _sorted_all(exported)),
        "]",
        "",
        "",
        "def use_server(server: StdioServer | HttpServer, name: str | None = None) -> None:",
        '    """Call `server` from now on instead of the server `name` of this module (the only',
        '    one if not given)."""',
        "    _CLIENT.use_server(server, name)",
        *writer.lines,
        *body,
        *writer.tail,
        "",
        "",
        "# What the module was generated from (`cubepi codegen --check` compares the server).",
        *_lock_constant(lock),
        f"_CLIENT = GeneratedClient({LOCK_NAME})",
    ]
    return "\n".join(lines) + "\n"


def _describe(entry: LockedServer) -> str:
    config = entry.config
    if config.get("type") == "http":
        return str(config.get("url"))
    return " ".join([str(config.get("command")), *map(str, config.get("args") or ())])


def embedded_lock(source: str) -> dict[str, Any]:
    """The lockfile JSON a generated module embeds, read from its text (never imported or run)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise UserError(f"not a Python module: {exc}") from exc
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == LOCK_NAME for target in node.targets
        ):
            value = ast.literal_eval(node.value)
            if isinstance(value, str):
                data = json.loads(value)
                if isinstance(data, dict):
                    return data
    raise UserError("not a module written by `cubepi codegen` (it has no embedded lock)")
