"""A stdio server's stdout as cubepi reads it: linear, bounded, and ended with the server.

The SDK joins each chunk to the unfinished line before it (quadratic in a line's length) and would collect
a line with no end forever; `_LineAligned` hands it chunks that end at a newline, each line at most
`max_response_bytes`. `_EndsWithServer` ends stdout once the server has exited, although a child it left
(``npx`` starts ``node``) holds the pipe open.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process

from .._calls.limits import ResponseTooLarge

__all__ = ["EXIT_POLL", "TrackedProcess"]

EXIT_POLL = 1.0  # how often a silent stdout looks whether the server still runs


class _EndsWithServer(ByteReceiveStream):
    """The server's stdout, ended once the server has exited and nothing more arrives for `EXIT_POLL` s,
    even while a child it left behind holds the pipe open.

    Under asyncio on Linux the exit is an event (a pidfd the loop watches), so a read waits on the pipe
    alone, with no timer, until the server exits; from then on (and on other platforms and loops) a read
    that hears nothing for `EXIT_POLL` s looks whether the server is gone.
    """

    def __init__(self, inner: ByteReceiveStream, process: Process) -> None:
        self._inner = inner
        self._process = process
        self._reading: anyio.CancelScope | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pidfd = -1
        self._watch(process.pid)

    def _watch(self, pid: int) -> None:
        try:
            loop = asyncio.get_running_loop()
            fd = os.pidfd_open(pid)  # type: ignore[attr-defined,unused-ignore]
        except (RuntimeError, AttributeError, OSError):
            return
        try:
            loop.add_reader(fd, self._exited)
        except (NotImplementedError, OSError):
            os.close(fd)
            return
        self._loop, self._pidfd = loop, fd

    def _unwatch(self) -> None:
        if self._pidfd >= 0:
            assert self._loop is not None
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = -1

    def _exited(self) -> None:
        self._unwatch()
        if self._reading is not None:
            self._reading.cancel()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._pidfd >= 0:  # cancelled by `_exited`: go on below, looking each `EXIT_POLL`
            with anyio.CancelScope() as self._reading:
                try:
                    return await self._inner.receive(max_bytes)
                finally:
                    self._reading = None
        while True:
            with anyio.move_on_after(EXIT_POLL):
                return await self._inner.receive(max_bytes)
            if self._process.returncode is not None:
                raise anyio.EndOfStream

    async def aclose(self) -> None:
        self._unwatch()
        await self._inner.aclose()


class _LineAligned(ByteReceiveStream):
    """A byte stream whose chunks end at a newline (or the stream's end), lines at most `limit` bytes.

    A line past `limit` raises `ResponseTooLarge` (what fails the session); later reads then end at once,
    so that the SDK's drain of stdout stops instead of reading the rest of the line. `heard` is called
    with each chunk that arrives.
    """

    def __init__(
        self, inner: ByteReceiveStream, limit: int | None = None, heard: Callable[[], None] | None = None
    ) -> None:
        self._inner = inner
        self._limit = limit
        self._heard = heard
        self._rest = b""  # never holds a newline: bytes after the last one of the previous chunk
        self._failed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._failed:
            raise anyio.ClosedResourceError
        parts: list[bytes] = [self._rest] if self._rest else []
        pending = len(self._rest)  # bytes of the unfinished line in `parts`
        self._rest = b""
        while True:
            try:
                chunk = await self._inner.receive(max_bytes)
            except anyio.EndOfStream:
                if parts:
                    return b"".join(parts)
                raise
            if self._heard is not None:
                self._heard()
            cut = chunk.rfind(b"\n")
            if cut == -1:
                pending += len(chunk)
                self._check(pending)
                parts.append(chunk)
                continue
            if self._limit is not None:
                first = chunk.find(b"\n")
                self._check(pending + first)
                if first != cut and self._limit < cut - first:
                    self._check(max(len(line) for line in chunk[first + 1 : cut].split(b"\n")))
            parts.append(chunk[: cut + 1])
            self._rest = chunk[cut + 1 :]
            return b"".join(parts)

    def _check(self, length: int) -> None:
        if self._limit is not None and length > self._limit:
            self._failed = True
            self._rest = b""
            raise ResponseTooLarge(self._limit)

    async def aclose(self) -> None:
        await self._inner.aclose()


class TrackedProcess:
    """The SDK's process with cubepi's stdout; everything else is the process itself (registered as an
    anyio `Process`, which the SDK's tree kill checks for)."""

    def __init__(self, inner: Process, max_line: int | None, heard: Callable[[], None]) -> None:
        self._inner = inner
        stdout = inner.stdout
        ends = _EndsWithServer(stdout, inner) if stdout is not None else None
        self.stdout = _LineAligned(ends, max_line, heard) if ends is not None else None

    @property
    def returncode(self) -> int | None:
        return self._inner.returncode  # read every 10 ms while the SDK waits for the exit

    @property
    def pid(self) -> int:
        return self._inner.pid

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


Process.register(TrackedProcess)
