"""Fault-injection fixtures: our misbehaving servers, and a leak guard counting processes, fds and sockets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from conftest import free_port

from cubepi.mcp import StdioServer

FAULTS = Path(__file__).parent
SERVERS = FAULTS / "servers"
STDIO_FAULTS = SERVERS / "stdio_faults.py"
HTTP_FAULTS = SERVERS / "http_faults.py"
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


@dataclass
class HttpFaults:
    """The running http_faults.py server: `base` is http://127.0.0.1:PORT, `other` the second origin."""

    base: str
    other: str
    record_file: Path
    process: subprocess.Popen[bytes]

    def url(self, path: str) -> str:
        return self.base + path

    def records(self) -> list[dict[str, Any]]:
        lines = self.record_file.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def clear(self) -> None:
        self.record_file.write_text("", encoding="utf-8")


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    import socket

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"http_faults.py exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("http_faults.py did not start listening")


@pytest.fixture(scope="session")
def http_faults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpFaults]:
    """tests/faults/servers/http_faults.py on two free ports of 127.0.0.1 (the second is another origin)."""
    port, other = free_port(), free_port()
    record_file = tmp_path_factory.mktemp("http_faults") / "requests.jsonl"
    record_file.write_text("", encoding="utf-8")
    process = subprocess.Popen(
        [PYTHON, str(HTTP_FAULTS), str(port), str(other), str(record_file)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    try:
        _wait_for_port(port, process)
        _wait_for_port(other, process)
        yield HttpFaults(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{other}", record_file, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
