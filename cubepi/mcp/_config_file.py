"""The ``mcpServers`` file other MCP clients use: parse it and expand ``${VAR}`` (`read_mcp_config`).

The shape is the one Claude Desktop, Cursor, VS Code (``servers``) and fastmcp share::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
        "web":   {"url": "https://host/mcp", "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}}
    }}

Values may use ``${VAR}``, ``${VAR:-default}`` (and VS Code's ``${env:VAR}``), expanded from the
environment; no value ever appears in an error message.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from ..errors import UserError
from ._configs import HttpTransport
from ._servers import HttpServer, StdioServer

__all__ = ["ConfigSource", "ConfiguredServer", "read_mcp_config"]

ConfigSource: TypeAlias = "str | os.PathLike[str] | Mapping[str, Any]"
_STDIO_KEYS = frozenset({"command", "args", "env", "cwd"})
_HTTP_KEYS = frozenset({"url", "headers"})
_COMMON_KEYS = frozenset({"type", "transport", "disabled", "description"})
_KINDS: dict[str, HttpTransport | None] = {
    "stdio": None,
    "http": "streamable-http",
    "streamable-http": "streamable-http",
    "streamable_http": "streamable-http",
    "streamablehttp": "streamable-http",
    "sse": "sse",
}
_Fail: TypeAlias = Callable[[str], UserError]
_Text: TypeAlias = Callable[[str, Any], str]
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_VARIABLE = re.compile(r"^(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$", re.DOTALL)


@dataclass(frozen=True)
class ConfiguredServer:
    """One enabled entry of a config file: its name and the server it describes."""

    name: str
    server: StdioServer | HttpServer


def read_mcp_config(
    source: ConfigSource, *, environ: Mapping[str, str] | None = None
) -> list[ConfiguredServer]:
    """The enabled servers of an ``mcpServers`` file (a path, or the parsed JSON), in file order.

    `environ` (default: ``os.environ``) supplies ``${VAR}`` values. Raises `UserError` naming the server
    and the key for an unknown key, a missing variable or a value of the wrong type.
    """
    data, where = _load(source)
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, Mapping) else None
    if not isinstance(servers, Mapping):
        raise UserError(f'{where} has no "mcpServers" object (the form Claude Desktop and Cursor use)')
    env = os.environ if environ is None else environ
    found: list[ConfiguredServer] = []
    for name, entry in servers.items():
        if not isinstance(name, str) or not name:
            raise UserError(f"{where}: every server needs a non-empty name, got {name!r}")
        if not isinstance(entry, Mapping):
            raise UserError(f"{where}: server {name!r} must be an object, got {type(entry).__name__}")
        server = _server(name, entry, env, where)
        if server is not None:
            found.append(ConfiguredServer(name, server))
    return found


def _load(source: ConfigSource) -> tuple[Any, str]:
    if isinstance(source, Mapping):
        return source, "the MCP config"
    if not isinstance(source, (str, os.PathLike)):
        raise UserError(f"an MCP config is a path or a mapping, got {type(source).__name__}")
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read the MCP config {str(path)!r}: {exc.strerror or exc}") from exc
    try:
        return json.loads(text), str(path)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"{path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from exc


def _server(
    name: str, entry: Mapping[str, Any], env: Mapping[str, str], where: str
) -> StdioServer | HttpServer | None:
    def fail(message: str) -> UserError:
        return UserError(f"{where}: server {name!r}: {message}")

    unknown = sorted(str(key) for key in entry if key not in _STDIO_KEYS | _HTTP_KEYS | _COMMON_KEYS)
    if unknown:
        allowed = ", ".join(sorted(_STDIO_KEYS | _HTTP_KEYS | _COMMON_KEYS))
        raise fail(f"unknown key {unknown[0]!r} (a server takes {allowed})")
    disabled = entry.get("disabled", False)
    if not isinstance(disabled, bool):
        raise fail('"disabled" must be true or false')
    if disabled:
        return None

    def text(key: str, value: Any) -> str:
        if not isinstance(value, str):
            raise fail(f"{key} must be a string, got {type(value).__name__}")
        return _expand(value, env, key, fail)

    def strings(key: str, value: Any) -> dict[str, str]:
        if not isinstance(value, Mapping):
            raise fail(f"{key} must be an object of strings, got {type(value).__name__}")
        return {str(k): text(f"{key}.{k}", v) for k, v in value.items()}

    kind = _kind(entry, text, fail)
    if kind is None and "url" in entry and "command" not in entry:
        kind = "auto"
    if kind is None:
        if "command" not in entry:
            raise fail('needs "command" (a stdio server) or "url" (an HTTP server)')
        if "url" in entry:
            raise fail('has both "command" and "url"; keep one, or say which with "type"')
        misplaced = sorted(_HTTP_KEYS & set(entry))
        if misplaced:
            raise fail(f'{misplaced[0]!r} applies to url servers, not to a stdio "command"')
        args = entry.get("args", [])
        if isinstance(args, str) or not isinstance(args, Sequence):
            raise fail(f"args must be a list of strings, got {type(args).__name__}")
        command = text("command", entry["command"])
        argv = [text(f"args[{i}]", arg) for i, arg in enumerate(args)]
        variables = strings("env", entry["env"]) if "env" in entry else None
        cwd = text("cwd", entry["cwd"]) if entry.get("cwd") is not None else None
        try:
            return StdioServer(command, argv, env=variables, cwd=cwd)
        except UserError as exc:
            raise fail(str(exc)) from None
    if "url" not in entry:
        raise fail(f'a {kind} server needs "url"')
    misplaced = sorted(_STDIO_KEYS & set(entry))
    if misplaced:
        raise fail(f'{misplaced[0]!r} applies to stdio servers, not to a "url" server')
    url = text("url", entry["url"])
    headers = strings("headers", entry["headers"]) if "headers" in entry else None
    try:
        return HttpServer(url, headers=headers, transport=kind)
    except UserError as exc:
        raise fail(str(exc)) from None


def _kind(entry: Mapping[str, Any], text: _Text, fail: _Fail) -> HttpTransport | None:
    """The HTTP transport that ``type`` / ``transport`` name; None for stdio or when neither is given."""
    said = {key: text(key, entry[key]).strip().lower() for key in ("type", "transport") if key in entry}
    if len(set(said.values())) > 1:
        raise fail(f'"type" and "transport" disagree ({said["type"]!r}, {said["transport"]!r})')
    if not said:
        return None
    value = next(iter(said.values()))
    if value not in _KINDS:
        raise fail(f"unknown transport {value!r} (one of {', '.join(_KINDS)})")
    transport = _KINDS[value]
    if transport is None and "command" not in entry:
        raise fail('a stdio server needs "command"')
    return transport


def _expand(value: str, env: Mapping[str, str], key: str, fail: _Fail) -> str:
    """`value` with each ``${VAR}`` / ``${VAR:-default}`` / ``${env:VAR}`` replaced from `env`."""

    def replace(match: re.Match[str]) -> str:
        found = _VARIABLE.match(match.group(1))
        if found is None:
            raise fail(
                f"{key}: unsupported placeholder ${{{match.group(1)}}} (write ${{VAR}} or ${{VAR:-default}})"
            )
        variable, default = found.groups()
        current = env.get(variable)
        if current is None or (current == "" and default is not None):
            if default is None:
                raise fail(f"{key} uses ${{{variable}}}, but the environment variable {variable} is not set")
            return default
        return current

    return _PLACEHOLDER.sub(replace, value)
