"""stdio at the speed of its server: cubepi's load and calls against the raw SDK's time to the answer.

Run: ``python benchmarks/stdio.py [--runs N]`` (needs ``npm ci --prefix tests``).

Servers: the TypeScript reference ``mcp-server-everything`` (node, handshake era; tool ``get-sum``),
cubepi's demo server (python, found at 2026-07-28 by ``protocol="auto"``; tool ``add``) and
``tests/servers/slow_exit.py`` (python, 2026-07-28; it takes 0.6 s to exit once its stdin closes). Every
case gets a new server process per load or call, but the prespawned call and the raw persistent Client; the
server gets the environment cubepi gives it, in both columns.

Cases, each timed to the moment the answer is in the caller's hands (wall time and this process's CPU time,
`time.process_time()`):

- ``cubepi load``: ``load_mcp_tools`` until it returns the list (untimed: ``aclose()``, which waits for the
  listing's server to exit); against ``raw: open + list_tools``: ``mcp.Client(mode="auto")`` (discover, else
  initialize, as cubepi does) until ``list_tools`` has returned, inside the ``async with``;
- ``cubepi stateless call``: a loaded list's call (untimed afterwards: until its server has exited); against
  ``raw: fresh Client, same work``: a fresh Client until its one ``tools/call`` has returned (handshake era:
  after ``initialize``; 2026-07-28: pinned, with the discover result stored at set-up);
- ``cubepi prespawned call`` (``prespawn=True``, the spare ready) against ``raw: persistent Client,
  call_tool`` (one Client for the run; ``call_tool`` as SDK users write it, which checks structured output
  against the listed tools). Beside it: the same Client sending exactly one ``tools/call``, and ``raw:
  prespawned fresh Client, same work`` (opened, listed and warmed untimed, as a spare is): the floor of a
  prespawned call, since a new process's first call runs colder code than a long-lived one's. Both
  spares wait `SPARE_IDLE` seconds (untimed) before their call;
- ``3 calls back to back``: three calls, each a fresh server, as a program makes them: cubepi's with
  nothing untimed in between, the raw SDK's with each ``async with`` closed before the next call (its time
  until closed is what a raw caller waits for).

Every case also counts, deterministically, how often the answer came back while the server was still
shutting down (cubepi: a session of the list still closing when the load or call returned; raw: never,
the server is still running when the answer arrives and the ``async with`` waits for its exit). The raw
rows also show their time until closed: what a caller of ``async with`` waits for.

Cases run interleaved, shuffled each round (seeded), each after the last one's servers have all exited, so
that one case's shutdown does not land on the next one's clock. Medians over the rounds.
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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import _cases
import anyio
from _cases import Tool
from _servers import EVERYTHING, PYTHON, TESTS
from calls import quiet_stderr
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from cubepi.mcp import StdioServer, load_mcp_tools

MODERN = "2026-07-28"
SLOW_EXIT = TESTS / "servers" / "slow_exit.py"
EVERYTHING_ROW = "server-everything (node, handshake)"
DEMO_ROW = "demo server (python, 2026-07-28)"
SLOW_ROW = "slow_exit.py (python, 2026-07-28, 0.6 s to exit)"

LOAD, RAW_LOAD = "cubepi load", "raw: open + list_tools"
CALL, RAW_CALL = "cubepi stateless call", "raw: fresh Client, same work"
PRESPAWNED, RAW_PERSISTENT = "cubepi prespawned call", "raw: persistent Client, call_tool"
RAW_PERSISTENT_ONE = "raw: persistent Client, one tools/call"
RAW_PRESPAWNED = "raw: prespawned fresh Client, same work"
THREE, RAW_THREE = "cubepi: 3 calls back to back", "raw: 3 calls back to back, each closed"
# How long a spare (cubepi's, or the raw floor's) waits, untimed, before its call: a process's first call
# after it has been idle a while runs slower than right after its warm-up (about 1.3 ms then 2.8 ms on
# server-everything at 0 and 0.5 s), so both wait alike, as a spare between a program's calls does.
SPARE_IDLE = 0.5
# (case, baseline, the bound on their ratio)
TARGETS = [
    (LOAD, RAW_LOAD, 1.10),
    (CALL, RAW_CALL, 1.10),
    (PRESPAWNED, RAW_PERSISTENT, 1.10),
    (PRESPAWNED, RAW_PRESPAWNED, 1.10),
]


@dataclass
class Sample:
    """One timed run: to the answer (wall, CPU), whether the answer came while a server was still
    shutting down, and (raw) the time until the ``async with`` had closed."""

    wall: float
    cpu: float
    early: bool
    closed: float | None = None


Run = Callable[[], Awaitable[Sample]]


class Clock:
    def __init__(self) -> None:
        self.cpu, self.start = time.process_time(), time.perf_counter()

    def sample(self, early: bool = False) -> Sample:
        return Sample(time.perf_counter() - self.start, time.process_time() - self.cpu, early)


def closing(tools: Any) -> bool:
    """Whether a session of the list is still closing after its call returned (its server exiting)."""
    keepers = tools._shared._keepers.values()
    return any(lease.detached for keeper in keepers for lease in keeper.leases)


async def cubepi_load(server: StdioServer) -> Sample:
    clock = Clock()
    tools = await load_mcp_tools(server)
    sample = clock.sample(closing(tools))
    await tools.aclose()
    return sample


def raw_load(params: StdioServerParameters, devnull: Any) -> Run:
    async def run() -> Sample:
        clock = Clock()
        async with Client(stdio_client(params, errlog=devnull), mode="auto") as client:
            await client.session.list_tools()
            sample = clock.sample()
        sample.closed = time.perf_counter() - clock.start
        return sample

    return run


def cubepi_call(tools: Any, tool: Tool) -> Run:
    call = _cases.cubepi_call(tools, tool)

    async def run() -> Sample:
        clock = Clock()
        await call()
        sample = clock.sample(closing(tools))
        await tools._shared.settled()
        return sample

    return run


def raw_fresh(open_client: Callable[[], Client], tool: Tool) -> Run:
    async def run() -> Sample:
        clock = Clock()
        async with open_client() as client:
            await _cases.send_call(client, tool)
            sample = clock.sample()
        sample.closed = time.perf_counter() - clock.start
        return sample

    return run


def cubepi_prespawned(tools: Any, tool: Tool) -> Run:
    call = _cases.cubepi_call(tools, tool)

    async def run() -> Sample:
        await tools._shared.wait_spare()
        await anyio.sleep(SPARE_IDLE)
        clock = Clock()
        await call()
        sample = clock.sample(closing(tools))
        await tools._shared.settled()
        await tools._shared.wait_spare()  # the next spare starts untimed
        return sample

    return run


def raw_persistent(client: Client, tool: Tool, *, same_work: bool) -> Run:
    """A call on the run's one Client: ``call_tool`` as SDK users write it, or (`same_work`) exactly one
    ``tools/call`` request."""

    async def run() -> Sample:
        clock = Clock()
        if same_work:
            await _cases.send_call(client, tool)
        else:
            await client.call_tool(tool.name, tool.args)
        return clock.sample()

    return run


def raw_prespawned(open_client: Callable[[], Client], tool: Tool) -> Run:
    """A fresh Client opened, listed and warmed untimed (as a cubepi spare is), then its call: the floor of
    a prespawned call, a new process's first ``tools/call``."""
    case = _cases.raw_prespawned(open_client, tool)

    async def run() -> Sample:
        assert case.before is not None and case.after is not None
        await case.before()
        await anyio.sleep(SPARE_IDLE)
        clock = Clock()
        await case.call()
        sample = clock.sample()
        await case.after()
        return sample

    return run


