"""Bench cases: each way of calling a tool once (``echo`` of kitchen.py, `ADD` of _minimal.py), as a
`Call` (timed) or a `Case` (a call with untimed steps around it) for `calls.measure`. A case whose package
is missing comes back as None, so that the table says what was not measured instead of failing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp import Client, types
from mcp.shared.exceptions import MCPError

FRESH = "raw SDK, fresh Client, same work"
PERSISTENT = "raw SDK, persistent Client"

Call = Callable[[], Awaitable[Any]]


@dataclass(frozen=True)
class Tool:
    """The tool a case calls, and its arguments."""

    name: str
    args: dict[str, Any]


ECHO = Tool("echo", {"message": "hi"})
ADD = Tool("add", {"a": 1, "b": 2})


@dataclass
class Case:
    """`call` is timed; `before` and `after` (untimed) run around it, e.g. to wait for a spare."""

    call: Call
    before: Call | None = None
    after: Call | None = None


def call_request(tool: Tool) -> types.CallToolRequest:
    return types.CallToolRequest(params=types.CallToolRequestParams(name=tool.name, arguments=tool.args))


async def send_call(client: Client, tool: Tool = ECHO) -> types.CallToolResult:
    """One ``tools/call`` request and nothing else (`Client.call_tool` lists the tools first on a fresh
    session, to validate structured output against the tool's output schema)."""
    return await client.session.send_request(call_request(tool), types.CallToolResult)


def raw_fresh(open_client: Callable[[], Client], *, same_work: bool, tool: Tool = ECHO) -> Call:
    """A fresh raw SDK `Client` per call: ``call_tool`` as SDK users write it, or (`same_work`) exactly the
    requests cubepi sends: the era's opening (2026-07-28 pinned: none; handshake: ``initialize``) and one
    ``tools/call``."""

    async def call() -> Any:
        async with open_client() as client:
            if same_work:
                return await send_call(client, tool)
            return await client.call_tool(tool.name, tool.args)

    return call


async def raw_persistent(stack: contextlib.AsyncExitStack, client: Client, tool: Tool = ECHO) -> Case:
    """One raw SDK `Client` for the whole run; its first ``call_tool`` (untimed) lists the tools, so a
    timed call is one ``tools/call``."""
    await stack.enter_async_context(client)
    await client.call_tool(tool.name, tool.args)

    async def call() -> Any:
        return await client.call_tool(tool.name, tool.args)

    return Case(call)


def raw_prespawned(open_client: Callable[[], Client], tool: Tool = ECHO) -> Case:
    """A fresh raw SDK `Client` opened before the clock starts, which has listed the tools and asked for a
    tool that does not exist, as a cubepi spare does while it waits: the floor of a prespawned call (a
    new process's first ``tools/call`` on warmed code)."""
    stack = contextlib.AsyncExitStack()
    holder: dict[str, Client] = {}

    async def before() -> None:
        client = holder["client"] = await stack.enter_async_context(open_client())
        await client.session.list_tools()
        missing = types.CallToolRequestParams(name="cubepi-warm-up-0", arguments={})
        with contextlib.suppress(MCPError):  # "no such tool"
            await client.session.send_request(types.CallToolRequest(params=missing), types.CallToolResult)

    async def call() -> Any:
        return await send_call(holder["client"], tool)

    return Case(call, before, stack.aclose)


def cubepi_call(tools: Any, tool: Tool = ECHO) -> Call:
    """A call of `tool` from a cubepi tool list (raises on an ``is_error`` result)."""
    found = next(t for t in tools if t.name == tool.name)

    async def call() -> Any:
        result = await found.execute(tool.args)
        assert not result.is_error, result.text
        return result

    return call


def cubepi_prespawn(tools: Any, *, spaced: bool) -> Case:
    """A cubepi prespawn call: `spaced`, the spare is ready (calls wider apart than the server's start-up);
    else back to back, right after another call took the spare."""
    call = cubepi_call(tools)
    shared = tools._shared

    async def wait_for_spare() -> None:
        await shared.wait_spare()

    async def take_spare() -> None:
        await shared.wait_spare()
        await call()  # the timed call comes right after this one took the spare

    # `after`: the next spare starts right after a call; wait for it, untimed, so that its start-up does
    # not run during (and slow down) the cases timed next.
    return Case(call, wait_for_spare if spaced else take_spare, wait_for_spare)


async def cubepi_persistent(stack: contextlib.AsyncExitStack, server: Any, tool: Tool = ECHO) -> Case:
    """cubepi tools loaded from ``server.connect()``: every call goes over that one session."""
    from cubepi.mcp import load_mcp_tools

    conn = await stack.enter_async_context(server.connect())
    return Case(cubepi_call(await load_mcp_tools(conn), tool))


async def fastmcp_persistent(stack: contextlib.AsyncExitStack, url: str, mode: str) -> Case | None:
    """One ``fastmcp.Client`` (4.x, on the same SDK) for the whole run, over Streamable HTTP."""
    try:
        import fastmcp
    except ImportError:
        return None
    client = await stack.enter_async_context(fastmcp.Client(url, mode=mode))
    await client.call_tool(ECHO.name, ECHO.args)

    async def call() -> Any:
        return await client.call_tool(ECHO.name, ECHO.args)

    return Case(call)


def load_cases(command: str, args: list[str], devnull: Any) -> dict[str, Call]:
    """Loading a catalog: cubepi's loader (no model built) vs the raw SDK's negotiation (``server/discover``,
    else ``initialize``) + ``list_tools``."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from cubepi.mcp import StdioServer, load_mcp_tools

    params = StdioServerParameters(command=command, args=args, env=StdioServer(command, args).environment())

    async def cubepi_load() -> Any:
        tools = await load_mcp_tools(StdioServer(command, args))
        assert len(tools) >= 100
        return tools

    async def raw_list() -> Any:
        async with Client(stdio_client(params, errlog=devnull)) as client:
            return await client.session.list_tools()

    return {"cubepi load_mcp_tools": cubepi_load, "raw SDK, discover + list_tools": raw_list}
