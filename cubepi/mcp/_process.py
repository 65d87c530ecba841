"""The stdio server's process, as the MCP SDK spawns it: its exit code for errors, its stdout line-aligned.

Four things the SDK's `stdio_client` keeps to itself are needed by cubepi:

- the exit code of a server that died, for the error message (``exited with code 3``);
- a linear read of long lines: the SDK's reader joins every chunk it reads to the unfinished line before it
  (``buffer + chunk``), which is quadratic in the length of a line, so a 50 MB result took minutes. Handing
  it chunks that end at a newline makes every join trivial;
- a bound on a line (`max_response_bytes`): the SDK collects a line until its newline, so a server writing
  without one would take all memory. A line past the limit fails the session with `ResponseTooLarge`;
- the server's process group, to end what is left of it (`end_group`): the SDK signals the group only
  when the server outlives its grace, so a server that exits at once on stdin EOF left its children
  (``npx`` starts ``node``) running; and the server's exit itself, since such a child holds the stdout
  pipe open, and a server that died mid-call looked alive until the call's timeout (`_EndsWithServer`).

cubepi wraps the SDK's process factory (``mcp.client.stdio._create_platform_compatible_process``) once. The
wrapper acts only inside `track_process()` (a context variable set around cubepi's own `stdio_client`), so
any other use of the SDK in the same program is untouched; if a future SDK renames the factory, nothing
is wrapped and cubepi simply reports no exit code.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Iterator
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from ._limits import ResponseTooLarge

__all__ = ["SPAWN_LIMIT", "ProcessInfo", "end_group", "install", "track_process"]

# How long spawning the server's process (not its start-up) may take. Spawning takes milliseconds; the
# bound is for CPython's asyncio (3.11 to 3.13 at least, gh-103847): when the loop ends while a process is
# being spawned, the spawn waits forever for pipes that are never connected, and so does the program.
SPAWN_LIMIT = 3.0


class ProcessInfo:
    """What cubepi learns of one spawned stdio server: its pid and, once it has ended, its exit code.

    `max_line` (set before the spawn) bounds one line of its stdout, in bytes (None: no bound).
    """

    def __init__(self) -> None:
        self.process: Process | None = None
        self.max_line: int | None = None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process is not None else None


_CURRENT: contextvars.ContextVar[ProcessInfo | None] = contextvars.ContextVar(
    "cubepi_mcp_stdio_process", default=None
)


@contextlib.contextmanager
def track_process(info: ProcessInfo) -> Iterator[ProcessInfo]:
    """Within this block, a stdio server the SDK spawns (in this task) is recorded in `info`."""
    install()
    token = _CURRENT.set(info)
    try:
        yield info
    finally:
        _CURRENT.reset(token)


async def end_group(info: ProcessInfo) -> None:
    """End what is left of the server's process group, once the SDK's transport has closed.

    SIGTERM to the group, SIGKILL to what is left after the SDK's own grace (``FORCE_KILL_TIMEOUT``): the
    SDK's own tree kill, applied also when the server itself exited. The SDK starts the server in a new
    session, so its pid is the group's id; that id is not given to a new process while a member of the
    group lives (and when none does, the group is gone and the signal reaches no one, barring a pid
    reused within these milliseconds). Shielded: it runs when the call was cancelled, too.
    """
    process = info.process
    if process is None or sys.platform == "win32":
        return
    from mcp.client.stdio import FORCE_KILL_TIMEOUT
    from mcp.os.posix.utilities import terminate_posix_process_tree

    with anyio.CancelScope(shield=True):
        await terminate_posix_process_tree(process, FORCE_KILL_TIMEOUT)


class _EndsWithServer(ByteReceiveStream):
    """The server's stdout, ended once the server has exited and nothing more arrives for `EXIT_POLL` s,
    even while a child it left behind keeps the pipe open."""

    def __init__(self, inner: ByteReceiveStream, process: Process) -> None:
        self._inner = inner
        self._process = process

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            with anyio.move_on_after(EXIT_POLL):
                return await self._inner.receive(max_bytes)
            if self._process.returncode is not None:
                raise anyio.EndOfStream

    async def aclose(self) -> None:
        await self._inner.aclose()


# How often a silent server's stdout looks whether the server is still running (see `_EndsWithServer`).
EXIT_POLL = 0.2


class _LineAligned(ByteReceiveStream):
    """A byte stream whose chunks end at a newline (or at the end of the stream), lines at most `limit`
    bytes long.

    A line past `limit` raises `ResponseTooLarge` (what fails the session); every later read then ends the
    stream at once, so that the SDK's drain of stdout stops instead of reading the rest of the line.
    """

    def __init__(self, inner: ByteReceiveStream, limit: int | None = None) -> None:
        self._inner = inner
        self._limit = limit
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


class _TrackedProcess(Process):
    """The SDK's process with a line-aligned stdout; everything else is the process itself."""

    def __init__(self, inner: Process, max_line: int | None = None) -> None:
        self._inner = inner
        stdout = inner.stdout
        self._stdout = _LineAligned(_EndsWithServer(stdout, inner), max_line) if stdout is not None else None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def wait(self) -> int:
        return await self._inner.wait()

    def terminate(self) -> None:
        self._inner.terminate()

    def kill(self) -> None:
        self._inner.kill()

    def send_signal(self, signal: Any) -> None:
        self._inner.send_signal(signal)

    @property
    def pid(self) -> int:
        return self._inner.pid

    @property
    def _process(self) -> Any:
        """The asyncio process under anyio's, which the SDK's shutdown looks for to close its transport."""
        return getattr(self._inner, "_process", None)

    @property
    def returncode(self) -> int | None:
        return self._inner.returncode

    @property
    def stdin(self) -> ByteSendStream | None:
        return self._inner.stdin

    @property
    def stdout(self) -> ByteReceiveStream | None:
        return self._stdout

    @property
    def stderr(self) -> ByteReceiveStream | None:
        return self._inner.stderr


_installed = False


def install() -> None:
    """Wrap the SDK's process factory (once; a no-op if the SDK has no such factory)."""
    global _installed
    if _installed:
        return
    _installed = True
    import mcp.client.stdio as sdk_stdio

    original = getattr(sdk_stdio, "_create_platform_compatible_process", None)
    if original is None or sys.platform == "win32":
        return

    async def create(*args: Any, **kwargs: Any) -> Any:
        with anyio.fail_after(SPAWN_LIMIT):
            process = await original(*args, **kwargs)
        info = _CURRENT.get()
        if info is None or not isinstance(process, Process):
            return process
        tracked = _TrackedProcess(process, info.max_line)
        info.process = tracked
        return tracked

    sdk_stdio._create_platform_compatible_process = create
