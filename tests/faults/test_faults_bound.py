"""A limit is a bound: when `timeout` or `max_duration` runs out, `execute` raises without waiting for the
shutdown of a server that ignores its stdin closing (the SDK gives it a 2 s grace before SIGTERM).

The shutdown goes on in the background, owned by the list: `aclose()` waits for it, and so does the end
of the event loop; either way no process is left.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from cubepi.errors import MCPError, MCPTimeoutError
from cubepi.mcp import load_mcp_tools

from .conftest import Leaks, stdio_server
from .test_faults_cancellation import cancel_when, received, saw

# The SDK waits this long for a server to exit once its stdin is closed, before it sends SIGTERM.
SDK_SHUTDOWN_GRACE = 2.0


def server_alive(pids: set[int]) -> bool:
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return True
        except psutil.Error:
            continue
    return False


def children() -> set[int]:
    return {child.pid for child in psutil.Process().children(recursive=True)}


@pytest.mark.parametrize(
    ("protocol", "limits", "limit", "keyword"),
    [
        # A handshake-era server is known to be up once initialized: the call gets `timeout`.
        ("legacy", {"timeout": 1.0, "startup_timeout": 30}, 1.0, "(timeout; phase: call)"),
        ("auto", {"timeout": 30.0, "max_duration": 1.0}, 1.0, "max_duration"),
        # A new 2026-07-28 process that answers nothing at all (not even server/discover) never showed it
        # was up: its first request ends at the start-up limit.
        ("auto", {"timeout": 1.0, "startup_timeout": 2.0}, 2.0, "(startup_timeout; phase: startup)"),
    ],
)
async def test_a_limit_that_runs_out_does_not_wait_for_a_deaf_server(
    protocol: str, limits: dict[str, Any], limit: float, keyword: str
) -> None:
    leaks = Leaks()
    tools = await load_mcp_tools(stdio_server("deaf_call", protocol=protocol), **limits)
    echo = next(tool for tool in tools if tool.name == "echo")
    before = children()
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        await echo.execute({"message": "hi"})
    took = time.monotonic() - started
    spawned = children() - before
    assert keyword in str(caught.value)
    # The old behaviour waited for the SDK's shutdown grace: at least limit + 2 s.
    assert took < limit + SDK_SHUTDOWN_GRACE, f"raised after {took:.2f} s"
    assert server_alive(spawned), "the deaf server should still be shutting down in the background"
    await tools.aclose()
    assert not server_alive(spawned), "aclose() returned before the server's shutdown ended"
    await leaks.check()


async def test_the_loop_end_waits_for_a_shutdown_in_the_background() -> None:
    """No `aclose()`: ``asyncio.run`` ends right after the call raised, and leaves no process behind."""
    leaks = Leaks()
    outcome: list[BaseException] = []

    async def scenario() -> None:
        tools = await load_mcp_tools(stdio_server("deaf_call"), timeout=1.0, startup_timeout=2)
        echo = next(tool for tool in tools if tool.name == "echo")
        try:
            await echo.execute({"message": "hi"})
        except MCPTimeoutError as exc:
            outcome.append(exc)

    await anyio.to_thread.run_sync(lambda: asyncio.run(scenario()))
    assert outcome, "the call should have timed out"
    await leaks.check(wait=0.5)


async def test_a_cancelled_call_still_waits_for_the_shutdown(tmp_path: Path) -> None:
    """A caller's cancellation is not a limit of the call: the server's shutdown (here the SDK's grace, then
    SIGTERM, as the server stopped reading) is over by the time the caller gets control back."""
    record = tmp_path / "received.jsonl"
    leaks = Leaks()
    tools = await load_mcp_tools(stdio_server("deaf_call", "--record", str(record)), timeout=30)
    echo = next(tool for tool in tools if tool.name == "echo")
    cancelled, _ = await cancel_when(lambda: echo.execute({"message": "hi"}), saw(record, "tools/call"))
    assert cancelled
    assert not leaks.problems(), leaks.problems()
    await tools.aclose()


async def test_a_failed_call_cancelled_while_its_server_shuts_down_still_waits(tmp_path: Path) -> None:
    """A call that failed (not a limit) waits for its session to close, and a cancellation of the caller
    during that wait does not cut it short: the failure is raised once the deaf server is gone."""
    record = tmp_path / "received.jsonl"
    leaks = Leaks()
    server = stdio_server("wrong_shape", "--record", str(record), "--deaf-at-eof")
    tools = await load_mcp_tools(server, timeout=30)
    echo = next(tool for tool in tools if tool.name == "echo")
    outcome: list[BaseException] = []
    with anyio.CancelScope() as scope:

        async def cancel_once_closing() -> None:
            deadline = time.monotonic() + 20
            while not any(message.get("eof") for message in received(record)):  # its stdin has closed
                assert time.monotonic() < deadline, "the session never closed"
                await anyio.sleep(0.02)
            scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(cancel_once_closing)
            try:
                await echo.execute({"message": "hi"})
            except MCPError as exc:
                outcome.append(exc)
    assert outcome and "calling tool 'echo'" in str(outcome[0]), outcome
    assert not leaks.problems(), leaks.problems()
    await tools.aclose()
