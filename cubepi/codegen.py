"""Typed client modules generated from a server's tools (`cubepi codegen`), and what they call through.

`generate(lock)` turns a lockfile's JSON (`cubepi.mcp._lockfile.lock_servers`) into the text of a Python
module: a Pydantic model per tool input (and output, where the tool has an ``outputSchema``) and a typed
``async def`` per tool whose keyword arguments are the tool's, under Python names. A call sends exactly the
arguments given, under their wire names (`UNSET` ones left out, an explicit ``None`` kept), through the
tool's own `execute`: the same validation, the same wire arguments. The lockfile entry is embedded, so
``cubepi codegen --check`` can tell when the server no longer matches the module (`embedded_lock`).
"""

from __future__ import annotations

import ast
import inspect
import json
import keyword
import re
import textwrap
from collections.abc import Collection, Mapping
from typing import Any, Final

from .errors import UserError
from .mcp import HttpServer, StdioServer
from .mcp._calls.limits import DEFAULT_MAX_DURATION, SAME_AS_TIMEOUT, Timeouts
from .mcp._calls.runner import Stateless
from .mcp._lists.from_lock import locked_server
from .mcp._lists.policies import Policies
from .mcp._lists.tool import build_tool
from .mcp._lockfile import LockedServer, learned_of, read_lock
from .schema._names import class_name, field_names
from .tools import AgentTool, AgentToolResult

__all__ = ["UNSET", "GeneratedClient", "Unset", "embedded_lock", "generate"]

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
        """Call `tool_name` with the `arguments` given (`UNSET` ones left out) through its `execute`."""
        given = {key: value for key, value in arguments.items() if value is not UNSET}
        return await self._tool(server_name, tool_name, via).execute(given)

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


# -- generating -----------------------------------------------------------------------------------------

# Lines are kept to ruff's default length, in the shapes `ruff format` leaves as they are (long literals
# become aliases, long calls are split with a trailing comma).
WIDTH = 88
_SIMPLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_BUILTINS = frozenset({"str", "int", "float", "bool", "list", "dict", "None"})
# Names the module itself uses: no tool, model, alias or field may take them.
_RESERVED = frozenset(
    {
        *_BUILTINS,
        *("Any", "Literal", "BaseModel", "ConfigDict", "Field", "UNSET", "Unset", "GeneratedClient"),
        *("HttpServer", "StdioServer", "AgentToolResult", "annotations", "use_server"),
    }
)
_MAX_DEPTH = 8
_MAX_NAME = 60  # a function name (and its classes' names) stays within a line
_SHORT_LITERAL = 40


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


def _merge(parts: list[Any]) -> list[Any]:
    """A union's parts, flat and without repeats: one `Literal` (first), ``float`` swallowing ``int``,
    literals of a type the union has whole left out, ``None`` last; `Any` swallows everything."""
    values: dict[tuple[str, Any], Any] = {}
    plain: list[str] = []
    for part in parts:
        if part == "Any":
            return ["Any"]
        if isinstance(part, _Literal):
            values.update({(type(v).__name__, v): v for v in part})
        elif part not in plain:
            plain.append(part)
    if "int" in plain and "float" in plain:
        plain.remove("int")
    kept = [
        v for (kind, _), v in values.items() if kind not in plain and not (kind == "int" and "float" in plain)
    ]
    merged: list[Any] = [_Literal(kept)] if kept else []
    merged += [part for part in plain if part != "None"]
    return merged + (["None"] if "None" in plain else [])


def _parts(schema: Any, depth: int = 0) -> list[Any]:
    """A JSON schema as the parts of a Python union: simple types, enums and constants as literals,
    arrays as lists, objects as ``dict[str, Any]``, anything else ``Any``. The call itself is checked by
    the tool's own model, built from the server's schema; these types are what an editor shows."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return ["Any"]
    enum = [schema["const"]] if "const" in schema else schema.get("enum")
    if isinstance(enum, list) and enum:
        if not all(v is None or isinstance(v, (str, int)) for v in enum):
            return ["Any"]
        return _merge([_Literal(v for v in enum if v is not None), *(["None"] if None in enum else [])])
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return _merge([part for option in options for part in _parts(option, depth + 1)])
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    parts: list[Any] = []
    for item in kinds:
        if item == "array":
            parts.append(("list", _parts(schema.get("items"), depth + 1)))
        elif item == "object":
            parts.append("dict[str, Any]")
        elif isinstance(item, str) and item in _SIMPLE:
            parts.append(_SIMPLE[item])
        else:
            return ["Any"]
    return _merge(parts) if parts else ["Any"]


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
        self.used: set[str] = set()

    def annotation(self, parts: list[Any], hint: str) -> list[str]:
        """The union's members as text, ``None`` last."""
        out: list[str] = []
        for part in parts:
            if isinstance(part, _Literal):
                out.append(self._literal(part, hint))
            elif isinstance(part, tuple):
                out.append(f"list[{' | '.join(self.annotation(part[1], hint))}]")
            else:
                if "Any" in part:
                    self.used.add("Any")
                out.append(part)
        return out

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
    if len(body) > 1 or body[-1].endswith('"') or len(body[0]) + 3 > WIDTH:
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
    """The lock as a readable Python string: the lockfile's JSON (ASCII), backslashes doubled. JSON never
    has three quotes in a row (a quote inside a string is escaped), so nothing ends the string early."""
    text = json.dumps(lock, indent=2, sort_keys=True, ensure_ascii=True).replace("\\", "\\\\")
    return [f'{LOCK_NAME} = """\\', *text.splitlines(), '"""']


