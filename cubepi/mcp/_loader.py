"""The loaders: list a server's tools (one short session) and return one `AgentTool` per tool."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import UserError
from ._servers import HttpServer, HttpTransport, StdioServer
from ._session import Endpoint, Session, Timeouts, run_stateless
from ._tool import build_tool, stateless_caller, tool_spec
from ._toollist import MCPToolList, guard, prepare_resources

if TYPE_CHECKING:
    import httpx
    from mcp import types as mcp_types

__all__ = ["load_mcp_tools", "load_mcp_tools_http", "load_mcp_tools_stdio"]


async def load_mcp_tools(
    server: StdioServer | HttpServer, *, timeout: float | None = 30.0, prespawn: bool = False
) -> MCPToolList:
    """Connect to `server`, list its tools (following pagination), disconnect; one `AgentTool` per tool.

    Each tool's `execute` opens a fresh session (a new process for stdio), calls, and closes it. `timeout`
    bounds each phase, initialize, list and call, in seconds (None: no limit); exceeding it raises
    `MCPTimeoutError` naming the phase. For an ``"auto"`` HTTP server, the transport found while loading is
    the one the tools use.

    The list's calls share one HTTP client; ``prespawn=True`` (stdio) keeps one spare server started and
    initialized for the next call. `aclose()` (or ``async with``) releases both; closing is optional.
    """
    if not isinstance(server, (StdioServer, HttpServer)):
        raise UserError(f"load_mcp_tools takes a StdioServer or an HttpServer, got {type(server).__name__}")
    endpoint = Endpoint(server, Timeouts.uniform(timeout))

    async def work(session: Session) -> list[mcp_types.Tool]:
        return await session.list_tools()

    resources = prepare_resources(endpoint, prespawn=prespawn)
    listed = await guard(resources, run_stateless(endpoint, work))
    call = stateless_caller(endpoint)
    origin = server.describe()
    return MCPToolList(
        (build_tool(tool_spec(item), call, origin=origin) for item in listed), resources=resources
    )


async def load_mcp_tools_stdio(
    command: str,
    args: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float | None = 30.0,
    prespawn: bool = False,
) -> MCPToolList:
    """Load the tools of a stdio MCP server started as ``command args...``.

    The server gets the MCP SDK's safe default environment plus `env`, never the whole parent environment.
    ``prespawn=True`` keeps one spare server process started and initialized, so a call does not wait
    for the server to start (each call still gets a process no earlier call used).
    """
    return await load_mcp_tools(
        StdioServer(command, tuple(args or ()), env=env, cwd=cwd), timeout=timeout, prespawn=prespawn
    )


async def load_mcp_tools_http(
    server_url: str,
    *,
    headers: Mapping[str, str] | None = None,
    auth: httpx.Auth | None = None,
    transport: HttpTransport = "auto",
    timeout: float | None = 30.0,
) -> MCPToolList:
    """Load the tools of an MCP server over HTTP: ``"streamable-http"``, ``"sse"`` or ``"auto"``.

    ``"auto"`` tries Streamable HTTP and falls back to SSE when the initialize POST gets a 4xx. `headers`
    (for example ``{"Authorization": "Bearer ..."}``) and `auth` (any `httpx.Auth`) go on every request.
    """
    return await load_mcp_tools(
        HttpServer(server_url, headers=headers, auth=auth, transport=transport), timeout=timeout
    )
