"""Where a call's client CPU goes: cubepi's layers next to the raw SDK, measured in one interleaved run.

Run: ``python benchmarks/layers.py [--calls 400]``.

Two servers, each the minimal one (`_minimal.py`, ``add(a, b)``): a persistent handshake-era session over
stdio (``connect()`` vs one raw `Client`), and stateless 2026-07-28 calls over Streamable HTTP (a loaded list
vs a raw fresh `Client` pinned to the discover result, on one shared httpx2 client). Each call is timed alone
with ``time.process_time()`` (this process only: the server's CPU is not counted), the cases interleaved
call by call so that the machine's noise falls on all alike. Rows, from the outside in:

- ``cubepi execute``: what a user calls (argument validation, then everything below);
- ``cubepi MCPRun``: the tool's run on a ready model instance (policies: limiter, render, output check);
- ``cubepi runner``: the list's runner with `_calls.session.call_tool` (session, deadline, the request);
- ``raw Client.call_tool`` (persistent only): the SDK's own convenience call;
- ``raw send_request``: one ``tools/call`` request on the SDK session, the floor.

The private names used here (`AgentTool._run`, `MCPRun.runner`, `_calls.session.call_tool`) are the layers of
the call path in docs/architecture.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

import anyio
from _servers import MINIMAL, PYTHON, http_server
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from cubepi import AgentTool
from cubepi.mcp import StdioServer, load_mcp_tools, load_mcp_tools_http
from cubepi.mcp._calls.session import call_tool

ARGS = {"a": 1, "b": 2}
Call = Callable[[], Awaitable[Any]]


def cubepi_layers(tool: AgentTool) -> dict[str, Call]:
    run: Any = tool._run
    model = tool.parameters

    async def execute() -> Any:
        result = await tool.execute(ARGS)
        assert result.text == "3", result.text

    async def mcp_run() -> Any:
        return await run(model(**ARGS), None)

    async def runner() -> Any:
        return await run.runner.request(call_tool, "add", ARGS, None, None, tool_name="add")

    return {"cubepi execute": execute, "cubepi MCPRun": mcp_run, "cubepi runner": runner}


def request() -> types.CallToolRequest:
    return types.CallToolRequest(params=types.CallToolRequestParams(name="add", arguments=ARGS))


async def measure(cases: dict[str, Call], calls: int) -> dict[str, float]:
    """Mean client CPU (µs) of one call of each case, interleaved call by call after a warm-up."""
    for case in cases.values():
        for _ in range(20):
            await case()
    spent: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(calls):
        for name, case in cases.items():
            started = time.process_time()
            await case()
            spent[name].append(time.process_time() - started)
    return {name: statistics.mean(values) * 1e6 for name, values in spent.items()}


def show(title: str, cpu: dict[str, float], floor: str) -> None:
    print(f"\n{title}")
    print(f"{'layer':28s} {'client CPU/call':>16s} {'over the floor':>15s}")
    for name, value in cpu.items():
        print(f"{name:28s} {value:13.0f} µs {value - cpu[floor]:+12.0f} µs")


def _devnull() -> TextIO:
    """Where the raw server's stderr goes (its banner would cross the table)."""
    return open(os.devnull, "w")


async def stdio_persistent(calls: int) -> dict[str, float]:
    server = StdioServer(PYTHON, [str(MINIMAL)], protocol="legacy")
    params = StdioServerParameters(command=PYTHON, args=[str(MINIMAL)], env=server.environment())
    with _devnull() as devnull:
        async with (
            server.connect() as connection,
            Client(stdio_client(params, errlog=devnull), mode="legacy") as raw,
        ):
            tools = await load_mcp_tools(connection)
            cases = cubepi_layers(tools[0])

            async def call_tool_raw() -> Any:
                return await raw.call_tool("add", ARGS)

            async def send_request() -> Any:
                return await raw.session.send_request(request(), types.CallToolResult)

            cases["raw Client.call_tool"] = call_tool_raw
            cases["raw send_request"] = send_request
            return await measure(cases, calls)


async def http_stateless(calls: int) -> dict[str, float]:
    with http_server([PYTHON, str(MINIMAL), "streamable-http"], "/mcp") as url:
        shared = create_mcp_http_client()
        async with shared, await load_mcp_tools_http(url) as tools:
            async with Client(streamable_http_client(url, http_client=shared)) as probe:
                discover = probe.session.discover_result
            assert discover is not None, "not a 2026-07-28 server"
            cases = cubepi_layers(tools[0])

            async def fresh() -> Any:
                transport = streamable_http_client(url, http_client=shared)
                async with Client(transport, mode="2026-07-28", prior_discover=discover) as client:
                    return await client.session.send_request(request(), types.CallToolResult)

            cases["raw fresh send_request"] = fresh
            return await measure(cases, calls)


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=400, help="calls per case (default 400)")
    options = parser.parse_args()
    print(
        f"{options.calls} calls per case, interleaved; {os.cpu_count()} CPUs, Python {sys.version.split()[0]}"
    )
    show("persistent stdio session, handshake era", await stdio_persistent(options.calls), "raw send_request")
    show(
        "stateless Streamable HTTP, 2026-07-28", await http_stateless(options.calls), "raw fresh send_request"
    )


if __name__ == "__main__":
    anyio.run(main)