def cubepi_three(tools: Any, tool: Tool) -> Run:
    call = _cases.cubepi_call(tools, tool)

    async def run() -> Sample:
        clock = Clock()
        for _ in range(3):
            await call()
        sample = clock.sample(closing(tools))
        await tools._shared.settled()
        return sample

    return run


def raw_three(open_client: Callable[[], Client], tool: Tool) -> Run:
    async def run() -> Sample:
        clock = Clock()
        for _ in range(3):
            async with open_client() as client:
                await _cases.send_call(client, tool)
        sample = clock.sample()
        sample.closed = sample.wall
        return sample

    return run


async def row_cases(
    stack: contextlib.AsyncExitStack, row: str, command: str, args: list[str], tool: Tool, devnull: Any
) -> dict[tuple[str, str], Run]:
    """The cases of one server; a row with a slow exit times three calls back to back instead of a
    prespawned call."""
    server = StdioServer(command, args)
    params = StdioServerParameters(command=command, args=args, env=server.environment())
    tools = await stack.enter_async_context(await load_mcp_tools(server))
    discover = None
    if row != EVERYTHING_ROW:
        async with Client(stdio_client(params, errlog=devnull), mode="auto") as probe:
            discover = probe.session.discover_result
        assert discover is not None, f"{row}: the server did not answer server/discover"

    def open_client() -> Client:
        mode = "legacy" if discover is None else MODERN
        return Client(stdio_client(params, errlog=devnull), mode=mode, prior_discover=discover)

    cases: dict[str, Run] = {
        LOAD: lambda: cubepi_load(server),
        RAW_LOAD: raw_load(params, devnull),
        CALL: cubepi_call(tools, tool),
        RAW_CALL: raw_fresh(open_client, tool),
    }
    if row == SLOW_ROW:
        cases[THREE] = cubepi_three(tools, tool)
        cases[RAW_THREE] = raw_three(open_client, tool)
    else:
        spared = await stack.enter_async_context(await load_mcp_tools(server, prespawn=True))
        persistent = await stack.enter_async_context(Client(stdio_client(params, errlog=devnull)))
        await _cases.send_call(persistent, tool)
        await persistent.call_tool(tool.name, tool.args)
        cases[PRESPAWNED] = cubepi_prespawned(spared, tool)
        cases[RAW_PERSISTENT] = raw_persistent(persistent, tool, same_work=False)
        cases[RAW_PERSISTENT_ONE] = raw_persistent(persistent, tool, same_work=True)
        cases[RAW_PRESPAWNED] = raw_prespawned(open_client, tool)
    return {(row, name): run for name, run in cases.items()}


