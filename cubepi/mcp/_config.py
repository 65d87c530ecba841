"""The ``mcpServers`` file other MCP clients use: parse it, expand ``${VAR}``, load every server's tools.

The shape is the one Claude Desktop, Cursor, VS Code (``servers``) and fastmcp share::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
        "web":   {"url": "https://host/mcp", "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}}
    }}

Values may use ``${VAR}``, ``${VAR:-default}`` (and VS Code's ``${env:VAR}``), expanded from the
environment; no value ever appears in an error message.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

import anyio

from ..errors import CubepiError, MCPError, MCPTimeoutError, ServerSkippedWarning, UserError
from ..tools import AgentTool, ensure_unique_names
from ._loader import load_mcp_tools
from ._redact import redact, secret_values
from ._servers import HttpServer, HttpTransport, StdioServer
from ._toollist import MCPToolList, ToolChanges, ToolListEdit, merge_changes

__all__ = ["ConfigSource", "ConfiguredServer", "OnError", "load_mcp_tools_from_config", "read_mcp_config"]

ConfigSource: TypeAlias = "str | os.PathLike[str] | Mapping[str, Any]"
OnError: TypeAlias = Literal["raise", "skip"]

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


def _policy_names() -> frozenset[str]:
    return frozenset(inspect.signature(load_mcp_tools).parameters) - {"server"}


def _merged_policies(
    configured: Sequence[ConfiguredServer], shared: Mapping[str, Any], servers: Mapping[str, Any] | None
) -> dict[str, dict[str, Any]]:
    known = _policy_names()
    names = [item.name for item in configured]

    def check(options: Mapping[str, Any], whose: str) -> None:
        for option in options:
            if option not in known:
                raise UserError(
                    f"unknown policy {option!r} {whose}; the loaders take {', '.join(sorted(known))}"
                )

    if "prefix" in shared:
        raise UserError(
            "load_mcp_tools_from_config prefixes each server's tools with its name; give a server its own "
            "prefix with servers={'name': {'prefix': ...}}"
        )
    check(shared, "")
    per_server = dict(servers or {})
    for name, options in per_server.items():
        if name not in names:
            raise UserError(
                f"servers= names {name!r}, which the config does not have (enabled: {', '.join(names)})"
            )
        if not isinstance(options, Mapping):
            raise UserError(f"servers[{name!r}] must be a dict of policies, got {type(options).__name__}")
        check(options, f"for server {name!r}")
    return {name: {"prefix": name, **shared, **per_server.get(name, {})} for name in names}


@dataclass
class _Skipped:
    """The servers of a config that failed to load (``on_error="skip"``), with their policies, so a
    refresh can try them again."""

    pending: dict[str, tuple[ConfiguredServer, dict[str, Any]]] = field(default_factory=dict)
    failures: dict[str, Exception] = field(default_factory=dict)

    def fail(self, item: ConfiguredServer, policies: dict[str, Any], exc: Exception) -> None:
        failure = _naming(item.name, exc, item.server)
        self.pending[item.name] = (item, policies)
        self.failures[item.name] = failure
        warnings.warn(str(failure), ServerSkippedWarning, stacklevel=2)

    async def retry(self) -> dict[str, MCPToolList]:
        """Load the failed servers again (concurrently); the lists of those that now load, in file order."""
        items = list(self.pending.values())
        loaded = await _load_each(items, self)
        for name in loaded:
            del self.pending[name], self.failures[name]
        return {item.name: loaded[item.name] for item, _ in items if item.name in loaded}


async def _load_each(
    items: Sequence[tuple[ConfiguredServer, dict[str, Any]]], skipped: _Skipped
) -> dict[str, MCPToolList]:
    """Load every server concurrently; a failure is recorded in `skipped` and does not stop the others."""
    loaded: dict[str, MCPToolList] = {}

    async def load(item: ConfiguredServer, policies: dict[str, Any]) -> None:
        try:
            loaded[item.name] = await load_mcp_tools(item.server, **policies)
        except Exception as exc:
            skipped.fail(item, policies, exc)

    try:
        async with anyio.create_task_group() as group:
            for item, policies in items:
                group.start_soon(load, item, policies, name=f"cubepi-config-{item.name}")
    except BaseException:
        await _close_all(list(loaded.values()))
        raise
    return loaded


class _ConfigToolList(MCPToolList):
    """The tools of several servers as one list; closing it closes each server's list, refreshing it
    first loads the servers that failed to load (``on_error="skip"``), then refreshes each loaded one
    (concurrently) and merges what changed."""

    def __init__(self, servers: Mapping[str, MCPToolList], skipped: _Skipped | None = None) -> None:
        super().__init__(tool for tools in servers.values() for tool in tools)
        self._servers = dict(servers)
        self._skipped = skipped
        self._closed = False

    @property
    def _lists(self) -> tuple[MCPToolList, ...]:
        return tuple(self._servers.values())

    @property
    def servers(self) -> dict[str, MCPToolList]:
        """Each loaded server's own list, by its name in the config (for its resources and prompts)."""
        return dict(self._servers)

    @property
    def failures(self) -> Mapping[str, Exception]:
        return MappingProxyType(dict(self._skipped.failures) if self._skipped else {})

    @property
    def app_tools(self) -> list[AgentTool]:
        """Every server's app-only tools (`MCPToolList.app_tools`)."""
        return [tool for tools in self._lists for tool in tools.app_tools]

    @property
    def instructions(self) -> str | None:
        """Each server's ``instructions``, headed by its name (None: no server sent any)."""
        parts = [
            f"## {name}\n{tools.instructions}" for name, tools in self._servers.items() if tools.instructions
        ]
        return "\n\n".join(parts) or None

    def _server_offers(self) -> Any:
        raise UserError(
            "this list holds the tools of several servers; ask one: tools.servers[name].list_resources() "
            f"(servers: {', '.join(self._servers)})"
        )

    async def _refreshed(self, force: bool) -> tuple[ToolChanges, ToolListEdit]:
        if self._closed:
            raise UserError("this tool list is closed; load the config again")
        loaded = self._lists
        joined = await self._join_failed()
        changes, edit = await self._refresh_loaded(force, loaded)
        edit.added.extend(joined)
        added = ToolChanges(added=tuple(tool.name for tool in joined))
        return merge_changes([changes, added]), edit

    async def _join_failed(self) -> list[AgentTool]:
        """The tools of the failed servers that load now; their lists join this one."""
        if self._skipped is None or not self._skipped.pending:
            return []
        joined: list[AgentTool] = []
        for name, tools in (await self._skipped.retry()).items():
            try:
                ensure_unique_names([*self, *tools])
            except UserError:
                await tools.aclose()
                raise
            self._servers[name] = tools
            self.extend(tools)
            joined.extend(tools)
        return joined

    async def _refresh_loaded(
        self, force: bool, lists: Sequence[MCPToolList]
    ) -> tuple[ToolChanges, ToolListEdit]:
        done: dict[int, tuple[ToolChanges, ToolListEdit]] = {}
        failures: list[Exception] = []

        async def refresh(index: int, tools: MCPToolList) -> None:
            try:
                done[index] = await tools._refreshed(force)
            except Exception as exc:
                failures.append(exc)

        async with anyio.create_task_group() as group:
            for index, tools in enumerate(lists):
                group.start_soon(refresh, index, tools)
        edit = ToolListEdit()
        for index in sorted(done):
            edit.merge(done[index][1])
        self[:] = edit.apply(self)  # the servers that refreshed, even when another failed
        if failures:
            raise failures[0]
        return merge_changes(done[index][0] for index in sorted(done)), edit

    @property
    def closed(self) -> bool:
        return self._closed or (bool(self._lists) and all(tools.closed for tools in self._lists))

    async def aclose(self) -> None:
        self._closed = True
        await _close_all(self._lists)


