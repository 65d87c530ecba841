"""A stdio server's whole process group ends with its call, in every exit path.

The server (stdio_faults.py ``--grandchild FILE``) starts a child in its own process group and exits as
soon as its stdin closes, leaving the child behind unless cubepi ends the group. Each test runs one exit
path (a call that succeeds, fails, times out or is cancelled; a listing; a connection; the spare server;
the event loop ending mid-call) and asserts that every grandchild the servers started is gone.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import psutil
import pytest

from cubepi import MCPError, MCPTimeoutError
from cubepi.mcp import load_mcp_tools

from .conftest import PYTHON, STDIO_FAULTS, Leaks, stdio_server

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")


def _pids(pid_file: Path) -> list[int]:
    if not pid_file.exists():
        return []
    return [int(line) for line in pid_file.read_text(encoding="utf-8").split()]


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def assert_grandchildren_gone(pid_file: Path, started: int, wait: float = 5.0) -> None:
    """`started` grandchildren were recorded in `pid_file`, and none is running (within `wait` s: the
    SIGTERM is sent when the call ends, its delivery is the kernel's)."""
    pids = _pids(pid_file)
    assert len(pids) == started, pids
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any(_running(pid) for pid in pids):
        time.sleep(0.02)
    assert not [pid for pid in pids if _running(pid)], "grandchildren left running"


async def _wait_until(predicate: Callable[[], bool], limit: float = 20.0) -> None:
    """Poll `predicate` (a file another process writes) until it holds; fail after `limit` s."""
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await anyio.sleep(0.02)


def _called(record: Path) -> bool:
    """Whether the server recorded a ``tools/call`` (the call has reached it)."""
    return record.exists() and '"tools/call"' in record.read_text(encoding="utf-8")


async def test_a_listing_and_a_call_that_succeed(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    leaks = Leaks()
    tools = await load_mcp_tools(stdio_server("ok", "--grandchild", str(pids)), timeout=10)
    echo = next(item for item in tools if item.name == "echo")
    assert (await echo.execute({"message": "hi"})).text == "hi"
    await tools.aclose()  # the servers' shutdowns went on beside the caller; aclose() waits for them
    assert_grandchildren_gone(pids, 2)  # the listing's server and the call's
    await leaks.check()


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_call_whose_server_crashes(tmp_path: Path, anyio_backend: str) -> None:
    """The grandchild holds the server's stdout open: the server's death is still seen at once (an event
    under asyncio on Linux, a look every second of silence under trio)."""
    pids = tmp_path / "pids"
    leaks = Leaks()
    tools = await load_mcp_tools(stdio_server("crash_call", "--grandchild", str(pids)), timeout=30)
    started = time.monotonic()
    with pytest.raises(MCPError) as caught:
        await tools[0].execute({"message": "hi"})
    assert time.monotonic() - started < 15  # not the 30 s call timeout
    assert not isinstance(caught.value, MCPTimeoutError)
    assert "exited with code 7" in str(caught.value) and "segfault-ish" in str(caught.value)
    assert_grandchildren_gone(pids, 2)
    await leaks.check()


async def test_a_call_that_times_out(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    tools = await load_mcp_tools(stdio_server("hang_call", "--grandchild", str(pids)), timeout=1.0)
    with pytest.raises(MCPTimeoutError):
        await tools[0].execute({"message": "hi"})
    assert_grandchildren_gone(pids, 2)


async def test_a_call_that_is_cancelled(tmp_path: Path) -> None:
    pids, record = tmp_path / "pids", tmp_path / "record"
    server = stdio_server("hang_call", "--grandchild", str(pids), "--record", str(record))
    tools = await load_mcp_tools(server, timeout=30)
    async with anyio.create_task_group() as group:
        group.start_soon(tools[0].execute, {"message": "hi"})
        await _wait_until(lambda: _called(record))
        group.cancel_scope.cancel()
    assert_grandchildren_gone(pids, 2)


async def test_a_listing_that_fails(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    with pytest.raises(MCPError, match="repeated the pagination cursor"):
        await load_mcp_tools(stdio_server("cursor_same", "--grandchild", str(pids)), timeout=10)
    assert_grandchildren_gone(pids, 1)


async def test_a_connection(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    async with stdio_server("ok", "--grandchild", str(pids)).connect(timeout=10) as conn:
        tools = await load_mcp_tools(conn)
        echo = next(item for item in tools if item.name == "echo")
        assert (await echo.execute({"message": "hi"})).text == "hi"
    assert_grandchildren_gone(pids, 1)


async def test_the_spare_server_and_the_used_one(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    tools = await load_mcp_tools(stdio_server("ok", "--grandchild", str(pids)), timeout=10, prespawn=True)
    echo = next(item for item in tools if item.name == "echo")
    assert (await echo.execute({"message": "hi"})).text == "hi"
    await _wait_until(lambda: len(_pids(pids)) == 3)  # the listing's, the used spare's, the next spare's
    await tools.aclose()
    assert_grandchildren_gone(pids, 3)


def test_the_loop_ending_mid_call(tmp_path: Path) -> None:
    """`asyncio.run` ends while a call waits for its server: the loop's end cancels it; the group is gone."""
    pids, record = tmp_path / "pids", tmp_path / "record"
    script = textwrap.dedent(
        f"""
        import asyncio, pathlib
        from cubepi.mcp import StdioServer, load_mcp_tools

        async def main():
            server = StdioServer({PYTHON!r}, [{str(STDIO_FAULTS)!r}, "hang_call", "--grandchild",
                                 {str(pids)!r}, "--record", {str(record)!r}])
            tools = await load_mcp_tools(server, timeout=30)
            asyncio.get_running_loop().create_task(tools[0].execute({{"message": "hi"}}))
            record = pathlib.Path({str(record)!r})
            while '"tools/call"' not in (record.read_text() if record.exists() else ""):
                await asyncio.sleep(0.02)

        asyncio.run(main())
        """
    )
    done = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert_grandchildren_gone(pids, 2)
