"""One stateless call: a session no earlier call used, closed whatever happens, one readable error.

On a 2026-07-28 server the session adopts the discover result found at load, so a call is one request
(over HTTP one POST on the list's shared client; over stdio a fresh process whose first line is the call).
On a handshake-era server it is a fresh initialized session. A call the server refuses for its protocol
version probes the server once more and is sent again.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import anyio
import anyio.lowlevel

from .._calling import lent_elicitation
from ..errors import MCPTimeoutError
from . import _errors
from ._background import Closings, Home, current_home
from ._http import HTTP_CLOSE_GRACE
from ._open import open_session
from ._session import (
    CLOSE_MARGIN,
    UNSUPPORTED_PROTOCOL_VERSION,
    Attempt,
    Endpoint,
    Interrupted,
    Phase,
    Session,
)

__all__ = ["Work", "run_fresh", "run_stateless"]

T = TypeVar("T")
Work = Callable[[Session], Awaitable[T]]


async def run_stateless(
    endpoint: Endpoint, work: Work[T], *, tool_name: str | None = None, **session_kwargs: object
) -> T:
    """Run `work` on a session no earlier call used; raise one readable `MCPError` (never a group).

    The tools of a loaded list run `work` on the list's spare session with ``prespawn=True`` (see
    `_prespawn`). A call refused with "unsupported protocol version" forgets the protocol found at load,
    probes again and runs `work` once more.
    """
    endpoint.server.check_travelled()
    resources = endpoint.resources
    if resources is not None:
        resources.check_open()
        if (
            resources.spares is not None
            and not session_kwargs
            and ("elicitation_callback" in endpoint.callbacks or lent_elicitation() is None)
        ):
            outcome = await resources.spares.run(work, tool_name=tool_name)
            if outcome is not resources.spares.NONE:
                return outcome  # type: ignore[return-value]
    try:
        return await run_fresh(endpoint, work, tool_name=tool_name, **session_kwargs)
    except _ProtocolRefused:
        endpoint.protocol = None
        return await run_fresh(endpoint, work, tool_name=tool_name, **session_kwargs)


class _ProtocolRefused(Exception):
    """The server refused the adopted protocol version (-32022): its protocol changed since load."""


async def run_fresh(
    endpoint: Endpoint, work: Work[T], *, tool_name: str | None = None, **session_kwargs: object
) -> T:
    """Open a fresh session, run `work`, close it; translate what fails.

    A 2026-07-28 session over Streamable HTTP whose discover result is known sends nothing but `work`'s
    requests and closes without a word to the server (no session to end): the caller's cancellation
    simply runs through it, aborting the request under way, which tells the server. Any other session
    has a shutdown worth waiting for: cancellation of the caller then interrupts `work` only, and the
    transport is closed under a shield (see `_run_shielded`).
    """
    attempt = Attempt(tool_name=tool_name)
    if not _closes_quietly(endpoint):
        resources = endpoint.resources
        home = current_home() if resources is not None else None
        if resources is not None and home is not None:
            return await _run_owned(endpoint, work, attempt, session_kwargs, home, resources.closings)
        return await _run_shielded(endpoint, work, attempt, session_kwargs)
    try:
        async with open_session(endpoint, attempt, **session_kwargs) as session:
            return await work(session)
    except BaseException as exc:
        await _raise_failure(exc, endpoint, attempt)


def _closes_quietly(endpoint: Endpoint) -> bool:
    """Whether a session to `endpoint` ends without telling the server anything: a 2026-07-28 session over
    Streamable HTTP (stateless: no process to stop, no session to DELETE)."""
    protocol = endpoint.protocol
    return (
        protocol is not None
        and protocol.stateless
        and endpoint.http_transport == "streamable-http"
        and endpoint.server.kind == "http"
    )


async def _raise_failure(
    exc: BaseException,
    endpoint: Endpoint,
    attempt: Attempt,
    *,
    settled: bool = True,
    phase: Phase | None = None,
) -> NoReturn:
    """Raise what the caller sees for `exc`: a cancellation as it is, `_ProtocolRefused` for a call the
    server refused for its adopted protocol version, else one readable error."""
    if _errors.is_cancellation(exc):
        raise exc
    leaves = _errors.leaves(exc)
    if any(_errors.sdk_error_code(leaf) == UNSUPPORTED_PROTOCOL_VERSION for leaf in leaves) and (
        endpoint.protocol is not None and getattr(endpoint.server, "protocol", "auto") == "auto"
    ):
        raise _ProtocolRefused() from exc
    _errors.reraise(await attempt.error(exc, endpoint.describe(), settled=settled, phase=phase))
    raise AssertionError("unreachable")  # pragma: no cover - reraise always raises


async def _run_shielded(
    endpoint: Endpoint, work: Work[T], attempt: Attempt, session_kwargs: dict[str, object]
) -> T:
    """`run_fresh` for a session whose shutdown matters (stdio, the handshake era, SSE, a first session).

    Cancellation of the caller interrupts `work` only: the transport is then closed under a shield, so a
    stdio server gets the SDK's full shutdown (stdin closed, grace period, SIGTERM/SIGKILL of its process
    group) and no process or socket outlives the call. The cancellation is re-raised afterwards.
    """
    body = anyio.CancelScope()
    shield = anyio.CancelScope(shield=True)
    grace = None if endpoint.server.kind == "stdio" else HTTP_CLOSE_GRACE
    done = False
    result: T | None = None

    async def relay_cancellation() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            body.cancel()
            attempt.interrupt()
            if grace is not None:
                shield.deadline = anyio.current_time() + grace

    try:
        async with anyio.create_task_group() as guard:
            guard.start_soon(relay_cancellation)
            try:
                with shield:
                    async with open_session(endpoint, attempt, **session_kwargs) as session:
                        with body:
                            result = await work(session)
                            done = True
            finally:
                guard.cancel_scope.cancel()
    except BaseException as exc:
        if not _errors.is_cancellation(exc) and any(
            isinstance(leaf, Interrupted) for leaf in _errors.leaves(exc)
        ):
            done = False  # the caller was cancelled while the session was opening: delivered below
        else:
            await _raise_failure(exc, endpoint, attempt)
    if not done:
        # `work` was interrupted because the caller was cancelled: deliver that cancellation now.
        await anyio.lowlevel.checkpoint()
        raise anyio.get_cancelled_exc_class()()
    return result  # type: ignore[return-value]


class _Owned:
    """One session run by a task of the list's home for a caller who waits for `work`'s outcome."""

    def __init__(self, attempt: Attempt) -> None:
        self.attempt = attempt
        self.body = anyio.CancelScope()
        self.worked = anyio.Event()  # `work` has an outcome (or the session failed before it could run)
        self.closed = anyio.Event()  # the transport has closed
        self.done = False
        self.result: Any = None
        self.failure: BaseException | None = None
        self.phase = attempt.phase  # the phase `failure` happened in (the owner goes on to close)
        attempt.on_timeout = self.fail

    def fail(self, exc: BaseException) -> None:
        if self.done:
            pass
        elif self.failure is None:
            self.failure = exc
            self.phase = self.attempt.phase
        elif _lost_connection(self.failure) and not _errors.is_cancellation(exc):
            self.failure = exc  # what broke the connection (a response past its bound), found on closing
        self.worked.set()

    def stop(self) -> None:
        """The caller was cancelled, or the loop ends: interrupt `work` or the start-up under way."""
        self.body.cancel()
        self.attempt.interrupt()

    async def own(self, endpoint: Endpoint, work: Work[Any], session_kwargs: dict[str, object]) -> None:
        """The owner task: open, run `work`, publish its outcome, close. Never raises."""
        try:
            async with open_session(endpoint, self.attempt, **session_kwargs) as session:
                with self.body:
                    try:
                        self.result = await work(session)
                        self.done = True
                    except Exception as exc:
                        self.fail(exc)
                self.worked.set()
        except BaseException as exc:
            if not _errors.is_cancellation(exc) or not self.body.cancel_called:
                self.fail(exc)
        finally:
            self.worked.set()
            self.closed.set()


def _lost_connection(exc: BaseException) -> bool:
    return all(_errors.is_connection_closed(leaf) for leaf in _errors.leaves(exc))


async def _run_owned(
    endpoint: Endpoint,
    work: Work[T],
    attempt: Attempt,
    session_kwargs: dict[str, object],
    home: Home,
    closings: Closings,
) -> T:
    """`run_fresh` for a tool of a loaded list whose session's shutdown matters: the session belongs to a
    task of the list's home, so that a limit that runs out is a bound for the caller.

    A call that succeeds, or fails, returns once its session has closed. A call whose limit runs out
    raises at most `CLOSE_MARGIN` seconds later: a server that ignores its stdin closing gets the SDK's
    full shutdown (grace period, SIGTERM/SIGKILL of its process group) in the background, and the list's
    `aclose()` (or the loop's end) waits for it. A cancelled caller interrupts `work` and waits for the
    close, as `_run_shielded` does.
    """
    owned = _Owned(attempt)
    closings.add(owned.closed, home)
    home.spawn(
        _own(owned, endpoint, work, session_kwargs, closings),
        name="cubepi-mcp-call",
        finish=True,
        at_loop_end=owned.stop,
    )
    try:
        await owned.worked.wait()
    except BaseException:
        owned.stop()
        with anyio.CancelScope(shield=True):
            await owned.closed.wait()
        raise
    if owned.done:
        with anyio.CancelScope(shield=True):
            await owned.closed.wait()
        return owned.result  # type: ignore[no-any-return]
    failure = owned.failure
    if failure is None or (_errors.is_cancellation(failure) and owned.body.cancel_called):
        raise AssertionError("a call ended with neither a result nor a failure")  # pragma: no cover
    # A limit that ran out is a bound: the session gets `CLOSE_MARGIN` to close. Any other failure waits
    # for the close, which tells what the server printed last and how it ended.
    with anyio.move_on_after(CLOSE_MARGIN if isinstance(failure, MCPTimeoutError) else math.inf, shield=True):
        await owned.closed.wait()
    failure = owned.failure or failure  # the close may have told what broke the connection
    await _raise_failure(failure, endpoint, attempt, settled=owned.closed.is_set(), phase=owned.phase)


async def _own(
    owned: _Owned, endpoint: Endpoint, work: Work[Any], session_kwargs: dict[str, object], closings: Closings
) -> None:
    try:
        await owned.own(endpoint, work, session_kwargs)
    finally:
        closings.discard(owned.closed)
