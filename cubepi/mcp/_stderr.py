"""Capture what a stdio server prints on stderr into a bounded buffer instead of the host's stderr.

The SDK hands `errlog` to the subprocess as its stderr, so it must be a real OS file: we give it the write
end of a pipe and drain the read end from a small daemon thread (backend-agnostic, works on Windows),
keeping only the last `limit` bytes. A callback, when given, gets each line (without its newline) from
that thread; an exception it raises is logged once and never reaches the call.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any, TextIO

import anyio.to_thread

__all__ = ["StderrCapture"]

DEFAULT_LIMIT = 16 * 1024
MAX_LINE = 64 * 1024  # a longer line is passed to the callback in pieces of this size

logger = logging.getLogger("cubepi.mcp")


class StderrCapture:
    """A pipe whose write end is a stdio server's stderr; `tail()` is the last `limit` bytes it wrote."""

    def __init__(self, limit: int = DEFAULT_LIMIT, on_line: Callable[[str], Any] | None = None) -> None:
        self.limit = limit
        self._on_line = on_line
        self._partial = bytearray()
        self._callback_failed = False
        read_fd, write_fd = os.pipe()
        self._read_fd = read_fd
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._buffer = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._pump, name="cubepi-mcp-stderr", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            while True:
                try:
                    chunk = os.read(self._read_fd, 8192)
                except OSError:
                    break
                if not chunk:
                    break
                with self._lock:
                    self._buffer += chunk
                    if len(self._buffer) > 2 * self.limit:
                        del self._buffer[: len(self._buffer) - self.limit]
                if self._on_line is not None:
                    self._feed(chunk)
        finally:
            if self._on_line is not None and self._partial:
                self._emit(bytes(self._partial))
                self._partial.clear()
            os.close(self._read_fd)

    def _feed(self, chunk: bytes) -> None:
        self._partial += chunk
        while True:
            end = self._partial.find(b"\n")
            if end < 0:
                if len(self._partial) >= MAX_LINE:
                    self._emit(bytes(self._partial[:MAX_LINE]))
                    del self._partial[:MAX_LINE]
                    continue
                return
            line = bytes(self._partial[:end])
            del self._partial[: end + 1]
            self._emit(line)

    def _emit(self, line: bytes) -> None:
        assert self._on_line is not None
        try:
            self._on_line(line.decode("utf-8", errors="replace").rstrip("\r"))
        except Exception as exc:  # a broken callback must not break the call (nor flood the log)
            if not self._callback_failed:
                self._callback_failed = True
                logger.warning(
                    "on_stderr callback raised %s; later errors are not logged", type(exc).__name__
                )

    def close_writer(self) -> None:
        """Drop our copy of the write end (the child keeps its own); the reader ends when the child exits."""
        if not self.writer.closed:
            self.writer.close()

    def tail(self) -> str:
        """The last `limit` bytes written so far, decoded."""
        with self._lock:
            data = bytes(self._buffer[-self.limit :])
        return data.decode("utf-8", errors="replace")

    async def final_tail(self, wait: float = 0.5) -> str:
        """The tail once the server is gone: waits (briefly, without blocking the loop) for the pipe's end."""
        self.close_writer()
        if self._thread.is_alive():
            await anyio.to_thread.run_sync(self._thread.join, wait)
        return self.tail()
