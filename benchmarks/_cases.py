"""Bench cases beyond the raw SDK's fresh session: cubepi prespawn and persistent, raw SDK persistent,
pre-initialized and the HTTP protocol floor, langchain-mcp-adapters. Each returns a `Case` for
`calls.measure`, or None when its package (or cubepi feature) is missing, so the table says what was not
measured instead of failing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp import ClientSession, types

ARGS = {"message": "hi"}

Call = Callable[[], Awaitable[Any]]


@dataclass
class Case:
    """`call` is timed; `before` and `after` (untimed) run around it, e.g. to wait for a spare."""

    call: Call
    before: Call | None = None
    after: Call | None = None


def echo_request() -> types.ClientRequest:
    params = types.CallToolRequestParams(name="echo", arguments=ARGS)
    return types.ClientRequest(types.CallToolRequest(params=params))


async def raw_persistent(stack: contextlib.AsyncExitStack, streams: Any) -> Case:
    """One raw SDK `ClientSession` for the whole run; a call is one ``tools/call`` on it."""
    read, write = await stack.enter_async_context(streams)
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()

    async def call() -> Any:
        return await session.send_request(echo_request(), types.CallToolResult)

    return Case(call)


def raw_preinitialized(open_streams: Callable[[], Any], *, warmed: bool = False) -> Case:
    """A fresh raw SDK session initialized before the clock starts: the floor of a prespawned call
    (the server's first ``tools/call`` in a new process, which is slower than on a warm one).
    `warmed`: the session has also listed the tools and asked for a tool that does not exist, as a
    cubepi spare does while it waits."""
    stack = contextlib.AsyncExitStack()
    holder: dict[str, ClientSession] = {}

    async def before() -> None:
        read, write = await stack.enter_async_context(open_streams())
        holder["session"] = await stack.enter_async_context(ClientSession(read, write))
        await holder["session"].initialize()
        if warmed:
            await holder["session"].list_tools()
            missing = types.CallToolRequestParams(name="cubepi-warm-up-0", arguments={})
            with contextlib.suppress(Exception):  # "no such tool"
                await holder["session"].send_request(
                    types.ClientRequest(types.CallToolRequest(params=missing)), types.CallToolResult
                )

    async def call() -> Any:
        return await holder["session"].send_request(echo_request(), types.CallToolResult)

    return Case(call, before, stack.aclose)


async def raw_protocol_floor(stack: contextlib.AsyncExitStack, url: str) -> Case:
    """The raw SDK doing no more than a stateless Streamable HTTP call must: a fresh session's
    ``initialize``, its ``notifications/initialized`` and one ``tools/call``, on one HTTP client kept for
    the run, with no GET stream and no DELETE (the session is left to the server to expire). The SDK's
    context managers must exit before the call returns, so its transport's teardown is timed."""
    import httpx
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    class NoGetStream(Exception):
        pass

    async def refuse_get(request: httpx.Request) -> None:
        if request.method == "GET":
            raise NoGetStream()

    client = await stack.enter_async_context(create_mcp_http_client())
    client.event_hooks["request"].append(refuse_get)

    async def call() -> Any:
        transport = streamable_http_client(url, http_client=client, terminate_on_close=False)
        async with transport as (read, write, _), ClientSession(read, write) as session:
            await session.initialize()
            return await session.send_request(echo_request(), types.CallToolResult)

    return Case(call)


def cubepi_prespawn(tools: Any, *, spaced: bool) -> Case:
    """A cubepi prespawn call: `spaced`, the spare is ready (calls wider apart than the server's start-up);
    else back to back, right after another call took the spare."""
    from cubepi import AgentTool

    echo: AgentTool = next(t for t in tools if t.name == "echo")
    spares = tools._resources.spares

    async def call() -> Any:
        result = await echo.execute(ARGS)
        assert not result.is_error, result.text
        return result

    async def wait_for_spare() -> None:
        await spares.wait_ready()

    async def take_spare() -> None:
        await spares.wait_ready()
        await call()  # the timed call comes right after this one took the spare

    # `after`: the next spare starts right after a call; wait for it, untimed, so that its start-up does
    # not run during (and slow down) the cases timed next.
    return Case(call, wait_for_spare if spaced else take_spare, wait_for_spare)


async def cubepi_persistent(stack: contextlib.AsyncExitStack, server: Any) -> Case | None:
    """cubepi tools bound to ``server.connect()`` (when that exists)."""
    from cubepi.mcp import load_mcp_tools

    connect = getattr(server, "connect", None)
    if connect is None:
        return None
    conn = await stack.enter_async_context(connect())
    tools = await load_mcp_tools(conn)
    echo = next(t for t in tools if t.name == "echo")

    async def call() -> Any:
        result = await echo.execute(ARGS)
        assert not result.is_error, result.text
        return result

    return Case(call)


async def langchain(connection: dict[str, Any]) -> Case | None:
    """langchain-mcp-adapters' tools loaded from a connection config: a new session per call."""
    try:
        from langchain_mcp_adapters.tools import load_mcp_tools
    except ImportError:
        return None
    tools = await load_mcp_tools(None, connection=connection)  # type: ignore[arg-type]
    echo = next(t for t in tools if t.name == "echo")

    async def call() -> Any:
        return await echo.ainvoke(ARGS)

    return Case(call)


def load_cases(command: str, args: list[str], devnull: Any) -> dict[str, Call]:
    """Loading a catalog: cubepi's loader (no model built) vs the raw SDK's initialize + list_tools."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from cubepi.mcp import StdioServer, load_mcp_tools

    params = StdioServerParameters(command=command, args=args, env=StdioServer(command, args).environment())

    async def cubepi_load() -> Any:
        tools = await load_mcp_tools(StdioServer(command, args))
        assert len(tools) >= 100
        return tools

    async def raw_list() -> Any:
        streams = stdio_client(params, errlog=devnull)
        async with streams as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await session.list_tools()

    return {"cubepi load_mcp_tools": cubepi_load, "raw SDK, initialize + list_tools": raw_list}
