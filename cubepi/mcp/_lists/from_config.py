"""One tool list of every server of an ``mcpServers`` file (`load_mcp_tools_from_config`).

Each server's tools are loaded (`_lists.loaders`) with the shared and per-server policies and prefixed with
its name; the list keeps them by name (`servers`), with the servers that failed to load under
``on_error="skip"`` (`failures`), which a refresh tries again. The file itself is `_config_file`'s.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

import anyio

from ...errors import CubepiError, MCPError, MCPTimeoutError, ServerSkippedWarning, UserError
from ...tools import AgentTool, ensure_unique_names
from .._config_file import ConfigSource, ConfiguredServer, read_mcp_config
from .._redact import redact, secret_values
from .._servers import HttpServer, StdioServer
from .loaders import load_mcp_tools
from .options import LoadOptions
from .toollist import MCPToolList, ToolChanges, ToolListEdit, merge_changes

__all__ = ["OnError", "load_mcp_tools_from_config"]

OnError: TypeAlias = Literal["raise", "skip"]


def _merged_policies(
    configured: Sequence[ConfiguredServer], shared: Mapping[str, Any], servers: Mapping[str, Any] | None
) -> dict[str, dict[str, Any]]:
    known = LoadOptions.names()
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
