"""Dask `distributed`: a `LocalCluster` of two worker processes maps tool calls over a stdio server and a
2026-07-28 Streamable HTTP server; the results are those of local calls, and once the cluster has closed
no server process is left."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import anyio
import pytest
import scale_tools
from conftest import KITCHEN, PYTHON, RunningServer
from distributed import Client, LocalCluster

from cubepi.mcp import MCPToolList, StdioServer, load_mcp_tools, load_mcp_tools_http


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(
        n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None, silence_logs=40
    ) as running:
        yield running


def test_map_calls_over_both_transports(cluster: LocalCluster, kitchen_http: RunningServer) -> None:
    mark = uuid.uuid4().hex

    async def load() -> tuple[MCPToolList, MCPToolList]:
        stdio = StdioServer(PYTHON, [str(KITCHEN)], env={scale_tools.MARK: mark})
        http = await load_mcp_tools_http(kitchen_http.url, include=["add"])
        assert http[0]._run.runner.learned.protocol.stateless  # type: ignore[attr-defined]
        return await load_mcp_tools(stdio, include=["echo"]), http

    stdio_tools, http_tools = anyio.run(load)
    http_args = [{"a": n, "b": n} for n in range(20)]
    stdio_args = [{"message": f"hello {n}"} for n in range(2)]
    with Client(cluster) as client:
        http_futures = client.map(
            scale_tools.call_one, [http_tools[0]] * len(http_args), http_args, pure=False
        )
        stdio_futures = client.map(
            scale_tools.call_one, [stdio_tools[0]] * len(stdio_args), stdio_args, pure=False
        )
        remote_http, remote_stdio = client.gather(http_futures), client.gather(stdio_futures)
        workers = client.run(lambda: 1)
    assert len(workers) == 2
    assert remote_http == [scale_tools.call_one(http_tools[0], args) for args in http_args]
    assert remote_http == [str(2 * n) for n in range(20)]
    assert remote_stdio == [scale_tools.call_one(stdio_tools[0], stdio_args[0]), "hello 1"]
    cluster.close()
    assert scale_tools.marked_processes(mark) == []