async def _close_all(lists: Sequence[MCPToolList]) -> None:
    """Close every list (shielded), then raise the first failure, if any."""
    failure: BaseException | None = None
    with anyio.CancelScope(shield=True):
        for tools in lists:
            try:
                await tools.aclose()
            except Exception as exc:
                failure = failure or exc
    if failure is not None:
        raise failure


async def load_mcp_tools_from_config(
    source: ConfigSource,
    *,
    servers: Mapping[str, Mapping[str, Any]] | None = None,
    on_error: OnError = "raise",
    **policies: Any,
) -> MCPToolList:
    """Load the tools of every server in an ``mcpServers`` file (Claude Desktop, Cursor, VS Code, fastmcp).

    `source` is a path or the parsed JSON. Each server's tools are named ``<server>__<tool>``. `policies`
    (any keyword of `load_mcp_tools`) apply to every server; ``servers={"name": {...}}`` adds or
    overrides policies for one server (its ``prefix`` included). The servers load concurrently; if one
    fails, the others are closed and `MCPError` names it. The returned list's `aclose()` (or
    ``async with``) closes every server's resources. See docs/loading-mcp-tools.md for the file's keys.

    ``on_error="skip"`` keeps the servers that loaded instead: each failure is warned
    (`ServerSkippedWarning`) and kept in ``tools.failures`` (server name -> the exception, secrets
    redacted); ``await tools.refresh()`` tries the failed servers again, and one that loads joins the
    list (see docs/many-servers.md).
    """
    if on_error not in ("raise", "skip"):
        raise UserError(f'on_error must be "raise" or "skip", got {on_error!r}')
    configured = read_mcp_config(source)
    merged = _merged_policies(configured, policies, servers)
    if on_error == "skip":
        skipped = _Skipped()
        loaded_lists = await _load_each([(item, merged[item.name]) for item in configured], skipped)
        skipping = _ConfigToolList(
            {item.name: loaded_lists[item.name] for item in configured if item.name in loaded_lists}, skipped
        )
        try:
            ensure_unique_names(skipping)
        except BaseException:
            await _close_all(list(loaded_lists.values()))
            raise
        return skipping
    loaded: dict[str, MCPToolList] = {}
    failure: tuple[str, Exception] | None = None
    merged_servers = {item.name: item.server for item in configured}

    async def load(item: ConfiguredServer, scope: anyio.CancelScope) -> None:
        nonlocal failure
        try:
            loaded[item.name] = await load_mcp_tools(item.server, **merged[item.name])
        except Exception as exc:
            failure = failure or (item.name, exc)
            scope.cancel()

    try:
        async with anyio.create_task_group() as group:
            for item in configured:
                group.start_soon(load, item, group.cancel_scope, name=f"cubepi-config-{item.name}")
        if failure is not None:
            name, exc = failure
            raise _naming(name, exc, merged_servers[name]) from exc
        result = _ConfigToolList({item.name: loaded[item.name] for item in configured})
        drifts = [loaded[item.name].drift for item in configured]
        result.drift = merge_changes(d for d in drifts if d is not None) if policies.get("lock") else None
        ensure_unique_names(result)
    except BaseException:
        await _close_all(list(loaded.values()))
        raise
    return result


