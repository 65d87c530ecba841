"""Per-call latency: a cubepi stateless call vs the raw MCP SDK doing the same fresh session.

Run: ``python benchmarks/calls.py [--runs N] [--http-runs M]`` (needs ``npm ci --prefix tests``).

Every cubepi stateless call opens a transport (a new process for stdio), initializes, calls ``tools/call``
and closes. The raw SDK baselines do the same by hand, with a fresh ``ClientSession`` per call:

- ``raw SDK`` : ``initialize`` + ``session.call_tool`` as SDK users write it; on a fresh session the SDK's
  ``call_tool`` also sends ``tools/list`` (to validate structured output), one round trip more than cubepi;
- ``raw SDK, same work`` : ``initialize`` + one ``tools/call`` request, exactly what cubepi does.

Cases run interleaved, in a shuffled order each round (seeded), so that load on the machine hits them
alike; the table shows medians and the ratio of cubepi's median to each baseline's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
from _servers import EVERYTHING, KITCHEN, PYTHON, http_server
from mcp import ClientSession, types
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from cubepi import AgentTool
from cubepi.mcp import HttpServer, StdioServer, make_mcp_agent_tool

ECHO = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
}
ARGS = {"message": "hi"}

Call = Callable[[], Awaitable[Any]]


@contextlib.asynccontextmanager
async def raw_streams(kind: str, target: Any, devnull: Any) -> AsyncIterator[tuple[Any, Any]]:
    if kind == "stdio":
        async with stdio_client(target, errlog=devnull) as (read, write):
            yield read, write
    elif kind == "streamable-http":
        async with streamable_http_client(target) as (read, write, _):
            yield read, write
    else:
        async with sse_client(target) as (read, write):
            yield read, write


def raw_call(kind: str, target: Any, devnull: Any, *, same_work: bool) -> Call:
    async def call() -> Any:
        async with raw_streams(kind, target, devnull) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            if not same_work:
                return await session.call_tool("echo", ARGS)
            request = types.ClientRequest(
                types.CallToolRequest(params=types.CallToolRequestParams(name="echo", arguments=ARGS))
            )
            return await session.send_request(request, types.CallToolResult)

    return call


def cubepi_call(tool: AgentTool) -> Call:
    async def call() -> Any:
        result = await tool.execute(ARGS)
        assert not result.is_error, result.text
        return result

    return call


async def measure(cases: dict[str, Call], runs: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {name: [] for name in cases}
    for call in cases.values():  # warm-up: imports, npm/node caches, models
        await call()
    rounds = random.Random(1234)
    for _ in range(runs):
        order = list(cases.items())
        rounds.shuffle(order)
        for name, call in order:
            start = time.perf_counter()
            await call()
            timings[name].append(time.perf_counter() - start)
    return timings


def row(label: str, timings: dict[str, list[float]]) -> str:
    ours = statistics.median(timings["cubepi"])
    raw = statistics.median(timings["raw"])
    same = statistics.median(timings["same"])
    return (
        f"| {label:<34} | {len(timings['cubepi']):>4} | {ours * 1000:>9.1f} | {raw * 1000:>9.1f} "
        f"| {same * 1000:>9.1f} | {ours / raw:>6.3f}x | {ours / same:>6.3f}x |"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15, help="stdio calls per case (default 15)")
    parser.add_argument("--http-runs", type=int, default=60, help="HTTP calls per case (default 60)")
    options = parser.parse_args()
    if not EVERYTHING.exists():
        sys.exit("install the test servers first: npm ci --prefix tests")

    devnull = open(os.devnull, "w")  # noqa: SIM115, ASYNC230 - opened once, lives for the whole run
    rows: list[str] = []

    stdio_cases = [
        ("stdio, server-everything (node)", str(EVERYTHING), ["stdio"]),
        ("stdio, kitchen.py (Python FastMCP)", PYTHON, [str(KITCHEN)]),
    ]
    for label, command, args in stdio_cases:
        tool = make_mcp_agent_tool(ECHO, StdioServer(command, args))
        params = StdioServerParameters(command=command, args=args)
        timings = await measure(
            {
                "cubepi": cubepi_call(tool),
                "raw": raw_call("stdio", params, devnull, same_work=False),
                "same": raw_call("stdio", params, devnull, same_work=True),
            },
            options.runs,
        )
        rows.append(row(label, timings))
        print(rows[-1], flush=True)

    http_cases = [
        ("Streamable HTTP, server-everything", "streamableHttp", "/mcp", "streamable-http"),
        ("SSE, server-everything", "sse", "/sse", "sse"),
    ]
    for label, mode, path, kind in http_cases:
        with http_server([str(EVERYTHING), mode], path) as url:
            tool = make_mcp_agent_tool(ECHO, HttpServer(url, transport=kind))  # type: ignore[arg-type]
            timings = await measure(
                {
                    "cubepi": cubepi_call(tool),
                    "raw": raw_call(kind, url, devnull, same_work=False),
                    "same": raw_call(kind, url, devnull, same_work=True),
                },
                options.http_runs,
            )
        rows.append(row(label, timings))
        print(rows[-1], flush=True)

    print()
    print(f"cubepi stateless call vs raw MCP SDK fresh session; medians in ms; {platform.platform()},")
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs; `python benchmarks/calls.py`")
    print()
    print(
        f"| {'case':<34} | {'runs':>4} | {'cubepi':>9} | {'raw SDK':>9} | {'raw same':>9} "
        f"| {'vs raw':>7} | {'vs same':>7} |"
    )
    print(f"|{'-' * 36}|{'-' * 6}|{'-' * 11}|{'-' * 11}|{'-' * 11}|{'-' * 9}|{'-' * 9}|")
    for line in rows:
        print(line)


if __name__ == "__main__":
    anyio.run(main)
