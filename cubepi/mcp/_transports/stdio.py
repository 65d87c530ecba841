"""The stdio transport, whole: command and environment, spawn, stderr, line bound, process group, shutdown.

cubepi opens the SDK's own `stdio_client` (its framing, its shutdown: stdin closed, grace period,
SIGTERM/SIGKILL of the process group) and adds what the SDK keeps to itself:

- `launch_parameters`: the command looked up on the ``PATH`` the server gets, and its environment (the
  SDK's safe default, `ENV_PASSTHROUGH`, then `env`), computed once per list, not per call;
- `StdioProcess`: what the server printed on stderr (a pipe drained as it comes, by a reader callback
  of the asyncio loop: the last 16 KiB for errors, each line to `on_stderr`), its exit code, and when it
  first wrote to stdout;
- a linear, bounded read of stdout (`_transports.stdio_stdout`). A line past `max_response_bytes` fails the
  session with `ResponseTooLarge`;
- the end of the server's whole process group once the transport has closed (a server that exits at once
  left its children running: ``npx`` starts ``node``).

The SDK's process factory (a private name: `_sdk.wrap_process_factory`) is wrapped once; the wrapper acts
only for cubepi's own spawns (a context variable), so other uses of the SDK in the program are untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import fnmatch
import logging
import os
import shutil
import signal
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, TextIO, cast

import anyio
import anyio.to_thread
from anyio.abc import Process

from ...errors import MCPError
from .._redact import secret_values
from .._sdk import wrap_process_factory
from .stdio_stdout import TrackedProcess

if TYPE_CHECKING:
    from mcp.client.stdio import StdioServerParameters

    from .._configs import StdioConfig
    from .._errors import Attempt
    from .base import Opener, S

__all__ = [
    "ENV_PASSTHROUGH",
    "SPAWN_LIMIT",
    "StdioProcess",
    "StdioTransport",
    "launch_parameters",
    "open_stdio",
    "resolve_command",
]

logger = logging.getLogger("cubepi.mcp")

# Parent variables a stdio server gets on top of the SDK's safe default (PATH, HOME, ...): proxies, CA
# bundles, locale and temp dir, without which `npx` / `uvx` break behind a proxy. No tokens, no keys.
ENV_PASSTHROUGH: tuple[str, ...] = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "LANG",
    "LC_*",
    "TMPDIR",
)

# How long spawning the process (not the server's start-up) may take: CPython's asyncio (3.11 to 3.13,
# gh-103847) waits forever for a spawn that the loop's end interrupts.
SPAWN_LIMIT = 3.0
STDERR_LIMIT = 16 * 1024  # the tail of stderr kept for errors
MAX_LINE = 64 * 1024  # a longer stderr line reaches `on_stderr` in pieces of this size
STDERR_SETTLE = 0.5  # how long the end of stderr is waited for once the server is gone


def environment(server: StdioConfig) -> dict[str, str]:
    """The environment `server` gets: the SDK's safe default (``PATH``, ``HOME``, ...), the parent's
    variables named in `ENV_PASSTHROUGH`, then `env` (or the whole parent environment with
    ``inherit_env=True``)."""
    from mcp.client.stdio import get_default_environment

    if server.inherit_env:
        env = dict(os.environ)
    else:
        env = get_default_environment()
        for key, value in os.environ.items():
            if key not in env and any(fnmatch.fnmatchcase(key, pattern) for pattern in ENV_PASSTHROUGH):
                env[key] = value
    return {**env, **(server.env or {})}


def launch_parameters(server: StdioConfig) -> tuple[StdioServerParameters, tuple[str, ...]]:
    """What spawning `server` takes (computed once per list), and the secrets (its `env` values) to keep
    out of every message."""
    from mcp.client.stdio import StdioServerParameters

    env = environment(server)
    params = StdioServerParameters(
        command=resolve_command(server, env),
        args=list(server.args),
        env=env,
        cwd=os.fspath(server.cwd) if server.cwd is not None else None,
    )
    return params, secret_values((server.env or {}).values())


class StdioTransport:
    """The stdio `base.Transport` of one server: its launch parameters found once (`launch`), a new
    process per session, whose shutdown may go on once the session's answer is in (`detachable`)."""

    detachable = True
    close_grace = None
    takes_call_context = False
    polls_apart = False

    def __init__(self, server: StdioConfig) -> None:
        self.server = server
        self._launch: tuple[StdioServerParameters, tuple[str, ...]] | None = None

    def launch(self) -> tuple[StdioServerParameters, tuple[str, ...]]:
        """`launch_parameters`, found on the first session; a failure (a missing command) is not kept."""
        if self._launch is None:
            self._launch = launch_parameters(self.server)
        return self._launch

    def session(
        self, opener: Opener[S], attempt: Attempt, opening: anyio.CancelScope | None
    ) -> contextlib.AbstractAsyncContextManager[S]:
        params, secrets = self.launch()
        attempt.add_secrets(secrets)
        server = self.server
        process = StdioProcess(server.max_response_bytes, server.on_stderr, name=server.describe())
        attempt.process = process
        return opener.start(attempt, open_stdio(params, process), "stdio", opening)


