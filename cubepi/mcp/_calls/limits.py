"""How long and how much: the timeouts by phase, a request's `Deadline`, `max_duration`, `max_response_bytes`.

Every limit is per call, never per read. `timeout` bounds each phase (start-up, listing, a call that hears
nothing), `startup_timeout` start-up alone, `max_duration` a whole call however much progress it reports;
`max_response_bytes` one message a server sends, counted as it arrives by the readers of `_transports.stdio`
and `_transports.http` (Streamable HTTP's events by the SDK's own per-event bound).
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio

from ...errors import MCPTimeoutError, UserError
from ...tools import ToolUpdate, UpdateCallback

if TYPE_CHECKING:
    import anyio.abc
    from mcp.shared.dispatcher import ProgressFnT

    from .._transports.base import ServerProcess

T = TypeVar("T")
REQUEST_TIMEOUT = -32001

__all__ = [
    "CLOSE_MARGIN",
    "DEFAULT_MAX_DURATION",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_TIMEOUT",
    "SAME_AS_SERVER",
    "SAME_AS_TIMEOUT",
    "Deadline",
    "Phase",
    "ResponseTooLarge",
    "Timeouts",
    "check_response_bytes",
    "progress_relay",
    "sse_limit_hit",
    "timeout_error",
]

Phase = Literal["startup", "initialize", "list", "call", "close"]

DEFAULT_TIMEOUT = 30.0
# The hard bound of one call, however much progress it reports: finite, so that no server can hold a
# caller forever; None (given explicitly) lifts it.
DEFAULT_MAX_DURATION = 600.0
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
# How long a call whose limit ran out waits for its session to close before it raises all the same (the
# list's keeper goes on closing it).
CLOSE_MARGIN = 0.05


class _Default:
    """A keyword default that means "the value of another setting" (its repr names it)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


# `startup_timeout`'s default: the value of `timeout`; the loaders' `max_response_bytes`: the server's.
SAME_AS_TIMEOUT: Any = _Default("SAME_AS_TIMEOUT")
SAME_AS_SERVER: Any = _Default("SAME_AS_SERVER")


def _seconds(name: str, value: float | None) -> float | None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
    ):
        raise UserError(f"{name} must be a positive number of seconds or None, got {value!r}")
    return None if value is None else float(value)


@dataclass(frozen=True)
class Timeouts:
    """Limits, in seconds (None: no limit), of each phase of a session.

    `startup` bounds spawning / connecting plus ``initialize`` (or ``server/discover``); `list` a listing;
    `call` a request that hears nothing: each progress notification pushes the deadline back by `call`,
    and `max_duration` caps the call however much progress arrives.
    """

    startup: float | None = DEFAULT_TIMEOUT
    list: float | None = DEFAULT_TIMEOUT
    call: float | None = DEFAULT_TIMEOUT
    max_duration: float | None = DEFAULT_MAX_DURATION
    startup_keyword: str = "timeout"  # the keyword that set `startup`, for error messages

    @classmethod
    def from_options(
        cls,
        timeout: float | None = DEFAULT_TIMEOUT,
        startup_timeout: float | None = SAME_AS_TIMEOUT,
        max_duration: float | None = DEFAULT_MAX_DURATION,
    ) -> Timeouts:
        """What the loaders' `timeout`, `startup_timeout` (default: `timeout`) and `max_duration` mean."""
        value = _seconds("timeout", timeout)
        if startup_timeout is SAME_AS_TIMEOUT:
            startup, keyword = value, "timeout"
        else:
            startup, keyword = _seconds("startup_timeout", startup_timeout), "startup_timeout"
        return cls(startup, value, value, _seconds("max_duration", max_duration), keyword)


def timeout_error(
    timeouts: Timeouts,
    server: str,
    phase: Phase,
    limit: float,
    *,
    tool_name: str | None = None,
    what: str = "timeout",
) -> MCPTimeoutError:
    """The `MCPTimeoutError` of `phase`, naming the limit that ran out and the keyword that sets it."""
    if phase == "call" and tool_name:
        action = f"calling tool {tool_name!r} on {server}"
    else:
        verb = {"initialize": "initializing", "list": "listing the tools of", "startup": "starting"}
        action = f"{verb.get(phase, phase)} {server}"
    if what == "max_duration":
        text = (
            f"{action} ran past max_duration={limit:g} s (phase: {phase}); raise max_duration for longer "
            "calls (None: no limit)"
        )
    elif phase == "call":
        text = f"{action} timed out: no result or progress for {limit:g} s (timeout; phase: {phase})"
    elif phase in ("startup", "initialize"):
        keyword = timeouts.startup_keyword
        if keyword == "timeout":
            advice = "timeout also bounds start-up: raise it, or give startup_timeout for start-up alone"
        else:
            advice = "raise startup_timeout for a slower start"
        text = f"{action} timed out after {limit:g} s ({keyword}; phase: {phase}); {advice}"
    else:
        text = f"{action} timed out after {limit:g} s (timeout; phase: {phase})"
    return MCPTimeoutError(text, phase=phase, limit=limit, tool_name=tool_name, server=server)


