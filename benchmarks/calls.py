"""Per-call latency of every way to call an MCP tool, side by side, on the same servers.

Run: ``python benchmarks/calls.py [--runs N] [--http-runs M]`` (needs ``npm ci --prefix tests``, and
``pip install -e ".[bench]"`` for the langchain-mcp-adapters case).

Cases (a case whose package or feature is missing is left out of the table):

- ``cubepi stateless``: a fresh session per call (a new process for stdio), the default; over HTTP the
  calls of one loaded list share its HTTP client; ``a client per call`` is the same without sharing;
- ``cubepi stateless + prespawn``: stdio with ``prespawn=True``; ``spaced``: the spare is ready when the
  call comes (calls spaced wider than the server's start-up); ``back to back``: the call comes right after
  another one took the spare;
- ``cubepi persistent``: tools loaded from ``server.connect()``;
- ``raw SDK, fresh session``: ``initialize`` + ``session.call_tool`` as SDK users write it; on a fresh
  session the SDK's ``call_tool`` also sends ``tools/list`` (to validate structured output), one round
  trip more than cubepi; ``same work``: ``initialize`` + one ``tools/call`` request, exactly what cubepi
  does; ``pre-initialized``: a fresh session initialized before the clock starts, so only its first
  ``tools/call`` is timed (the floor of a prespawned call); ``pre-initialized and warmed``: the same
  after one ``tools/list`` and one ``tools/call`` of a tool that does not exist, as a cubepi spare does;
  ``persistent``: one session for the run; ``protocol floor`` (Streamable HTTP): the raw SDK doing no
  more than a stateless call must, ``initialize``, the initialized notification and ``tools/call`` on
  one HTTP client kept for the run, with no GET stream and no DELETE, its transport's teardown timed;
- ``langchain-mcp-adapters``: its tools loaded from a connection config (a new session per call).

Cases run interleaved, in a shuffled order each round (seeded), so that load on the machine hits them
alike; the table shows medians and their ratios to the raw SDK's fresh and persistent sessions. Before
each HTTP call ``--pause`` seconds (default 0.02) pass untimed, so that what one case leaves running (the
SDK and the server tearing sessions down) does not slow the next case's call; ``--pause 0`` measures
them back to back. stdio cases wait for spares in their own ``before`` and ``after`` steps.
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
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import _cases
import anyio
from _cases import Case
from _servers import CATALOG, EVERYTHING, KITCHEN, PYTHON, http_server
from mcp import ClientSession, types
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from cubepi import AgentTool
from cubepi.mcp import HttpServer, StdioServer, load_mcp_tools, make_mcp_agent_tool

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


async def measure(cases: dict[str, Call | Case], runs: int, pause: float = 0.0) -> dict[str, list[float]]:
    """Timings of each case; a `Case`'s `before` and `after` run untimed around its call, and `pause`
    seconds pass (untimed) before each call, so that work a case leaves behind does not land on the next
    one's clock."""
    plan = {name: case if isinstance(case, Case) else Case(case) for name, case in cases.items()}
    timings: dict[str, list[float]] = {name: [] for name in plan}
    for case in plan.values():  # warm-up: imports, npm/node caches, models
        if case.before is not None:
            await case.before()
        await case.call()
        if case.after is not None:
            await case.after()
    rounds = random.Random(1234)
    for _ in range(runs):
        order = list(plan.items())
        rounds.shuffle(order)
        for name, case in order:
            if case.before is not None:
                await case.before()
            await anyio.sleep(pause)
            start = time.perf_counter()
            await case.call()
            timings[name].append(time.perf_counter() - start)
            if case.after is not None:
                await case.after()
    return timings


def ratio(value: float, base: float | None) -> str:
    return f"{value / base:.2f}x" if base else "-"