def resolve_command(server: StdioConfig, env: dict[str, str]) -> str:
    """The command as a shell finds it: on the server's ``PATH`` (``npx.cmd`` on Windows), a relative path
    with a directory part relative to `cwd`. A clear `MCPError` for a missing command or directory."""
    describe = server.describe()
    if server.cwd is not None and not os.path.isdir(server.cwd):
        raise MCPError(
            f"starting {describe} failed: the working directory {os.fspath(server.cwd)!r} does not exist",
            server=describe,
        )
    command = server.command
    has_dir = os.sep in command or (os.altsep is not None and os.altsep in command)
    lookup = command
    if has_dir and server.cwd is not None and not os.path.isabs(command):
        lookup = os.path.join(os.fspath(server.cwd), command)
    found = shutil.which(lookup, path=None if has_dir else env.get("PATH", os.defpath))
    if found is None:
        where = (
            "no executable file there"
            if has_dir
            else ("not on the PATH the server gets; give its full path or set PATH in env")
        )
        raise MCPError(
            f"starting {describe} failed: command not found: {command!r} ({where})", server=describe
        )
    return found


class StdioProcess:
    """One spawned server: its stderr (the tail, and lines to `on_line`), exit code and first output.

    `on_output`, when set, is called once, when the server first writes to stdout: a new 2026-07-28
    process sends nothing before its first request, and that request's deadline includes the start-up
    limit until the server is heard from (see `_calls.session.call_tool`).
    """

    def __init__(
        self,
        max_line: int | None = None,
        on_line: Callable[[str], Any] | None = None,
        *,
        stderr_limit: int = STDERR_LIMIT,
        name: str = "the MCP server",
    ) -> None:
        self.max_line = max_line
        self.stderr_limit = stderr_limit
        self.name = name
        self.killed = False  # by `kill_group`: the loop ended
        self.process: Process | None = None
        self.heard = False
        self.on_output: Callable[[], None] | None = None
        self._on_line = on_line
        self._partial = bytearray()
        self._callback_failed = False
        self._buffer = bytearray()
        self._lock = threading.Lock()
        read_fd, write_fd = os.pipe()
        self._read_fd = read_fd
        self.errlog: TextIO = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ended: anyio.Event | None = None
        self._thread: threading.Thread | None = None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    def kill_group(self) -> None:
        """SIGKILL the server's process group at once (the loop ends: no graceful shutdown can finish)."""
        if self.process is None or sys.platform == "win32":
            return
        self.killed = True
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def output_seen(self) -> None:
        if not self.heard:
            self.heard = True
            if self.on_output is not None:
                self.on_output()

    # -- stderr: a pipe the server writes, drained as it comes ----------------------------------------------

    def start_reading(self) -> None:
        """Drain the stderr pipe as the server writes it: a reader callback of the running asyncio loop (no
        task, no thread), elsewhere (another backend, Windows) a daemon thread."""
        fd = self._read_fd
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None and sys.platform != "win32":
            os.set_blocking(fd, False)
            self._loop = loop
            self._ended = anyio.Event()
            loop.add_reader(fd, self._readable)
        else:
            self._thread = threading.Thread(target=self._read_blocking, name="cubepi-mcp-stderr", daemon=True)
            self._thread.start()

    def _readable(self) -> None:
        try:
            chunk = os.read(self._read_fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            self._take(chunk)
        else:
            self._stop_reading()

    def _read_blocking(self) -> None:
        while chunk := _read(self._read_fd):
            self._take(chunk)
        self._stop_reading()

    def _stop_reading(self) -> None:
        if self._read_fd < 0:
            return
        if self._loop is not None:
            self._loop.remove_reader(self._read_fd)
        if self._on_line is not None and self._partial:
            self._emit(bytes(self._partial))
            self._partial.clear()
        os.close(self._read_fd)
        self._read_fd = -1
        if self._ended is not None:
            self._ended.set()

    def _take(self, chunk: bytes) -> None:
        with self._lock:
            self._buffer += chunk
            if len(self._buffer) > 2 * self.stderr_limit:
                del self._buffer[: len(self._buffer) - self.stderr_limit]
        if self._on_line is not None:
            self._feed(chunk)

    def _feed(self, chunk: bytes) -> None:
        self._partial += chunk
        while (end := self._partial.find(b"\n")) >= 0 or len(self._partial) >= MAX_LINE:
            whole = 0 <= end <= MAX_LINE
            cut = end if whole else MAX_LINE
            line = bytes(self._partial[:cut])
            del self._partial[: cut + whole]
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

    def close_errlog(self) -> None:
        """Drop our copy of the pipe's write end (the server keeps its own until it exits)."""
        if not self.errlog.closed:
            self.errlog.close()

    def tail(self) -> str:
        with self._lock:
            return bytes(self._buffer[-self.stderr_limit :]).decode("utf-8", errors="replace")

    async def stderr_tail(self, *, settled: bool = True) -> str:
        """What the server printed last; `settled`: once it is gone (waits briefly for the pipe's end)."""
        if settled:
            await self.drain(STDERR_SETTLE)
        return self.tail()

    async def drain(self, limit: float) -> None:
        """Wait (shielded) up to `limit` seconds for the pipe's end (the server, and whatever of its process
        group held the pipe, is gone), then stop reading it."""
        self.close_errlog()
        with anyio.move_on_after(limit, shield=True):
            if self._ended is not None:
                await self._ended.wait()
            elif self._thread is not None and self._thread.is_alive():
                await anyio.to_thread.run_sync(self._thread.join, limit, abandon_on_cancel=True)
        if self._loop is not None:
            self._stop_reading()


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 8192)
    except OSError:
        return b""