class Deadline:
    """The limit of one request: `idle` seconds of silence, never past `hard` (`Session.deadline` makes it).

    A new 2026-07-28 stdio `process` (`starting`: its start-up limit) has sent nothing before this
    request, its first: no probe goes beside it. Should it stay silent for `idle` (or its start-up limit,
    if shorter), `probe` (``server/discover``) is asked: any output of the process shows that it is up,
    and from then on the request gets `idle` seconds of silence. A process silent for its whole start-up
    limit ends the request as a start-up timeout (`missed_start`).
    """

    def __init__(
        self,
        idle: float,
        hard: float,
        *,
        starting: float | None = None,
        process: ServerProcess | None = None,
        probe: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.starting = starting
        self.process = process if starting is not None and process is not None and not process.heard else None
        self.probe = probe
        self.idle, self.hard = idle, hard
        self.started = anyio.current_time()
        self.start_failed = False  # the probe went unanswered for the whole start-up limit
        self.scope = anyio.CancelScope(deadline=min(self.started + idle + (starting or 0), hard))

    @property
    def watching(self) -> bool:
        return self.process is not None

    async def run(self, request: Callable[[], Awaitable[T]]) -> T:
        """`request()`, with `_probe` started beside it once the process has been silent for `idle` (or
        its start-up limit, if shorter); what `request` raises comes out as it is (no group)."""
        assert self.process is not None and self.starting is not None
        self.process.on_output = self.heard
        outcome: list[T] = []
        failure: list[BaseException] = []
        try:
            with _Later() as later:
                async with anyio.create_task_group() as group:
                    later.start(group, min(self.idle, self.starting), self._probe)
                    try:
                        outcome.append(await request())
                    except BaseException as exc:  # re-raised below, outside the task group
                        failure.append(exc)
                    finally:
                        later.cancel()
                        group.cancel_scope.cancel()
        finally:
            self.process.on_output = None
        if failure:
            raise failure[0]
        return outcome[0]

    def heard(self) -> None:
        """The new process wrote its first output: from now on the request gets its own limit."""
        if not self.scope.cancel_called:
            self.scope.deadline = min(anyio.current_time() + self.idle, self.hard)

    async def _probe(self) -> None:
        from mcp.shared.exceptions import MCPError as SdkError

        assert self.starting is not None and self.process is not None and self.probe is not None
        with anyio.move_on_after(self.started + self.starting - anyio.current_time()) as waiting:
            while not self.process.heard:
                try:
                    await self.probe()
                except SdkError as exc:
                    if exc.code == REQUEST_TIMEOUT:  # the SDK's own bound on one probe: ask again
                        continue
                return  # an answer, or the connection closed (the request reports it)
        if waiting.cancelled_caught and not self.process.heard:
            self.start_failed = True
            self.scope.cancel()

    def missed_start(self) -> float | None:
        """The start-up limit, when the request ended before the new process wrote anything."""
        return self.starting if self.process is not None and not self.process.heard else None


class _Later:
    """`work` started in a task group after a delay (`start`). On asyncio a loop timer waits, so that a
    request answered in time costs no task (most requests); elsewhere (trio) a task sleeps first. Used as
    ``with _Later() as later:`` around the group: on exit, work whose task was cancelled before its first
    step (as the loop's end cancels every task) is closed, not left "never awaited"."""

    def __init__(self) -> None:
        self._timer: asyncio.TimerHandle | None = None
        self._work: Coroutine[Any, Any, None] | None = None

    def __enter__(self) -> _Later:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._work is not None:
            self._work.close()  # a finished coroutine is left as it is

    def start(
        self, group: anyio.abc.TaskGroup, delay: float, work: Callable[[], Coroutine[Any, Any, None]]
    ) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            group.start_soon(_after, delay, work)
            return
        self._timer = loop.call_later(delay, self._start, group, work)

    def _start(self, group: anyio.abc.TaskGroup, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self._work = work()
        group.start_soon(_given, self._work)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


def _given(work: Coroutine[Any, Any, None]) -> Coroutine[Any, Any, None]:
    return work


async def _after(delay: float, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
    await anyio.sleep(delay)
    await work()


def progress_relay(
    scope: anyio.CancelScope, idle: float, hard: float, on_update: UpdateCallback | None
) -> ProgressFnT:
    """Progress notifications push `scope`'s deadline back by `idle` (never past `hard`), then reach
    `on_update`. Always asked for: progress is what keeps a long call alive."""

    async def relay(progress: float, total: float | None, message: str | None) -> None:
        if not scope.cancel_called:
            scope.deadline = min(anyio.current_time() + idle, hard)
        if on_update is not None:
            outcome = on_update(ToolUpdate(progress=progress, total=total, message=message))
            if inspect.isawaitable(outcome):
                await outcome

    return relay


def check_response_bytes(value: object) -> int | None:
    """`value` as a `max_response_bytes` setting: a positive number of bytes, or None (no limit)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UserError(f"max_response_bytes must be a positive number of bytes or None, got {value!r}")
    return value


def _size(limit: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if limit >= scale:
            return f"{limit / scale:.4g} {unit}"
    return f"{limit} bytes"


class ResponseTooLarge(Exception):
    """A server's response (a stdio line, an HTTP body, an SSE event) went past `max_response_bytes`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"the server's response exceeded max_response_bytes={limit} ({_size(limit)}); raise it on the "
            "loader or the server config (max_response_bytes=None: no limit) if the server is trusted"
        )


# The message of httpx2's SSE event bound (which cubepi sets to `max_response_bytes`); the SDK passes it
# on as text only. Pinned by tests/mcp/test_sdk_wording.py.
_SSE_LIMIT = re.compile(r"event exceeded the (\d+) byte limit")


def sse_limit_hit(message: str) -> ResponseTooLarge | None:
    """The `ResponseTooLarge` an SDK error message reports (an SSE event past its bound), else None."""
    found = _SSE_LIMIT.search(message)
    return ResponseTooLarge(int(found.group(1))) if found else None
