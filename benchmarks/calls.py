"""Per-call latency of every way to call an MCP tool, side by side, on the same servers.

Run: ``python benchmarks/calls.py [--runs N] [--http-runs M] [--load-runs K]`` (needs ``npm ci --prefix
tests``, and ``pip install -e ".[bench]"`` for the fastmcp case).

Servers: ``tests/servers/kitchen.py``, an mcp 2.3 ``MCPServer`` that speaks both protocol eras, and the
TypeScript reference server ``mcp-server-everything``, handshake era only. kitchen.py is measured in both
eras: the 2026-07-28 revision (``server/discover`` once, at load; then every request carries its version:
a call is one request, over Streamable HTTP one POST) and the handshake era (cubepi ``protocol="legacy"``,
raw ``mode="legacy"``: ``initialize``, a session, over HTTP a DELETE at the end). All HTTP rows run against
one kitchen.py process and one server-everything process, interleaved.

Cases (a case whose package is missing is left out of the table):

- ``cubepi stateless``: a call of a loaded list's tool, the default: a session no earlier call used (over
  stdio a new process) that adopts the protocol found at load (2026-07-28: no request before the call;
  handshake era: ``initialize``); over HTTP the list's calls share one HTTP client. ``cubepi
  make_mcp_agent_tool (no list)`` (HTTP): the same from a tool without a list (its first call, untimed,
  finds the server; it has a client of its own);
- ``cubepi stateless + prespawn`` (stdio): ``prespawn=True``; ``spaced``: the spare is ready when the call
  comes (calls spaced wider than the server's start-up); ``back to back``: the call comes right after
  another one took the spare;
- ``cubepi persistent``: tools loaded from ``server.connect()``;
- ``raw SDK, fresh Client``: ``async with mcp.Client(...)`` and ``call_tool`` per call, as SDK users write
  it: 2026-07-28 pinned with the discover result stored at set-up (``mode="2026-07-28",
  prior_discover=...``), handshake era ``mode="legacy"``; over HTTP on one httpx2 client kept for the run
  (``create_mcp_http_client``). On a fresh session ``call_tool`` also sends ``tools/list`` (to validate
  structured output), one request more than cubepi (HTTP only: over stdio the process start dwarfs it).
  ``same work``: the same Client sending one ``tools/call`` (``session.send_request``), exactly the requests
  cubepi sends: the baseline of the ``vs raw fresh`` column and of the targets; over stdio the server gets
  the environment cubepi gives it. ``prespawned`` (stdio): a fresh Client opened, listed and warmed (a call
  of a tool that does not exist) before the clock starts, as a cubepi spare is: the floor of a prespawned
  call;
- ``raw SDK, persistent Client``: one ``mcp.Client`` for the run (``mode="auto"``: discover, else
  initialize; ``"legacy"`` for the handshake-era kitchen.py rows), after one untimed ``call_tool``;
- ``fastmcp.Client persistent`` (HTTP): one ``fastmcp.Client`` (4.x, on the same SDK) for the run;
- loading a 100-tool catalog (stdio): ``load_mcp_tools`` vs a raw Client's negotiation + ``list_tools``.

The ``minimal`` group runs the same cases against ``benchmarks/_minimal.py`` (one tool, ``add(a, b)``,
almost no work on the server), so that what the client spends shows: 2026-07-28 and handshake-era
Streamable HTTP, and persistent connections over stdio; ``--min-rounds`` rounds of ``--min-batch`` calls
back to back per case (medians of the rounds' per-call figures). Every row reports the client's CPU time
per call (``time.process_time()`` in this process; the servers run in their own) beside wall time.

Cases run interleaved, in a shuffled order each round (seeded), so that load on the machine hits them
alike; the table shows medians and their ratios to the raw SDK's fresh Client (same work) and persistent
Client, then each target of the issue next to its ratio. Before each HTTP call ``--pause`` seconds (default
0.02) pass untimed, so that what one case leaves running (sessions torn down) does not slow the next case's
call; ``--pause 0`` measures them back to back. stdio cases wait for spares in their own untimed steps.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import _cases
import anyio
from _cases import ADD, ECHO, FRESH, PERSISTENT, Call, Case, Tool
from _servers import CATALOG, EVERYTHING, KITCHEN, MINIMAL, PYTHON, http_server
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from cubepi.mcp import HttpServer, StdioServer, load_mcp_tools, make_mcp_agent_tool

MODERN = "2026-07-28"
ECHO_SPEC = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
}

HTTP_MODERN = "Streamable HTTP, 2026-07-28, kitchen.py"
HTTP_LEGACY = "Streamable HTTP, handshake, kitchen.py"
HTTP_EVERYTHING = "Streamable HTTP, handshake, server-everything"
STDIO_MODERN = "stdio, 2026-07-28, kitchen.py"
STDIO_LEGACY = "stdio, handshake, kitchen.py"
STDIO_EVERYTHING = "stdio, handshake, server-everything (node)"
MIN_HTTP_MODERN = "Streamable HTTP, 2026-07-28, minimal"
MIN_HTTP_LEGACY = "Streamable HTTP, handshake, minimal"
MIN_STDIO_MODERN = "stdio, 2026-07-28, minimal"
MIN_STDIO_LEGACY = "stdio, handshake, minimal"
LOAD = "stdio, 100-tool catalog: loading"
LOAD_BASE = "raw SDK, discover + list_tools"

STATELESS, CUBEPI_PERSISTENT = "cubepi stateless", "cubepi persistent"
# (row, case, baseline case, the issue's bound on their ratio); issue 32's targets
TARGETS: list[tuple[str, str, str, float]] = [
    (MIN_HTTP_MODERN, STATELESS, FRESH, 1.05),
    (HTTP_LEGACY, STATELESS, FRESH, 1.05),
    (STDIO_MODERN, STATELESS, FRESH, 1.05),
    (STDIO_LEGACY, STATELESS, FRESH, 1.05),
    *(
        (row, CUBEPI_PERSISTENT, PERSISTENT, 1.05)
        for row in (MIN_HTTP_MODERN, MIN_HTTP_LEGACY, MIN_STDIO_MODERN, MIN_STDIO_LEGACY)
    ),
]
# (row, case, baseline case, the bound on the difference of their client CPU per call, in ms)
CPU_TARGETS: list[tuple[str, str, str, float]] = [
    (MIN_HTTP_MODERN, STATELESS, FRESH, 0.06),
    (STDIO_MODERN, STATELESS, FRESH, 0.5),
]

Key = tuple[str, str]  # (row, case)
Timings = dict[Key, list[tuple[float, float]]]  # (wall, client CPU) seconds of each call


async def measure(cases: dict[Key, Call | Case], runs: int, pause: float = 0.0, batch: int = 1) -> Timings:
    """Wall time and client CPU time per call of each case; a `Case`'s `before` and `after` run untimed
    around its call, and `pause` seconds pass (untimed) before each call, so that work a case leaves behind
    does not land on the next one's clock. `batch` > 1: each of the `runs` rounds times that many calls
    back to back (per call: the batch's time divided by `batch`), as a program making many calls runs."""
    plan = {key: case if isinstance(case, Case) else Case(case) for key, case in cases.items()}
    timings: Timings = {key: [] for key in plan}
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
        for key, case in order:
            if case.before is not None:
                await case.before()
            await anyio.sleep(pause)
            cpu, start = time.process_time(), time.perf_counter()
            for _ in range(batch):
                await case.call()
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            timings[key].append((wall / batch, cpu / batch))
            if case.after is not None:
                await case.after()
    return timings


def medians(timings: Timings, *, cpu: bool = False) -> dict[Key, float]:
    """The median wall time (`cpu`: client CPU time) of each case."""
    return {key: statistics.median(value[cpu] for value in values) for key, values in timings.items()}


def ratio(value: float, base: float | None) -> str:
    return f"{value / base:.2f}x" if base else "-"


def table(timings: Timings, fresh: str = FRESH) -> list[str]:
    """Markdown rows: each case's median wall time and its ratio to the raw SDK's fresh and persistent
    Clients, then its median client CPU time and its difference to the raw fresh Client's."""
    middle, cpu = medians(timings), medians(timings, cpu=True)
    rows = []
    for (row, name), median in middle.items():
        base = cpu.get((row, fresh))
        extra = f"{(cpu[row, name] - base) * 1000:+.2f}" if base is not None else "-"
        rows.append(
            f"| {row} | {name} | {len(timings[row, name])} | {median * 1000:.2f} "
            f"| {ratio(median, middle.get((row, fresh)))} | {ratio(median, middle.get((row, PERSISTENT)))} "
            f"| {cpu[row, name] * 1000:.2f} | {extra} |"
        )
    return rows


def target_table(middle: dict[Key, float], cpu: dict[Key, float]) -> list[str]:
    """Markdown rows: each of the issue's targets that was measured, its ratio (CPU: difference) and whether
    it is met."""
    lines = []
    for row, case, base, bound in TARGETS:
        if (row, case) not in middle or (row, base) not in middle:
            continue
        value = middle[row, case] / middle[row, base]
        lines.append(
            f"| {row} | {case} vs {base} | {middle[row, case] * 1000:.2f} | {middle[row, base] * 1000:.2f} "
            f"| {value:.2f}x | ≤ {bound:.2f}x | {'met' if value <= bound else 'MISSED'} |"
        )
    for row, case, base, bound in CPU_TARGETS:
        if (row, case) not in cpu or (row, base) not in cpu:
            continue
        extra = (cpu[row, case] - cpu[row, base]) * 1000
        lines.append(
            f"| {row} | client CPU: {case} vs {base} | {cpu[row, case] * 1000:.2f} "
            f"| {cpu[row, base] * 1000:.2f} | {extra:+.2f} ms | ≤ +{bound:.2f} ms "
            f"| {'met' if extra <= bound else 'MISSED'} |"
        )
    return lines


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """stdio servers print banners on the stderr they inherit."""
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


async def discover_result(open_client: Callable[[], Client]) -> types.DiscoverResult:
    """The server's ``server/discover`` result, as a raw client would have stored it."""
    async with open_client() as client:
        result = client.session.discover_result
    assert result is not None, "the server did not answer server/discover"
    return result


async def stdio_cases(
    stack: contextlib.AsyncExitStack, row: str, command: str, args: list[str], protocol: str, devnull: Any
) -> dict[Key, Call | Case]:
    """The stdio cases of one server in one era. `protocol` is cubepi's setting: ``"auto"`` on kitchen.py
    finds 2026-07-28 (the raw fresh Client is pinned to it), on server-everything the handshake (the raw
    fresh Client: ``"legacy"``)."""
    server = StdioServer(command, args, protocol=protocol)
    # The same environment cubepi gives the server: ENV_PASSTHROUGH forwards NODE_EXTRA_CA_CERTS, for one,
    # and node reads those certificates at start-up (about 0.1 s where the variable is set).
    params = StdioServerParameters(command=command, args=args, env=server.environment())
    mode = "legacy" if protocol == "legacy" else "auto"
    fresh_mode, discover = "legacy", None
    if row == STDIO_MODERN:
        fresh_mode = MODERN
        discover = await discover_result(lambda: Client(stdio_client(params, errlog=devnull)))

    def open_client() -> Client:
        return Client(stdio_client(params, errlog=devnull), mode=fresh_mode, prior_discover=discover)

    persistent = Client(stdio_client(params, errlog=devnull), mode=mode)
    cases: dict[str, Call | Case] = {
        STATELESS: _cases.cubepi_call(await stack.enter_async_context(await load_mcp_tools(server))),
        "cubepi stateless + prespawn, spaced": _cases.cubepi_prespawn(
            await stack.enter_async_context(await load_mcp_tools(server, prespawn=True)), spaced=True
        ),
        "cubepi stateless + prespawn, back to back": _cases.cubepi_prespawn(
            await stack.enter_async_context(await load_mcp_tools(server, prespawn=True)), spaced=False
        ),
        CUBEPI_PERSISTENT: await _cases.cubepi_persistent(stack, server),
        FRESH: _cases.raw_fresh(open_client, same_work=True),
        "raw SDK, prespawned fresh Client": _cases.raw_prespawned(open_client),
        PERSISTENT: await _cases.raw_persistent(stack, persistent),
    }
    return {(row, name): case for name, case in cases.items()}


async def http_cases(
    stack: contextlib.AsyncExitStack,
    row: str,
    url: str,
    protocol: str,
    shared: Any,
    *,
    modern: bool,
    tool: Tool = ECHO,
    extras: bool = True,
) -> dict[Key, Call | Case]:
    """The Streamable HTTP cases of one server in one era (see `stdio_cases`); `shared` is the httpx2
    client the raw fresh Clients share; `modern`: the server speaks 2026-07-28 (the raw fresh Client is
    pinned to it); `extras`: also a cubepi tool without a list, and fastmcp."""
    server = HttpServer(url, transport="streamable-http", protocol=protocol)
    mode = "legacy" if protocol == "legacy" else "auto"
    fresh_mode, discover = "legacy", None
    if modern:
        fresh_mode = MODERN
        discover = await discover_result(lambda: Client(streamable_http_client(url, http_client=shared)))

    def open_client() -> Client:
        transport = streamable_http_client(url, http_client=shared)
        return Client(transport, mode=fresh_mode, prior_discover=discover)

    tools = await stack.enter_async_context(await load_mcp_tools(server))
    cases: dict[str, Call | Case] = {
        STATELESS: _cases.cubepi_call(tools, tool),
        CUBEPI_PERSISTENT: await _cases.cubepi_persistent(stack, server, tool),
        "raw SDK, fresh Client": _cases.raw_fresh(open_client, same_work=False, tool=tool),
        FRESH: _cases.raw_fresh(open_client, same_work=True, tool=tool),
        PERSISTENT: await _cases.raw_persistent(stack, Client(url, mode=mode), tool),
    }
    if extras:
        cases["cubepi make_mcp_agent_tool (no list)"] = _cases.cubepi_call(
            [make_mcp_agent_tool(ECHO_SPEC, server)]
        )
        fastmcp = await _cases.fastmcp_persistent(stack, url, mode)
        if fastmcp is not None:
            cases["fastmcp.Client persistent"] = fastmcp
    return {(row, name): case for name, case in cases.items()}


async def stdio_persistent_cases(
    stack: contextlib.AsyncExitStack, row: str, command: str, args: list[str], protocol: str, devnull: Any
) -> dict[Key, Call | Case]:
    """A cubepi connection's call of `ADD` vs a raw persistent Client's, over stdio."""
    server = StdioServer(command, args, protocol=protocol)
    params = StdioServerParameters(command=command, args=args, env=server.environment())
    mode = "legacy" if protocol == "legacy" else "auto"
    persistent = Client(stdio_client(params, errlog=devnull), mode=mode)
    cases: dict[str, Call | Case] = {
        CUBEPI_PERSISTENT: await _cases.cubepi_persistent(stack, server, ADD),
        PERSISTENT: await _cases.raw_persistent(stack, persistent, ADD),
    }
    return {(row, name): case for name, case in cases.items()}


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15, help="stdio calls per case (default 15)")
    parser.add_argument("--http-runs", type=int, default=60, help="HTTP calls per case (default 60)")
    parser.add_argument("--load-runs", type=int, default=10, help="catalog loads per case (default 10)")
    parser.add_argument(
        "--min-rounds", type=int, default=6, help="rounds of the minimal server's cases (default 6)"
    )
    parser.add_argument(
        "--min-batch", type=int, default=100, help="calls per case per round, minimal server (default 100)"
    )
    parser.add_argument(
        "--pause",
        type=float,
        default=0.02,
        help="untimed seconds before each HTTP call (default 0.02; 0: back to back)",
    )
    parser.add_argument(
        "--only",
        choices=["stdio", "load", "http", "minimal"],
        action="append",
        help="run only these groups of rows (repeatable; default: all)",
    )
    options = parser.parse_args()
    if not EVERYTHING.exists():
        sys.exit("install the test servers first: npm ci --prefix tests")

    devnull = open(os.devnull, "w")  # noqa: SIM115, ASYNC230 - opened once, lives for the whole run
    groups = set(options.only or ["stdio", "load", "http", "minimal"])
    rows: list[str] = []
    middle: dict[Key, float] = {}
    cpu: dict[Key, float] = {}

    def report(timings: Timings, fresh: str = FRESH) -> None:
        lines = table(timings, fresh)
        rows.extend(lines)
        middle.update(medians(timings))
        cpu.update(medians(timings, cpu=True))
        print("\n".join(lines), flush=True)

    if "minimal" in groups:
        with quiet_stderr(), http_server([PYTHON, str(MINIMAL), "streamable-http"], "/mcp") as minimal:
            async with contextlib.AsyncExitStack() as stack:
                shared = await stack.enter_async_context(create_mcp_http_client())
                cases: dict[Key, Call | Case] = {
                    **await http_cases(
                        stack, MIN_HTTP_MODERN, minimal, "auto", shared, modern=True, tool=ADD, extras=False
                    ),
                    **await http_cases(
                        stack,
                        MIN_HTTP_LEGACY,
                        minimal,
                        "legacy",
                        shared,
                        modern=False,
                        tool=ADD,
                        extras=False,
                    ),
                }
                for row, protocol in ((MIN_STDIO_MODERN, "auto"), (MIN_STDIO_LEGACY, "legacy")):
                    cases.update(
                        await stdio_persistent_cases(stack, row, PYTHON, [str(MINIMAL)], protocol, devnull)
                    )
                timings = await measure(cases, options.min_rounds, options.pause, options.min_batch)
        report(timings)

    if "stdio" in groups:
        stdio_servers = [
            (STDIO_MODERN, PYTHON, [str(KITCHEN)], "auto"),
            (STDIO_LEGACY, PYTHON, [str(KITCHEN)], "legacy"),
            (STDIO_EVERYTHING, str(EVERYTHING), ["stdio"], "auto"),
        ]
        with quiet_stderr():
            async with contextlib.AsyncExitStack() as stack:
                cases = {}
                for row, command, args, protocol in stdio_servers:
                    cases.update(await stdio_cases(stack, row, command, args, protocol, devnull))
                timings = await measure(cases, options.runs)
        report(timings)

    if options.load_runs and "load" in groups:
        with quiet_stderr():
            loading = _cases.load_cases(PYTHON, [str(CATALOG)], devnull)
            loads = await measure({(LOAD, name): call for name, call in loading.items()}, options.load_runs)
        report(loads, LOAD_BASE)

    if "http" in groups:
        with (
            http_server([PYTHON, str(KITCHEN), "streamable-http"], "/mcp") as kitchen,
            http_server([str(EVERYTHING), "streamableHttp"], "/mcp") as everything,
        ):
            async with contextlib.AsyncExitStack() as stack:
                shared = await stack.enter_async_context(create_mcp_http_client())
                cases = {
                    **await http_cases(stack, HTTP_MODERN, kitchen, "auto", shared, modern=True),
                    **await http_cases(stack, HTTP_LEGACY, kitchen, "legacy", shared, modern=False),
                    **await http_cases(stack, HTTP_EVERYTHING, everything, "auto", shared, modern=False),
                }
                timings = await measure(cases, options.http_runs, options.pause)
        report(timings)

    print()
    print(f"Per-call latency, medians in ms; {platform.platform()}, Python {platform.python_version()},")
    print(f"{os.cpu_count()} CPUs ({_cpu_model()}); {_versions()};")
    print(f"`python benchmarks/calls.py {' '.join(sys.argv[1:])}`")
    print()
    print(
        "| server | case | runs | median ms | vs raw fresh | vs raw persistent "
        "| client CPU ms | CPU vs raw fresh |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for line in rows:
        print(line)
    targets = target_table(middle, cpu)
    if targets:
        print()
        print("| server | target | cubepi ms | baseline ms | ratio | target | |")
        print("|---|---|---:|---:|---:|---:|---|")
        for line in targets:
            print(line)


def _versions() -> str:
    found = []
    for name in ("mcp", "fastmcp", "httpx2"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found.append(f"{name} {importlib.metadata.version(name)}")
    return ", ".join(found)


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
