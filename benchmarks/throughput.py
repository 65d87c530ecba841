"""Throughput of stateless calls: 1,000 calls of ``add(a, b)`` at concurrency 50 against a minimal
2026-07-28 Streamable HTTP server (`_add_server.py`), from one process and from a 2-worker Dask cluster,
next to the raw SDK doing the same.

Run: ``python benchmarks/throughput.py [--calls 1000] [--concurrency 50] [--rounds 3] [--gc-freeze]``.

Cases (each round runs them all, in a shuffled order; the table shows each case's median calls/s):

- ``cubepi, one process``: a list loaded with ``load_mcp_tools_http(url, max_concurrency=None)``; the
  calls run as tasks, 50 at a time: each call is one POST on the list's shared HTTP client;
- ``raw SDK, fresh pinned Client``: per call ``async with mcp.Client(streamable_http_client(url,
  http_client=shared), mode="2026-07-28", prior_discover=...)`` and one ``tools/call`` request, on one
  httpx2 client shared by all (the baseline of the target);
- ``raw SDK, persistent Client``: one ``mcp.Client`` for the run, 50 requests in flight on it;
- ``cubepi, Dask 2 workers``: the pickled tool sent to a ``LocalCluster(n_workers=2, processes=True)``, one
  task per worker running its share of the calls, 25 at a time each (cluster start-up not counted);
  ``one task per call`` (``--dask-map``): ``client.map`` of single calls, as a first try would do it.

At the end the process must hold no more TCP connections than at the start (every list closed).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import psutil
from _servers import PYTHON, http_server
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from cubepi import AgentTool
from cubepi.mcp import load_mcp_tools_http

MODERN = "2026-07-28"
ADD_SERVER = Path(__file__).resolve().parent / "_add_server.py"
CUBEPI = "cubepi, one process"
FRESH = "raw SDK, fresh pinned Client"
PERSISTENT = "raw SDK, persistent Client"
DASK = "cubepi, Dask 2 workers"
DASK_MAP = "cubepi, Dask 2 workers, one task per call"
TARGET = 0.95  # cubepi one process / raw fresh pinned Clients (issue 32)


def connections() -> int:
    """This process's open TCP connections (not listening, not closing)."""
    me = psutil.Process()
    return sum(
        1 for c in me.net_connections(kind="tcp") if c.raddr and c.status not in ("TIME_WAIT", "CLOSE_WAIT")
    )


async def run_calls(call: Callable[[int], Awaitable[Any]], calls: int, concurrency: int) -> None:
    """`call(n)` for n in range(calls), `concurrency` at a time."""
    limiter = anyio.CapacityLimiter(concurrency)

    async def one(n: int) -> None:
        async with limiter:
            await call(n)

    async with anyio.create_task_group() as group:
        for n in range(calls):
            group.start_soon(one, n)


def call_batch(tool: AgentTool, start: int, count: int, concurrency: int) -> int:
    """In a worker: `count` calls of `tool`, `concurrency` at a time, in one event loop; checks each."""

    async def call(n: int) -> None:
        result = await tool.execute({"a": start + n, "b": 1})
        assert result.text == str(start + n + 1), result.text

    anyio.run(run_calls, call, count, concurrency)
    return count


def call_one(tool: AgentTool, n: int) -> str:
    return tool.execute_sync({"a": n, "b": 1}).text


