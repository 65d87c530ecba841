"""Fault-injection fixtures: our misbehaving servers, and a leak guard counting processes, fds and sockets."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import anyio
import psutil

from cubepi.mcp import StdioServer

FAULTS = Path(__file__).parent
SERVERS = FAULTS / "servers"
STDIO_FAULTS = SERVERS / "stdio_faults.py"
PYTHON = sys.executable


def stdio_server(mode: str, *extra: str, **kwargs: Any) -> StdioServer:
    """A `StdioServer` running tests/faults/servers/stdio_faults.py in `mode`."""
    return StdioServer(PYTHON, [str(STDIO_FAULTS), mode, *extra], **kwargs)


def assert_timeout_message(error: BaseException, phase: str, limit: float) -> None:
    """What a timeout tells the user: that it timed out, the limit, and the phase (wording may vary)."""
    text = str(error)
    assert "timed out" in text and f"{limit:g} s" in text and f"phase: {phase}" in text, text


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class Leaks:
    """Child processes, open file descriptors and TCP connections of this process, against a baseline.

    Take it inside the test (the event loop's own descriptors already exist then), and `await check()` at
    the end: it polls briefly, since a closed pipe's reader thread or a socket may need a moment.
    """

    def __init__(self) -> None:
        self._me = psutil.Process()
        self.children, self.fds, self.connections = self.snapshot()

    def snapshot(self) -> tuple[set[int], int, set[tuple[Any, ...]]]:
        children = {child.pid for child in self._me.children(recursive=True) if _alive(child)}
        connections = {
            (conn.fd, conn.laddr, conn.raddr)
            for conn in self._me.net_connections(kind="tcp")
            if conn.raddr and conn.status not in ("TIME_WAIT", "CLOSE_WAIT", "LISTEN")
        }
        return children, self._me.num_fds(), connections

    def problems(self) -> list[str]:
        children, fds, connections = self.snapshot()
        found = []
        if children - self.children:
            found.append(f"child processes left running: {sorted(children - self.children)}")
        if fds > self.fds:
            found.append(f"open file descriptors grew from {self.fds} to {fds}")
        if connections - self.connections:
            found.append(f"TCP connections left open: {connections - self.connections}")
        return found

    async def check(self, wait: float = 5.0) -> None:
        """Fail unless processes, descriptors and connections are back to the baseline within `wait` s."""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not self.problems():
                return
            await anyio.sleep(0.05)
        problems = self.problems()
        assert not problems, "; ".join(problems)
