"""The no-dependency engine: tools sent to a `ProcessPoolExecutor` (spawned workers) call from there."""

from __future__ import annotations

import multiprocessing
import uuid
from concurrent.futures import ProcessPoolExecutor

import anyio
import pytest
import scale_tools
from conftest import KITCHEN, PYTHON, RunningServer

from cubepi.mcp import MCPToolList, StdioServer, load_mcp_tools, load_mcp_tools_http


@pytest.fixture(scope="module")
def pool() -> ProcessPoolExecutor:
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as executor:
        yield executor  # type: ignore[misc]


def test_stdio_http_and_function_tools(pool: ProcessPoolExecutor, kitchen_http: RunningServer) -> None:
    mark = uuid.uuid4().hex
    stdio = StdioServer(PYTHON, [str(KITCHEN)], env={scale_tools.MARK: mark})
    local_tools = _load(stdio, kitchen_http.url)
    jobs = [(local_tools[0], "add", {"a": n, "b": 1}) for n in range(2)] + [
        (local_tools[1], "echo", {"message": f"m{n}"}) for n in range(8)
    ]
    jobs.append(([scale_tools.multiply], "multiply", {"a": 6, "b": 7}))
    local = [scale_tools.call(tools, name, arguments) for tools, name, arguments in jobs]
    remote = list(pool.map(scale_tools.call, *zip(*jobs, strict=True)))
    assert remote == local
    assert local[:2] == ["1", "2"] and local[-1] == "42"
    assert scale_tools.marked_processes(mark) == []  # every stdio call closed its server


def _load(stdio: StdioServer, url: str) -> list[MCPToolList]:
    async def both() -> list[MCPToolList]:
        return [
            await load_mcp_tools(stdio, include=["add"]),
            await load_mcp_tools_http(url, include=["echo"]),
        ]

    return anyio.run(both)