def _naming(name: str, exc: Exception, server: StdioServer | HttpServer | None = None) -> Exception:
    """`exc` again, its message saying which server of the config it came from (without `server`'s
    secrets: its env and header values)."""
    secrets = _secrets(server)
    message = redact(f"server {name!r} of the MCP config: {exc.args[0] if exc.args else exc}", secrets)
    if isinstance(exc, MCPTimeoutError):
        return MCPTimeoutError(
            message, phase=exc.phase, limit=exc.limit, server=exc.server, stderr=_clean(exc.stderr, secrets)
        )
    if isinstance(exc, MCPError):
        return MCPError(
            message, tool_name=exc.tool_name, server=exc.server, stderr=_clean(exc.stderr, secrets)
        )
    if isinstance(exc, CubepiError):
        return type(exc)(message)
    return MCPError(f"{message} ({type(exc).__name__})")


def _secrets(server: StdioServer | HttpServer | None) -> tuple[str, ...]:
    if isinstance(server, StdioServer):
        return secret_values((server.env or {}).values())
    if isinstance(server, HttpServer) and isinstance(server.headers, Mapping):
        return secret_values(server.headers.values())
    return ()


def _clean(text: str | None, secrets: Sequence[str]) -> str | None:
    return redact(text, secrets) if text else text