_SPAWNING: contextvars.ContextVar[StdioProcess | None] = contextvars.ContextVar("cubepi_stdio", default=None)


@contextlib.asynccontextmanager
async def open_stdio(params: StdioServerParameters, process: StdioProcess) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport for `params`, its process recorded in `process`; on exit, once the SDK's
    shutdown is done, what is left of the server's process group is ended (shielded)."""
    from mcp.client.stdio import stdio_client

    process.start_reading()
    running = False
    try:
        with tracking(process):
            async with stdio_client(params, errlog=process.errlog) as streams:
                try:
                    yield streams
                finally:
                    running = process.returncode is None
        _report_forced_exit(process, running)
    finally:
        try:
            await _end_group(process)
        finally:
            await process.drain(STDERR_SETTLE)


def _report_forced_exit(process: StdioProcess, running: bool) -> None:
    """Log a server that was still `running` when its stdin closed and did not exit within the SDK's
    grace period (a signal ended it). Nobody may be waiting for this shutdown (`_calls.ownership`): the log is
    where it is told."""
    from mcp.client.stdio import PROCESS_TERMINATION_TIMEOUT

    code = process.returncode
    if sys.platform == "win32" or code is None:
        return
    if running and not process.killed and code in (-signal.SIGTERM, -signal.SIGKILL):
        logger.warning(
            "%s did not exit within %g s of its stdin closing; it was ended with %s",
            process.name,
            PROCESS_TERMINATION_TIMEOUT,
            signal.Signals(-code).name,
        )


async def _end_group(info: StdioProcess) -> None:
    """SIGTERM to the server's process group, SIGKILL to what is left after the SDK's grace: the SDK's own
    tree kill, applied also when the server itself exited. The SDK starts the server in a new session, so
    its pid is the group's id, which no new process gets while a member of the group lives."""
    process = info.process
    if process is None or sys.platform == "win32":
        return
    from mcp.client.stdio import FORCE_KILL_TIMEOUT
    from mcp.os.posix.utilities import terminate_posix_process_tree

    with anyio.CancelScope(shield=True):
        await terminate_posix_process_tree(process, FORCE_KILL_TIMEOUT)


_installed = False


def _install() -> None:
    """Wrap the SDK's process factory (once; nothing is wrapped if the SDK has no such factory)."""
    global _installed
    if _installed:
        return
    _installed = True
    if sys.platform != "win32":
        wrap_process_factory(_tracked)


def _tracked(original: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """The SDK's process factory, made to record the processes cubepi spawns (`tracking`)."""

    async def create(*args: Any, **kwargs: Any) -> Any:
        info = _SPAWNING.get()
        try:
            with anyio.fail_after(SPAWN_LIMIT):
                process = await original(*args, **kwargs)
        finally:
            if info is not None:
                info.close_errlog()
        if info is None or not isinstance(process, Process):
            return process
        info.process = tracked = cast(Process, TrackedProcess(process, info.max_line, info.output_seen))
        return tracked

    return create


@contextlib.contextmanager
def tracking(info: StdioProcess) -> Iterator[StdioProcess]:
    """Within this block a server the SDK spawns (in this task) is recorded in `info`, which then drops
    its copy of the stderr pipe's write end."""
    _install()
    token = _SPAWNING.set(info)
    try:
        yield info
    finally:
        _SPAWNING.reset(token)