def _shape(schema: Any) -> tuple[dict[str, Any], set[str]]:
    """An object schema's properties and required names (empty when it has none)."""
    if not isinstance(schema, Mapping):
        return {}, set()
    properties = schema.get("properties")
    required = schema.get("required")
    return (
        {str(k): v for k, v in properties.items()} if isinstance(properties, Mapping) else {},
        {str(name) for name in required} if isinstance(required, list) else set(),
    )


def _names(wires: list[str], taken: Collection[str]) -> dict[str, str]:
    """Python names for wire names that shadow no type the module's annotations use (in a class body, a
    field named like a type would change what later annotations mean)."""
    names = field_names(wires)
    used: set[str] = set()
    for wire, name in names.items():
        while name in taken or name in _RESERVED or name in used:
            name += "_"
        names[wire] = name
        used.add(name)
    return names


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


def _model(
    class_: str, what: str, schema: Any, writer: _Writer, hint: str
) -> tuple[list[str], dict[str, str]]:
    properties, required = _shape(schema)
    members = {wire: writer.annotation(_parts(sub), f"{hint} {wire}") for wire, sub in properties.items()}
    names = _names(list(properties), writer.aliases.values())
    lines = [f"class {class_}(BaseModel):", *_docstring(what, [], "    "), ""]
    lines.append("    model_config = ConfigDict(populate_by_name=True)")
    if properties:
        lines.append("")
    for wire in properties:
        name = names[wire]
        alias = py_str(wire) if name != wire else None
        if wire in required:
            lines += _field(name, members[wire], False, alias, writer)
        else:
            optional = members[wire] if members[wire][-1] in ("None", "Any") else [*members[wire], "None"]
            lines += _field(name, optional, True, alias, writer)
    return lines, names


def _function(
    server: str,
    name: str,
    tool: Mapping[str, Any],
    classes: tuple[str, str | None],
    names: Mapping[str, str],
    writer: _Writer,
) -> list[str]:
    properties, required = _shape(tool.get("inputSchema"))
    model, output = classes
    via = _free("via", set(names.values()))
    params = ["    *,"]
    args: list[tuple[str, str]] = []
    for wire in sorted(properties, key=lambda wire: wire not in required):  # required first, for reading
        members = writer.annotation(_parts(properties[wire]), f"{name} {wire}")
        if wire in required:
            params += _split(f"{names[wire]}: ", members, ",", "    ")
        else:
            writer.used.add("UNSET")
            unset = [m for m in members if m != "None"] + ["Unset"] + (["None"] if "None" in members else [])
            params += _split(f"{names[wire]}: ", unset, " = UNSET,", "    ")
        sub = properties[wire]
        args.append((names[wire], sub.get("description", "") if isinstance(sub, Mapping) else ""))
    params.append(f"    {via}: StdioServer | HttpServer | None = None,")
    args.append((via, "call this server instead of the module's (see `use_server`)."))
    summary = str(tool.get("description") or "").strip() or "(no description)"
    returns = f"\n\nIts structured content validates as `{output}`." if output else ""
    doc = _docstring(f"{summary}{returns}\n\nThe arguments model: `{model}`.", args, "    ")
    arguments = [f"            {py_str(wire)}: {names[wire]}," for wire in properties]
    return [
        f"async def {name}(",
        *params,
        ") -> AgentToolResult:",
        *doc,
        "    return await _CLIENT.call(",
        f"        {py_str(server)},",
        f"        {py_str(str(tool['name']))},",
        *(["        {", *arguments, "        },"] if arguments else ["        {},"]),
        f"        {via},",
        "    )",
    ]


def _sorted_all(names: list[str]) -> list[str]:
    """`__all__` in the order ruff keeps it: constants, classes, the rest."""
    return sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[:1].isupper() else 2, n))


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
            tool = item["definition"]
            function = _identifier(f"{entry.name}_{tool_name}" if several else tool_name, taken)
            model = _free(class_name(function) + "Input", taken)
            what = f"The arguments of `{tool_name}`."
            code, names = _model(model, what, tool.get("inputSchema"), writer, function)
            body += ["", "", *code]
            output = None
            if isinstance(tool.get("outputSchema"), Mapping):
                output = _free(class_name(function) + "Output", taken)
                what = f"The structured content of `{tool_name}`."
                code, _ = _model(output, what, tool["outputSchema"], writer, f"{function} output")
                body += ["", "", *code]
            body += ["", "", *_function(entry.name, function, tool, (model, output), names, writer)]
            exported += [model, *([output] if output else []), function]
    describe = ", ".join(_describe(entry) for entry in entries)
    typing = [name for name in ("Any", "Literal") if name in writer.used]
    pydantic = ["BaseModel", "ConfigDict", *(["Field"] if "Field" in writer.used else [])]
    codegen = ["UNSET", "GeneratedClient", "Unset"] if "UNSET" in writer.used else ["GeneratedClient"]
    lines = [
        *_wrap(f'"""Typed client for {_text(describe)}.', ""),
        "",
        "Generated by `cubepi codegen`; do not edit. `cubepi codegen --check` tells when the",
        "server changed.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        *([f"from typing import {', '.join(typing)}", ""] if typing else []),
        f"from cubepi.codegen import {', '.join(codegen)}",
        "from cubepi.mcp import HttpServer, StdioServer",
        "from cubepi.tools import AgentToolResult",
        f"from pydantic import {', '.join(pydantic)}",
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