async def timed(run: Callable[[int], Awaitable[None]], calls: int) -> float:
    started = time.perf_counter()
    await run(calls)
    return calls / (time.perf_counter() - started)


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-dask", action="store_true", help="leave the Dask cases out")
    parser.add_argument("--dask-map", action="store_true", help="add the one-task-per-call Dask case (slow)")
    parser.add_argument(
        "--gc-freeze", action="store_true", help="gc.freeze() once loaded (full collections skip that heap)"
    )
    options = parser.parse_args()
    calls, concurrency = options.calls, options.concurrency
    before = connections()
    rates: dict[str, list[float]] = {}

    with http_server([PYTHON, str(ADD_SERVER)], "/mcp") as url:
        cluster = client = None
        if not options.no_dask:
            from distributed import Client as DaskClient
            from distributed import LocalCluster

            cluster = LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
            )
            client = DaskClient(cluster)
        try:
            shared = create_mcp_http_client()
            async with shared, await load_mcp_tools_http(url, max_concurrency=None) as tools:
                add = tools[0]
                async with Client(streamable_http_client(url, http_client=shared)) as probe:
                    discover = probe.session.discover_result
                assert discover is not None and MODERN in discover.supported_versions, (
                    "not a 2026-07-28 server"
                )
                request = lambda n: types.CallToolRequest(  # noqa: E731
                    params=types.CallToolRequestParams(name="add", arguments={"a": n, "b": 1})
                )

                async def cubepi_call(n: int) -> None:
                    assert (await add.execute({"a": n, "b": 1})).text == str(n + 1)

                async def fresh_call(n: int) -> None:
                    transport = streamable_http_client(url, http_client=shared)
                    async with Client(transport, mode=MODERN, prior_discover=discover) as fresh:
                        result = await fresh.session.send_request(request(n), types.CallToolResult)
                    assert result.content[0].text == str(n + 1)  # type: ignore[union-attr]

                async with Client(url, mode="auto") as persistent:

                    async def persistent_call(n: int) -> None:
                        result = await persistent.session.send_request(request(n), types.CallToolResult)
                        assert result.content[0].text == str(n + 1)  # type: ignore[union-attr]

                    cases: dict[str, Callable[[int], Awaitable[None]]] = {
                        CUBEPI: lambda count: run_calls(cubepi_call, count, concurrency),
                        FRESH: lambda count: run_calls(fresh_call, count, concurrency),
                        PERSISTENT: lambda count: run_calls(persistent_call, count, concurrency),
                    }
                    if client is not None:
                        remote = client.scatter(add, broadcast=True)

                        async def dask_batches(count: int) -> None:
                            half = count // 2
                            futures = [
                                client.submit(
                                    call_batch, remote, i * half, half, concurrency // 2, pure=False
                                )
                                for i in range(2)
                            ]
                            done = await anyio.to_thread.run_sync(client.gather, futures)
                            assert sum(done) == 2 * half

                        async def dask_map(count: int) -> None:
                            futures = client.map(call_one, [remote] * count, range(count), pure=False)
                            done = await anyio.to_thread.run_sync(client.gather, futures)
                            assert done == [str(n + 1) for n in range(count)]

                        cases[DASK] = dask_batches
                        if options.dask_map:
                            cases[DASK_MAP] = dask_map
                    for run in cases.values():  # an untimed warm-up each
                        await run(min(calls, 100))
                    if options.gc_freeze:
                        gc.freeze()
                    for _ in range(options.rounds):
                        order = list(cases)
                        random.shuffle(order)
                        for name in order:
                            rates.setdefault(name, []).append(await timed(cases[name], calls))
        finally:
            if client is not None:
                client.close()
            if cluster is not None:
                cluster.close()
    await anyio.sleep(0.5)
    after = connections()

    median = {name: statistics.median(found) for name, found in rates.items()}
    base = median[FRESH]
    print(
        f"{calls} calls of add(a, b), concurrency {concurrency}, {options.rounds} rounds (median); "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}"
    )
    if options.gc_freeze:
        print("gc.freeze() after loading")
    print(f"{'case':<44} {'calls/s':>9} {'vs raw fresh':>13} {'vs persistent':>14}")
    for name, rate in median.items():
        print(f"{name:<44} {rate:>9.0f} {rate / base:>12.2f}x {rate / median[PERSISTENT]:>13.2f}x")
    ratio = median[CUBEPI] / base
    verdict = "met" if ratio >= TARGET else "MISSED"
    print(f"target: cubepi one process >= {TARGET}x raw fresh pinned Clients: {ratio:.2f}x ({verdict})")
    print(
        f"TCP connections of this process: {before} at start, {after} at end "
        f"({'ok' if after <= before else 'LEAK'})"
    )


if __name__ == "__main__":
    anyio.run(main)
