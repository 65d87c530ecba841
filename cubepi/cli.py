"""The ``cubepi`` command: look at an MCP server's tools, call one, or run the offline demo.

```
cubepi tools -- npx -y @modelcontextprotocol/server-filesystem ./sandbox
cubepi tools --url https://host/mcp --header "Authorization: Bearer $TOKEN"
cubepi call read_text_file '{"path": "box/a.txt"}' -- npx -y @modelcontextprotocol/server-filesystem box
cubepi call get-sum a=1 b=2 -- npx -y @modelcontextprotocol/server-everything
cubepi tools --config mcp.json
cubepi call --config mcp.json files__read_text_file '{"path": "box/a.txt"}'
cubepi lock -o cubepi.lock -- npx -y @modelcontextprotocol/server-everything
cubepi lock --check cubepi.lock
cubepi codegen -o client.py -- npx -y @modelcontextprotocol/server-everything
cubepi demo
```
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import types
import typing
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import anyio
import pydantic

from .errors import CubepiError, MCPError, SchemaError, ServerSkippedWarning, UserError
from .mcp import HttpServer, MCPToolList, StdioServer, load_mcp_tools, load_mcp_tools_from_config
from .mcp._config_file import read_mcp_config
from .mcp._lists.from_config import OnError
from .mcp._lists.from_lock import locked_server
from .mcp._lockfile import (
    LockedServer,
    compare,
    describe_drift,
    dumps,
    lock_servers,
    matching,
    read_lock,
)
from .tools import AgentTool, AgentToolResult, ImageContent, TextContent, ToolUpdate

__all__ = ["main", "signature"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 the tool reported an error, 2 failure)."""
    parser = _parser()
    try:
        args = _parse(parser, list(sys.argv[1:] if argv is None else argv))
        if args.action is None:
            parser.print_help()
            return 2
        return int(anyio.run(_ACTIONS[args.action], args))
    except (CubepiError, ValueError) as exc:
        print(f"cubepi: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


# -- arguments ------------------------------------------------------------------------------------------


_CALL_USAGE = "cubepi call [options] TOOL [ARGUMENTS ...] [-- COMMAND [ARGS ...]]"

_CALL_EPILOG = """\
The arguments are a JSON object or key=value pairs:

  cubepi call get-sum '{"a": 1, "b": 2}' -- npx -y @modelcontextprotocol/server-everything
  cubepi call get-sum a=1 b=2 -- npx -y @modelcontextprotocol/server-everything
  cubepi call get-sum 'a=1 b=2' --url http://127.0.0.1:3001/mcp
  cubepi call echo message='hello world' --url http://127.0.0.1:3001/mcp
  cubepi call get-annotated-message messageType=error includeImage:=true --url http://127.0.0.1:3001/mcp
  cubepi call read_multiple_files paths:='["a.txt"]' -- npx -y @modelcontextprotocol/server-filesystem .

key=value: the value stays text when the parameter takes text (name=007 stays "007"), else it is read as
JSON (a=1 gives the number 1; flag=true, 'ids=[1,2]'). key:=JSON passes JSON as is (a list, an object, a
number, true, false, null). Only the parameters given are sent: the server applies its own defaults.
"""


_LOCK_DESCRIPTION = """\
Write a lockfile: per server its config (env and header values as ${NAME} references, never the
values), the protocol found and each tool's definition with its sha256. Loaders given lock=FILE
refuse, warn of or ask approval for tools that changed (docs/pinning.md).

  cubepi lock -o cubepi.lock -- npx -y @modelcontextprotocol/server-everything
  cubepi lock --config mcp.json
  cubepi lock --check cubepi.lock          # exit 1 and print what changed, for CI
"""


_CODEGEN_DESCRIPTION = """\
Write a Python module with a Pydantic model per tool input (and output) and a typed async function per
tool, calling through cubepi (stateless). The module passes ruff and mypy --strict (docs/pinning.md).

  cubepi codegen -o client.py -- npx -y @modelcontextprotocol/server-everything
  cubepi codegen --check client.py         # exit 1 if the module's server changed since
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cubepi", description="The tools of any MCP server as typed tools.")
    sub = parser.add_subparsers(dest="action", metavar="{tools,call,lock,codegen,demo}")

    tools = sub.add_parser("tools", help="list a server's tools with their typed signatures")
    _server_arguments(tools)
    tools.add_argument("command", nargs="*", help="after --: the stdio server's command and arguments")

    call = sub.add_parser(
        "call",
        help="call one tool with key=value or JSON arguments",
        usage=_CALL_USAGE,
        epilog=_CALL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    call.add_argument("tool", metavar="TOOL", help="the tool's name, as `cubepi tools` shows it")
    call.add_argument(
        "arguments", metavar="ARGUMENTS", nargs="*", help="key=value pairs, or one JSON object (see below)"
    )
    call.add_argument("--json", action="store_true", help="print the whole result as JSON")
    _server_arguments(call)

    lock = sub.add_parser(
        "lock",
        help="pin a server's tool definitions in a lockfile, or check a server against one",
        description=_LOCK_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    lock.add_argument("-o", "--output", metavar="FILE", help="default cubepi.lock")
    lock.add_argument(
        "--check",
        nargs="?",
        const="",
        metavar="LOCKFILE",
        help="write nothing; exit 1 if the servers' tools differ from LOCKFILE (default cubepi.lock; "
        "no server options: its own servers)",
    )
    _server_arguments(lock)
    lock.add_argument("command", nargs="*", help="after --: the stdio server's command and arguments")

    codegen = sub.add_parser(
        "codegen",
        help="write a typed Python client module for a server's tools (--check: does it still match?)",
        description=_CODEGEN_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    codegen.add_argument("-o", "--output", metavar="FILE", help="default client.py")
    codegen.add_argument(
        "--check",
        nargs="?",
        const="",
        metavar="MODULE",
        help="write nothing; exit 1 if the servers' tools differ from those MODULE (default client.py) "
        "was generated from",
    )
    _server_arguments(codegen)
    codegen.add_argument("command", nargs="*", help="after --: the stdio server's command and arguments")

    sub.add_parser("demo", help="start the bundled example server, show its tools and call one (offline)")
    return parser


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """The parsed command line: what follows the first ``--`` is the server's command, untouched, and the
    arguments of `call` may stand before, between or after its options."""
    head, tail = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    args, extra = parser.parse_known_args(head)
    if args.action == "call" and not any(item.startswith("-") for item in extra):
        args.arguments = [*args.arguments, *extra]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if tail and args.action not in ("tools", "call", "lock", "codegen"):
        parser.error(f"{args.action or 'cubepi'} takes no server command")
    if args.action == "call":
        args.command = []
        if args.arguments and _is_json(args.arguments[0]):
            # One JSON object; anything after it, before any --, is the server's command, as it always was.
            args.arguments, args.command = args.arguments[:1], args.arguments[1:]
            if args.command and _ITEM.fullmatch(args.command[0]):
                raise UserError("give the arguments as one JSON object or as key=value pairs, not both")
    if args.action in ("tools", "call", "lock", "codegen"):
        args.command = [*args.command, *tail]
    return args


def _server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", metavar="FILE", help="every server of an mcpServers JSON file (Claude Desktop, Cursor)"
    )
    parser.add_argument("--url", help="an HTTP MCP endpoint instead of a command")
    parser.add_argument(
        "--transport", choices=["auto", "streamable-http", "sse"], help="HTTP transport (default auto)"
    )
    parser.add_argument(
        "--header", action="append", default=[], metavar="'NAME: VALUE'", help="an HTTP header (repeatable)"
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="a variable for a stdio server"
    )
    parser.add_argument("--cwd", help="working directory of a stdio server")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per phase (default 30)")


def _server(args: argparse.Namespace) -> StdioServer | HttpServer:
    command = list(args.command)
    if args.url and command:
        raise UserError("give either --url URL or -- COMMAND ARGS..., not both")
    if args.url:
        headers: dict[str, str] = {}
        for item in args.header:
            name, sep, value = item.partition(":")
            if not sep or not name.strip():
                raise UserError(
                    f"--header takes 'NAME: VALUE', got a value without a colon ({name[:20]!r}...)"
                )
            headers[name.strip()] = value.strip()
        return HttpServer(args.url, headers=headers or None, transport=args.transport or "auto")
    if not command:
        raise UserError("say which server: --url URL, or -- COMMAND ARGS... (for example: -- npx -y pkg)")
    env: dict[str, str] = {}
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UserError(f"--env takes NAME=VALUE, got {name!r} without '='")
        env[name] = value
    return StdioServer(command[0], command[1:], env=env or None, cwd=args.cwd)


# -- actions --------------------------------------------------------------------------------------------


async def _load(args: argparse.Namespace, *, on_error: OnError = "raise") -> tuple[MCPToolList, str]:
    """The tools the arguments name, and where they come from (for messages)."""
    if args.config is None:
        server = _server(args)
        return await load_mcp_tools(server, timeout=args.timeout), server.describe()
    _only_config(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ServerSkippedWarning)  # the failures are printed below the tools
        tools = await load_mcp_tools_from_config(args.config, timeout=args.timeout, on_error=on_error)
    return tools, str(args.config)


def _only_config(args: argparse.Namespace) -> None:
    given = [
        option
        for option, value in [
            ("--url", args.url),
            ("--transport", args.transport),
            ("--header", args.header),
            ("--env", args.env),
            ("--cwd", args.cwd),
            ("a command", args.command),
        ]
        if value
    ]
    if given:
        raise UserError(f"--config reads the servers from the file; drop {', '.join(given)}")


async def _tools(args: argparse.Namespace) -> int:
    """List the tools; with --config, the servers that failed and why, after the others' tools (exit 1)."""
    tools, origin = await _load(args, on_error="skip")
    async with tools:
        print(f"{len(tools)} tools from {origin}:\n")
        _print_tools(tools, sys.stdout)
        servers: dict[str, MCPToolList] = getattr(tools, "servers", None) or {origin: tools}
        for name, each in servers.items():
            await _print_offers(each, name if len(servers) > 1 else None, sys.stdout)
        for failure in tools.failures.values():
            print(f"\nnot loaded: {failure}", file=sys.stderr)
    return 1 if tools.failures else 0


async def _print_offers(tools: MCPToolList, name: str | None, out: TextIO) -> None:
    """A server's resources, resource templates and prompts, where it offers any."""
    whose = f" of {name}" if name else ""
    found: dict[str, list[Any]] = {}
    failures: list[MCPError] = []

    async def ask(key: str, listing: Any) -> None:  # each a session of its own: asked at once
        try:
            found[key] = await listing()
        except MCPError as exc:
            failures.append(exc)

    async with anyio.create_task_group() as group:
        for key in ("list_resources", "list_resource_templates", "list_prompts"):
            group.start_soon(ask, key, getattr(tools, key))
    if failures:
        print(f"\n(resources and prompts{whose} could not be listed: {failures[0]})", file=out)
        return
    resources, templates, prompts = (
        found["list_resources"],
        found["list_resource_templates"],
        found["list_prompts"],
    )
    sections = [
        ("resources", [f"{item.uri}  {item.name}" for item in resources]),
        ("resource templates", [f"{item.uri_template}  {item.name}" for item in templates]),
        ("prompts", [f"{item.name}({', '.join(a.name for a in item.arguments or ())})" for item in prompts]),
    ]
    for title, lines in sections:
        if lines:
            print(f"\n{len(lines)} {title}{whose}:\n", file=out)
            for line in lines:
                print(f"  {line}", file=out)


async def _call(args: argparse.Namespace) -> int:
    given: list[str] = args.arguments
    json_form = bool(given) and _is_json(given[0])
    if json_form:
        try:
            arguments = json.loads(given[0])
        except json.JSONDecodeError as exc:
            raise UserError(f"the arguments must be a JSON object: {exc}") from exc
        if not isinstance(arguments, dict):
            raise UserError('the arguments must be a JSON object, like \'{"path": "."}\', or key=value pairs')
    else:
        for item in given:
            if not _ITEM.fullmatch(item):
                raise UserError(
                    f"{item!r} is not key=value, key:=JSON or a JSON object; "
                    "a stdio server's command goes after --"
                )
    tools, origin = await _load(args)
    async with tools:
        chosen = next((item for item in tools if item.name == args.tool), None)
        if chosen is None:
            names = ", ".join(sorted(item.name for item in tools))
            raise UserError(f"{origin} has no tool {args.tool!r}; it has: {names}")
        if not json_form:
            arguments = _keyword_arguments(chosen, given)
        result = await chosen.execute(arguments, on_update=_show_update)
    if args.json:
        print(json.dumps(_result_json(result), indent=2, ensure_ascii=False))
    else:
        _print_result(result, sys.stdout)
    return 1 if result.is_error else 0


async def _demo(args: argparse.Namespace) -> int:
    server = StdioServer(sys.executable, ["-m", "cubepi.mcp.demo_server"])
    print(f"Starting the demo server: {server.describe()}")
    tools = await load_mcp_tools(server, timeout=60)
    print(f"\nIts {len(tools)} tools, as typed Python tools:\n")
    _print_tools(tools, sys.stdout)
    forecast = next(item for item in tools if item.name == "forecast")
    arguments = {"city": "Paris", "days": 2}
    call = f"forecast({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
    print(f"\nCalling {call} in a fresh session; the model reads:\n")
    result = await forecast.execute(forecast.parameters.model_validate(arguments))
    _print_content(result, sys.stdout, shorten=True)
    print("\nYour program also gets the structured content, which the model never sees:\n")
    _print_details(result, sys.stdout)
    refused = await forecast.execute({"city": "Paris", "days": 9})
    print("\nBad arguments never reach the server; the model reads why:\n")
    _print_content(refused, sys.stdout, shorten=True)
    return 0


def _named_servers(args: argparse.Namespace) -> list[tuple[str, StdioServer | HttpServer]]:
    """The servers the options name: each server of --config by its name, else the one server."""
    if args.config is None:
        return [("server", _server(args))]
    _only_config(args)
    return [(item.name, item.server) for item in read_mcp_config(args.config)]


_DEFAULT_FILE = {"lock": "cubepi.lock", "codegen": "client.py"}


def _checked_file(args: argparse.Namespace) -> str:
    """The file `--check` reads: ``--check FILE``, else ``-o FILE``, else the default; one that is
    not there, or two different names, is a `UserError` naming the spelling that works."""
    action, given, output = args.action, args.check, args.output
    if given and output and given != output:
        raise UserError(
            f"--check {given} and -o {output} name two files; check one: cubepi {action} --check {given}"
        )
    name = given or output or _DEFAULT_FILE[action]
    if not Path(name).is_file():
        writes = "cubepi lock -o" if action == "lock" else "cubepi codegen -o"
        raise UserError(
            f"no {name} to check; write it first (`{writes} {name} -- COMMAND ...`), or name it: "
            f"cubepi {action} --check FILE"
        )
    return name


async def _codegen(args: argparse.Namespace) -> int:
    from .codegen import embedded_lock, generate

    if args.check is None:
        output = args.output or _DEFAULT_FILE["codegen"]
        lock = await lock_servers(_named_servers(args), timeout=args.timeout)
        await anyio.Path(output).write_text(generate(lock), encoding="utf-8")
        count = sum(len(entry["tools"]) for entry in lock["servers"])
        print(f"wrote {output}: {count} typed tools of {len(lock['servers'])} server(s)")
        return 0
    name = _checked_file(args)
    embedded = embedded_lock(await anyio.Path(name).read_text(encoding="utf-8"))
    return await _check(args, read_lock(embedded), name)


async def _lock(args: argparse.Namespace) -> int:
    if args.check is not None:
        name = _checked_file(args)
        return await _check(args, read_lock(name), name)
    output = args.output or _DEFAULT_FILE["lock"]
    lock = await lock_servers(_named_servers(args), timeout=args.timeout)
    await anyio.Path(output).write_text(dumps(lock), encoding="utf-8")
    count = sum(len(entry["tools"]) for entry in lock["servers"])
    print(f"locked {count} tools of {len(lock['servers'])} server(s) in {output}")
    return 0


async def _check(args: argparse.Namespace, pinned: list[LockedServer], name: str) -> int:
    """Exit status 1 (and what changed) if the servers differ from `pinned`, else 0."""
    own = not (args.config or args.url or args.command)
    servers = [(e.name, locked_server(e)) for e in pinned] if own else _named_servers(args)
    fresh = read_lock(await lock_servers(servers, timeout=args.timeout))
    lines = []
    for (_, server), now in zip(servers, fresh, strict=True):
        drift = compare(matching(pinned, server), [item["definition"] for item in now.tools.values()])
        lines += describe_drift(drift, server.describe())
    for line in lines:
        print(line)
    if lines:
        print(f"{name}: {len(lines)} difference(s); run `cubepi {args.action}` again once reviewed")
        return 1
    print(f"{name}: every tool matches")
    return 0


_ACTIONS = {"tools": _tools, "call": _call, "lock": _lock, "codegen": _codegen, "demo": _demo}


def _show_update(update: ToolUpdate) -> None:
    """What a call reports while it runs (progress, a task's status), on stderr: stdout keeps the result."""
    if update.progress is not None:
        total = f"/{update.total:g}" if update.total is not None else ""
        done = f"{update.progress:g}{total}"
        text = f"{done} {update.message}" if update.message else done
    else:
        text = update.message or ""
    if text:
        print(f"... {text}", file=sys.stderr, flush=True)


# -- key=value arguments --------------------------------------------------------------------------------

# key=value or key:=JSON (as HTTPie writes them); the key is everything before the first "=".
_ITEM = re.compile(r"(?P<key>[^=]+?)(?P<raw>:?)=(?P<value>.*)", re.DOTALL)


def _is_json(argument: str) -> bool:
    """Whether an argument is the JSON form (an object, or a mistaken array), not key=value pairs."""
    return argument.lstrip().startswith(("{", "["))


def _keyword_arguments(tool: AgentTool, items: Sequence[str]) -> dict[str, Any]:
    """The arguments that ``key=value`` and ``key:=JSON`` items give `tool`, keyed by wire name.

    A ``key=value`` stays the text typed when the tool's model takes that text for the parameter (a
    string stays a string, ``007`` included). Otherwise it is read as JSON (``1`` for a number, ``true``,
    ``[1, 2]``) when the model takes that reading, or when the parameter takes no text at all (so the
    refusal describes the value meant); else it stays text for the model to refuse. Only the keys given
    are in the result, so nothing the user did not type reaches the server. One item holding several
    pairs of known keys (``'a=1 b=2'``) is split shell-style. Raises `UserError` for an unknown or
    repeated key, or a ``key:=`` value that is not JSON.
    """
    properties = tool.parameters.model_json_schema().get("properties")
    names = list(properties) if isinstance(properties, dict) else []
    arguments: dict[str, Any] = {}
    texts: dict[str, str] = {}
    for item in _split_items(items, set(names)):
        match = _ITEM.fullmatch(item)
        if match is None:
            raise UserError(f"{item!r} is not key=value or key:=JSON")
        key, raw, value = match["key"], match["raw"], match["value"]
        if key not in names:
            known = f"its parameters are: {', '.join(names)}" if names else "it takes no parameters"
            raise UserError(f"{tool.name} has no parameter {key!r}; {known}")
        if key in arguments:
            raise UserError(f"{key!r} is given twice; give each parameter once")
        if raw:
            try:
                arguments[key] = json.loads(value)
            except json.JSONDecodeError as exc:
                raise UserError(f"{key}:= takes JSON, and {value!r} is not: {exc}") from exc
        else:
            arguments[key] = texts[key] = value
    for key, text in texts.items():
        faults = _faults(tool, arguments, key)
        if not faults:
            continue
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            continue
        if isinstance(parsed, str):
            continue
        if all(fault.endswith("_type") for fault in faults) or not _faults(
            tool, {**arguments, key: parsed}, key
        ):
            arguments[key] = parsed
    return arguments


def _split_items(items: Sequence[str], names: set[str]) -> list[str]:
    """`items`, an item that holds several pairs of known keys (``'a=1 b=2'``) split shell-style."""
    out: list[str] = []
    for item in items:
        try:
            parts = shlex.split(item) if any(char.isspace() for char in item) else [item]
        except ValueError:
            parts = [item]
        matches = [_ITEM.fullmatch(part) for part in parts]
        if len(parts) > 1 and all(match is not None and match["key"] in names for match in matches):
            out.extend(parts)
        else:
            out.append(item)
    return out


def _faults(tool: AgentTool, arguments: dict[str, Any], key: str) -> list[str]:
    """The kinds of fault the tool's model finds with `key` in `arguments` (those of other keys aside)."""
    try:
        tool.validate(arguments)
    except pydantic.ValidationError as exc:
        return [error["type"] for error in exc.errors() if error["loc"][:1] == (key,)]
    return []


# -- printing -------------------------------------------------------------------------------------------


def signature(item: AgentTool) -> str:
    """A tool's typed signature, like ``forecast(city: str, days: int = 2)``."""
    try:
        model = item.parameters
    except SchemaError as exc:
        return f"{item.name}(...)  # schema not usable: {exc}"
    parts = []
    for name, field in model.model_fields.items():
        text = f"{field.alias or name}: {_type_name(field.annotation)}"
        if not field.is_required():
            default = (
                field.get_default(call_default_factory=False) if field.default_factory is None else "..."
            )
            text += f" = {default!r}" if default != "..." else " = ..."
        parts.append(text)
    return f"{item.name}({', '.join(parts)})"


def _type_name(annotation: Any) -> str:
    if annotation is None or annotation is type(None):
        return "None"
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        return " | ".join(_type_name(arg) for arg in typing.get_args(annotation))
    if origin is typing.Literal:
        return f"Literal[{', '.join(repr(arg) for arg in typing.get_args(annotation))}]"
    if origin is not None:
        args = typing.get_args(annotation)
        base = getattr(origin, "__name__", str(origin))
        return f"{base}[{', '.join(_type_name(arg) for arg in args)}]" if args else base
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _print_tools(tools: Sequence[AgentTool], out: TextIO) -> None:
    for item in tools:
        print(f"  {signature(item)}", file=out)
        summary = (item.description or "").strip().splitlines()
        if summary:
            print(f"      {summary[0]}", file=out)


def _print_result(result: AgentToolResult, out: TextIO) -> None:
    _print_content(result, out)
    _print_details(result, out)


def _print_content(result: AgentToolResult, out: TextIO, *, shorten: bool = False) -> None:
    """The content as the model reads it; each text `shortened` when asked."""
    for block in result.content:
        if isinstance(block, TextContent):
            print(_shorten(block.text) if shorten else block.text, file=out)
        elif isinstance(block, ImageContent):
            print(f"[image: {block.mime_type}, {len(block.data) * 3 // 4} bytes]", file=out)


def _print_details(result: AgentToolResult, out: TextIO) -> None:
    """What only the program gets: the structured content."""
    structured = result.details.get("structuredContent")
    if structured is not None:
        print(f"details['structuredContent'] = {json.dumps(structured, ensure_ascii=False)}", file=out)


def _shorten(text: str, max_lines: int = 20, max_chars: int = 1000) -> str:
    """`text` as is when it is short; else its start and how much was left out."""
    lines = text.splitlines()
    if len(lines) <= max_lines and len(text) <= max_chars:
        return text
    kept = "\n".join(lines[:max_lines])[:max_chars]
    return f"{kept}\n... ({len(text) - len(kept)} more characters)"


def _result_json(result: AgentToolResult) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for block in result.content:
        if isinstance(block, TextContent):
            content.append({"type": "text", "text": block.text})
        else:
            content.append({"type": "image", "mime_type": block.mime_type, "data": block.data})
    return {"content": content, "details": result.details, "is_error": result.is_error}


if __name__ == "__main__":
    sys.exit(main())