async def measure(cases: dict[tuple[str, str], Run], runs: int) -> dict[tuple[str, str], list[Sample]]:
    samples: dict[tuple[str, str], list[Sample]] = {key: [] for key in cases}
    for run in cases.values():  # warm-up: imports, caches
        await run()
    order = list(cases.items())
    shuffle = random.Random(1234)
    for _ in range(runs):
        shuffle.shuffle(order)
        for key, run in order:
            samples[key].append(await run())
    return samples


def median(values: list[float]) -> float:
    return statistics.median(values)


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15, help="rounds (default 15)")
    options = parser.parse_args()
    if not EVERYTHING.exists():
        sys.exit("install the test servers first: npm ci --prefix tests")
    devnull = open(os.devnull, "w")  # noqa: SIM115, ASYNC230 - opened once, lives for the whole run
    os.environ["SLOW_EXIT_DELAY"] = "0.6"
    rows = [
        (EVERYTHING_ROW, str(EVERYTHING), ["stdio"], Tool("get-sum", {"a": 1, "b": 2})),
        (DEMO_ROW, PYTHON, ["-m", "cubepi.mcp.demo_server"], Tool("add", {"a": 1, "b": 2})),
        (SLOW_ROW, PYTHON, [str(SLOW_EXIT)], Tool("add", {"a": 1, "b": 2})),
    ]
    with quiet_stderr():
        async with contextlib.AsyncExitStack() as stack:
            cases: dict[tuple[str, str], Run] = {}
            for row, command, args, tool in rows:
                cases.update(await row_cases(stack, row, command, args, tool, devnull))
            samples = await measure(cases, options.runs)

    wall = {key: median([s.wall for s in found]) for key, found in samples.items()}
    print()
    print(f"Time to the answer, medians in ms; {platform.platform()}, Python {platform.python_version()},")
    print(f"{os.cpu_count()} CPUs; mcp {importlib.metadata.version('mcp')};")
    print(f"`python benchmarks/stdio.py {' '.join(sys.argv[1:])}`")
    print()
    print(
        "| server | case | runs | to the answer ms | until closed ms | client CPU ms "
        "| answered while a server exits |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for (row, name), found in samples.items():
        closed = [s.closed for s in found if s.closed is not None]
        until = f"{median(closed) * 1000:.1f}" if closed else "-"
        print(
            f"| {row} | {name} | {len(found)} | {wall[row, name] * 1000:.1f} | {until} "
            f"| {median([s.cpu for s in found]) * 1000:.2f} | {sum(s.early for s in found)}/{len(found)} |"
        )
    print()
    print("| server | target | cubepi ms | raw ms | ratio | target | |")
    print("|---|---|---:|---:|---:|---:|---|")
    for row, *_ in rows:
        for case, base, bound in TARGETS:
            if (row, case) not in wall:
                continue
            value = wall[row, case] / wall[row, base]
            print(
                f"| {row} | {case} vs {base} | {wall[row, case] * 1000:.1f} | {wall[row, base] * 1000:.1f} "
                f"| {value:.2f}x | ≤ {bound:.2f}x | {'met' if value <= bound else 'MISSED'} |"
            )
        if (row, THREE) in wall:
            value = wall[row, THREE] / wall[row, RAW_THREE]
            print(
                f"| {row} | {THREE} vs {RAW_THREE} | {wall[row, THREE] * 1000:.1f} "
                f"| {wall[row, RAW_THREE] * 1000:.1f} | {value:.2f}x | - | |"
            )


if __name__ == "__main__":
    anyio.run(main)
