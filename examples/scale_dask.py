"""A Dask cluster calling an MCP server a thousand times, next to the same calls from one process.

Run: ``python examples/scale_dask.py [--calls 1000] [--url URL]`` (``pip install "cubepi[mcp]"
"dask[distributed]"``). Without ``--url`` it starts cubepi's demo server over Streamable HTTP on a free port
of 127.0.0.1 (2026-07-28: each call is one request) and stops it at the end.

The tools are loaded once, here; Dask pickles them to its workers, which call the server directly (no
listing there). Each worker runs its share of the calls in one event loop, many at a time: a task per call
would pay for an event loop and an HTTP client per call.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import anyio
from distributed import Client, LocalCluster

from cubepi import AgentTool
from cubepi.mcp import load_mcp_tools_http

SERVE = (
    "import os; from cubepi.mcp.demo_server import build_server; "
    "build_server().run('streamable-http', host='127.0.0.1', port=int(os.environ['PORT']))"
)


async def call_many(tool: AgentTool, first: int, count: int, concurrency: int) -> int:
    """`count` calls of ``add``, `concurrency` at a time, each result checked."""
    limiter = anyio.CapacityLimiter(concurrency)

    async def one(n: int) -> None:
        async with limiter:
            result = await tool.execute({"a": n, "b": 1})
            assert result.text == str(n + 1), result.text

    async with anyio.create_task_group() as group:
        for n in range(first, first + count):
            group.start_soon(one, n)
    return count


def worker_batch(tool: AgentTool, first: int, count: int, concurrency: int) -> int:
    """What a Dask task runs in its worker: a batch of calls in one event loop."""
    return anyio.run(call_many, tool, first, count, concurrency)


@contextlib.contextmanager
def demo_server() -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PORT": str(port)}
    process = subprocess.Popen([sys.executable, "-c", SERVE], env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the demo server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50, help="calls in flight (split over workers)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--url", help="an MCP server with an add(a, b) tool (default: start the demo server)")
    options = parser.parse_args()
    calls, workers = options.calls, options.workers

    with contextlib.ExitStack() as stack:
        url = options.url or stack.enter_context(demo_server())
        # add is safe to repeat: a call whose connection broke (a loaded server) is sent again, twice at most.
        tools = anyio.run(
            lambda: load_mcp_tools_http(url, include=["add"], max_concurrency=None, retries={"add": 2})
        )
        add = tools[0]

        started = time.perf_counter()
        worker_batch(add, 0, calls, options.concurrency)
        alone = calls / (time.perf_counter() - started)

        cluster = stack.enter_context(
            LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        )
        client = stack.enter_context(Client(cluster))
        shipped = client.scatter(add, broadcast=True)  # pickled once per worker
        share = calls // workers
        started = time.perf_counter()
        futures = [
            client.submit(worker_batch, shipped, i * share, share, options.concurrency // workers, pure=False)
            for i in range(workers)
        ]
        assert sum(client.gather(futures)) == share * workers
        spread = share * workers / (time.perf_counter() - started)

    print(f"{calls} calls of add(a, b) on {url}")
    print(f"one process:           {alone:8.0f} calls/s")
    print(f"Dask, {workers} worker processes: {spread:8.0f} calls/s ({spread / alone:.2f}x)")


if __name__ == "__main__":
    main()