def table(label: str, timings: dict[str, list[float]]) -> list[str]:
    """Markdown rows: each case's median and its ratio to the raw SDK's fresh and persistent sessions."""
    medians = {name: statistics.median(values) for name, values in timings.items()}
    fresh, persistent = medians.get("raw SDK, fresh session"), medians.get("raw SDK, persistent session")
    return [
        f"| {label} | {name} | {len(timings[name])} | {median * 1000:.2f} | {ratio(median, fresh)} "
        f"| {ratio(median, persistent)} |"
        for name, median in medians.items()
    ]


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Servers (and langchain-mcp-adapters' stdio client, which passes them our stderr) print banners."""
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


async def stdio_cases(
    stack: contextlib.AsyncExitStack, command: str, args: list[str], devnull: Any
) -> dict[str, Call | Case]:
    server = StdioServer(command, args)
    # The same environment cubepi gives the server: ENV_PASSTHROUGH forwards NODE_EXTRA_CA_CERTS, for one,
    # and node reads those certificates at start-up (about 0.1 s where the variable is set).
    params = StdioServerParameters(command=command, args=args, env=server.environment())
    cases: dict[str, Call | Case] = {
        "cubepi stateless": cubepi_call(make_mcp_agent_tool(ECHO, server)),
        "cubepi stateless + prespawn, spaced": _cases.cubepi_prespawn(
            await stack.enter_async_context(await load_mcp_tools(server, prespawn=True)), spaced=True
        ),
        "cubepi stateless + prespawn, back to back": _cases.cubepi_prespawn(
            await stack.enter_async_context(await load_mcp_tools(server, prespawn=True)), spaced=False
        ),
        "raw SDK, fresh session": raw_call("stdio", params, devnull, same_work=False),
        "raw SDK, fresh session, same work": raw_call("stdio", params, devnull, same_work=True),
        "raw SDK, pre-initialized fresh session": _cases.raw_preinitialized(
            lambda: stdio_client(params, errlog=devnull)
        ),
        "raw SDK, pre-initialized and warmed fresh session": _cases.raw_preinitialized(
            lambda: stdio_client(params, errlog=devnull), warmed=True
        ),
        "raw SDK, persistent session": await _cases.raw_persistent(
            stack, stdio_client(params, errlog=devnull)
        ),
    }
    persistent = await _cases.cubepi_persistent(stack, server)
    if persistent is not None:
        cases["cubepi persistent"] = persistent
    langchain = await _cases.langchain({"transport": "stdio", "command": command, "args": args})
    if langchain is not None:
        cases["langchain-mcp-adapters"] = langchain
    return cases


async def http_cases(
    stack: contextlib.AsyncExitStack, url: str, kind: str, devnull: Any
) -> dict[str, Call | Case]:
    server = HttpServer(url, transport=kind)  # type: ignore[arg-type]
    tools = await stack.enter_async_context(await load_mcp_tools(server))
    cases: dict[str, Call | Case] = {
        "cubepi stateless": cubepi_call(next(t for t in tools if t.name == "echo")),
        "cubepi stateless, a client per call": cubepi_call(make_mcp_agent_tool(ECHO, server)),
        "raw SDK, fresh session": raw_call(kind, url, devnull, same_work=False),
        "raw SDK, fresh session, same work": raw_call(kind, url, devnull, same_work=True),
        "raw SDK, persistent session": await _cases.raw_persistent(stack, _http_streams(kind, url)),
    }
    if kind == "streamable-http":
        cases["raw SDK, protocol floor"] = await _cases.raw_protocol_floor(stack, url)
    persistent = await _cases.cubepi_persistent(stack, server)
    if persistent is not None:
        cases["cubepi persistent"] = persistent
    connection = {"transport": "streamable_http" if kind == "streamable-http" else "sse", "url": url}
    langchain = await _cases.langchain(connection)
    if langchain is not None:
        cases["langchain-mcp-adapters"] = langchain
    return cases


@contextlib.asynccontextmanager
async def _http_streams(kind: str, url: str) -> AsyncIterator[tuple[Any, Any]]:
    async with raw_streams(kind, url, None) as streams:
        yield streams


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15, help="stdio calls per case (default 15)")
    parser.add_argument("--http-runs", type=int, default=60, help="HTTP calls per case (default 60)")
    parser.add_argument("--load-runs", type=int, default=10, help="catalog loads per case (default 10)")
    parser.add_argument(
        "--pause",
        type=float,
        default=0.02,
        help="untimed seconds before each HTTP call (default 0.02; 0: back to back)",
    )
    parser.add_argument(
        "--only",
        choices=["stdio", "load", "http"],
        action="append",
        help="run only these groups of rows (repeatable; default: all)",
    )
    options = parser.parse_args()
    if not EVERYTHING.exists():
        sys.exit("install the test servers first: npm ci --prefix tests")

    devnull = open(os.devnull, "w")  # noqa: SIM115, ASYNC230 - opened once, lives for the whole run
    rows: list[str] = []

    stdio_servers = [
        ("stdio, server-everything (node)", str(EVERYTHING), ["stdio"]),
        ("stdio, kitchen.py (Python FastMCP)", PYTHON, [str(KITCHEN)]),
    ]
    groups = set(options.only or ["stdio", "load", "http"])
    for label, command, args in stdio_servers if "stdio" in groups else []:
        with quiet_stderr():
            async with contextlib.AsyncExitStack() as stack:
                timings = await measure(await stdio_cases(stack, command, args, devnull), options.runs)
        rows += table(label, timings)
        print("\n".join(table(label, timings)), flush=True)

    if options.load_runs and "load" in groups:
        label = "stdio, 100-tool catalog: loading"
        with quiet_stderr():
            loads = await measure(_cases.load_cases(PYTHON, [str(CATALOG)], devnull), options.load_runs)
        medians = {name: statistics.median(values) for name, values in loads.items()}
        base = medians["raw SDK, initialize + list_tools"]
        load_rows = [
            f"| {label} | {name} | {len(loads[name])} | {median * 1000:.2f} | {ratio(median, base)} | - |"
            for name, median in medians.items()
        ]
        rows += load_rows
        print("\n".join(load_rows), flush=True)

    http_servers = [
        ("Streamable HTTP, server-everything", "streamableHttp", "/mcp", "streamable-http"),
        ("SSE, server-everything", "sse", "/sse", "sse"),
    ]
    for label, mode, path, kind in http_servers if "http" in groups else []:
        with http_server([str(EVERYTHING), mode], path) as url:
            async with contextlib.AsyncExitStack() as stack:
                cases = await http_cases(stack, url, kind, devnull)
                timings = await measure(cases, options.http_runs, options.pause)
        rows += table(label, timings)
        print("\n".join(table(label, timings)), flush=True)

    print()
    print(f"Per-call latency, medians in ms; {platform.platform()}, Python {platform.python_version()},")
    print(f"{os.cpu_count()} CPUs ({_cpu_model()}); `python benchmarks/calls.py {' '.join(sys.argv[1:])}`")
    print()
    print("| server | case | runs | median ms | vs raw fresh | vs raw persistent |")
    print("|---|---|---:|---:|---:|---:|")
    for line in rows:
        print(line)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    anyio.run(main)
