"""Load: bursts of concurrent stateless calls and long runs of sequential ones leave nothing behind.

Both use our fast servers (the raw-JSON stdio server starts in about 20 ms; the stdlib HTTP server answers
with plain JSON), so the run measures cubepi and the SDK rather than a server's start-up. 1,000 sequential
calls over HTTP; over stdio 500 by default (see SEQUENTIAL_STDIO).
"""

from __future__ import annotations

import os
import time

import anyio
import pytest
from conftest import HttpFaults

from cubepi import AgentTool
from cubepi.mcp import load_mcp_tools, load_mcp_tools_http

from .conftest import Leaks, stdio_server

CONCURRENT = 200
SEQUENTIAL_HTTP = 1000
# 1,000 sequential stdio calls take about 80 s on 2 shared cores (a process spawn each); 500 keep the suite
# under 4 minutes and still cross two leak checkpoints. CUBEPI_FAULTS_SEQUENTIAL_STDIO=1000 runs the full set.
SEQUENTIAL_STDIO = int(os.environ.get("CUBEPI_FAULTS_SEQUENTIAL_STDIO", "500"))


async def burst(tool: AgentTool, count: int) -> list[str]:
    texts: list[str] = [""] * count

    async def one(index: int) -> None:
        result = await tool.execute({"message": f"call {index}"})
        assert not result.is_error, result.text
        texts[index] = result.text

    async with anyio.create_task_group() as group:
        for index in range(count):
            group.start_soon(one, index)
    return texts


async def test_concurrent_stateless_calls_over_stdio() -> None:
    leaks = Leaks()
    tools = await load_mcp_tools(stdio_server("ok"), timeout=60)
    echo = next(item for item in tools if item.name == "echo")
    texts = await burst(echo, CONCURRENT)
    assert texts == [f"call {index}" for index in range(CONCURRENT)]
    await leaks.check(wait=10)


async def test_concurrent_stateless_calls_over_http(http_faults: HttpFaults) -> None:
    leaks = Leaks()
    tools = await load_mcp_tools_http(http_faults.url("/mcp"), timeout=60)
    echo = next(item for item in tools if item.name == "echo")
    texts = await burst(echo, CONCURRENT)
    assert texts == [f"call {index}" for index in range(CONCURRENT)]
    await leaks.check(wait=10)


async def sequential(tool: AgentTool, count: int, leaks: Leaks) -> None:
    for index in range(count):
        result = await tool.execute({"message": f"call {index}"})
        assert result.text == f"call {index}"
        if index % 250 == 249:  # no slow creep either: checked along the way, not only at the end
            await leaks.check(wait=5)


@pytest.mark.timeout(240)
async def test_sequential_calls_over_http(http_faults: HttpFaults) -> None:
    tools = await load_mcp_tools_http(http_faults.url("/mcp"), timeout=30)
    echo = next(item for item in tools if item.name == "echo")
    await echo.execute({"message": "warm-up"})
    leaks = Leaks()
    started = time.monotonic()
    await sequential(echo, SEQUENTIAL_HTTP, leaks)
    print(f"{SEQUENTIAL_HTTP} sequential HTTP calls: {time.monotonic() - started:.1f} s")
    await leaks.check()


@pytest.mark.timeout(240)
async def test_sequential_calls_over_stdio() -> None:
    tools = await load_mcp_tools(stdio_server("ok"), timeout=30)
    echo = next(item for item in tools if item.name == "echo")
    await echo.execute({"message": "warm-up"})
    leaks = Leaks()
    started = time.monotonic()
    await sequential(echo, SEQUENTIAL_STDIO, leaks)
    print(f"{SEQUENTIAL_STDIO} sequential stdio calls: {time.monotonic() - started:.1f} s")
    await leaks.check()
