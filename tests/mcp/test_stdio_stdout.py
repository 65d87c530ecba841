"""A stdio server's stdout ends with the server, even while a child it left holds the pipe open; under asyncio
on Linux the server's exit is an event, so waiting on a silent stdout sets no timer (no server: a plain
process stands in for one)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

import anyio
import pytest

from cubepi.mcp._transports import stdio_stdout as _stdio_stdout
from cubepi.mcp._transports.stdio_stdout import _EndsWithServer

PYTHON = sys.executable
# Exits once its stdin closes, leaving a child that holds its stdout open for a minute.
LEAVES_A_CHILD = (
    "import subprocess, sys; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], stdout=sys.stdout); "
    "print('up', flush=True); sys.stdin.read()"
)
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes and process groups")


async def read_to_the_end(stream: _EndsWithServer) -> list[bytes]:
    chunks = []
    with anyio.fail_after(30):
        while True:
            try:
                chunks.append(await stream.receive())
            except anyio.EndOfStream:
                return chunks


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_stdout_ends_after_the_server_although_its_child_holds_the_pipe(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_stdio_stdout, "EXIT_POLL", 0.2)
    async with await anyio.open_process([PYTHON, "-c", LEAVES_A_CHILD], start_new_session=True) as process:
        assert process.stdout is not None and process.stdin is not None
        stream = _EndsWithServer(process.stdout, process)
        try:
            line = b""
            while not line.endswith(b"\n"):
                line += await stream.receive()
            assert line == b"up\n"
            await process.stdin.aclose()  # the server exits; its child lives on, holding stdout
            assert await read_to_the_end(stream) == []
            assert process.returncode == 0
        finally:
            await stream.aclose()
            os.killpg(process.pid, signal.SIGKILL)  # the child


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfd is Linux's")
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_silent_stdout_sets_no_timer_until_the_server_exits(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Waiting 1.5 s on a server that writes nothing sets no timer under asyncio (the exit is a pidfd the
    loop watches); a look every `EXIT_POLL` (0.01 s here) would have set over a hundred."""
    monkeypatch.setattr(_stdio_stdout, "EXIT_POLL", 0.01)
    loop: Any = asyncio.get_running_loop()
    timers = 0
    call_at = loop.call_at

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal timers
        timers += 1
        return call_at(*args, **kwargs)

    script = "import time; time.sleep(1.5)"
    async with await anyio.open_process([PYTHON, "-c", script]) as process:
        assert process.stdout is not None
        stream = _EndsWithServer(process.stdout, process)
        monkeypatch.setattr(loop, "call_at", counting)
        try:
            assert await read_to_the_end(stream) == []
        finally:
            monkeypatch.setattr(loop, "call_at", call_at)
            await stream.aclose()
    assert timers < 20, f"{timers} timers while stdout was silent"
