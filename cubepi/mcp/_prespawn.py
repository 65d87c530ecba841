"""`prespawn=True`: one spare stdio server, started and initialized ahead of the next call.

A stateless stdio call spends nearly all its time starting the server. With prespawn the list keeps one
spare session ready: a call takes it (a process and a session no earlier call used), runs ``tools/call``
on it, and hands it back to be shut down in the background, while the next spare starts.

Ownership: the SDK's stdio transport is an async context manager bound to the task that entered it, so
each spare is opened, and later closed, by its own *owner* task, a task of the list's home loop (see
`_background`). The call only borrows the initialized session (JSON-RPC over memory streams works from any
task of that loop). Bounds: at most one spare waits per list; every used session is closed as soon as its
call ends, with the SDK's full shutdown (stdin closed, grace period, SIGTERM/SIGKILL of the process group).
Spares are shut down gracefully by `aclose()` and when the list and its tools are garbage-collected. When
the home loop ends with spares still open, their owners are not cancelled but stopped (`_Spare.stop`:
released, a start-up under way interrupted); asyncio has cancelled the SDK's reader tasks by then, so the
shutdown cannot complete and asyncio kills the process: never an orphan, but not graceful.
"""

from __future__ import annotations

import atexit
import dataclasses
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.lowlevel

from . import _errors
from ._background import Home, current_home

if TYPE_CHECKING:
    from ._session import Endpoint, Session
    from ._toollist import _NoSpare

__all__ = ["SparePool"]

T = TypeVar("T")


class _Spare:
    """One prespawned session and the events its owner task and its one caller meet on."""

    def __init__(self) -> None:
        from ._session import Attempt

        self.attempt = Attempt()
        self.session: Session | None = None
        self.failure: BaseException | None = None
        self.ready = anyio.Event()  # initialized, or failed
        self.release = anyio.Event()  # the call is done (or the pool closes): shut it down
        self.closed = anyio.Event()  # the owner has closed the transport
        self.is_closed = False

    def stop(self) -> None:
        """Shut it down as soon as it can: released, and its initialize (if under way) interrupted."""
        self.release.set()
        self.attempt.interrupt()

    async def own(self, endpoint: Endpoint) -> None:
        """The owner task: open, wait for release, close. Never raises."""
        from ._session import open_session

        try:
            async with open_session(endpoint, self.attempt) as session:
                await session.warm_up()
                self.session = session
                self.ready.set()
                await self.release.wait()
        except BaseException as exc:  # a server that fails to start: the claiming call opens a fresh one
            self.failure = exc
        finally:
            self.ready.set()
            self.session = None
            self.is_closed = True
            self.closed.set()


class SparePool:
    """At most one unclaimed spare per list, in the list's home loop; used spares closing behind it."""

    def __init__(self, endpoint: Endpoint) -> None:
        # Owner tasks get a copy of the endpoint that does not lead back here, so that dropping the
        # list (and its tools) lets this pool be collected, and its finalizer reap the spares.
        self._endpoint = dataclasses.replace(endpoint, resources=None)
        self._home: Home | None = None
        self._candidate: Home | None = None  # a loop that called while the home was gone
        self._spare: _Spare | None = None
        self._live: set[_Spare] = set()  # every spare whose owner has not finished
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self.closed = False
        self.armed = False  # set once the list is loaded: the listing itself does not start a spare
        self.spawned = 0  # spares started (for tests)
        _POOLS.add(self)

    # -- spares --------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start a spare now if none waits (called in the home loop, or makes the current loop the home)."""
        if self.closed or not self.armed:
            return
        if self._home is None or not self._home.is_alive():
            self._spare = None  # a spare of an ended loop ended with it
            self._home = current_home()
            if self._home is None:
                return
            self._rearm()
        if self._spare is not None:
            return
        if not self._home.is_current():
            return
        spare = _Spare()
        self._spare = spare
        self._live.add(spare)
        self.spawned += 1
        # The task must not refer to the pool (it would keep it, and the spares, alive forever).
        self._home.spawn(
            _own(spare, self._endpoint, self._live),
            name="cubepi-mcp-spare",
            finish=True,
            at_loop_end=spare.stop,
        )

    def _rearm(self) -> None:
        if self._finalizer is not None:
            self._finalizer.detach()
        assert self._home is not None
        self._finalizer = weakref.finalize(self, _release_all, self._home, self._live)

    async def wait_ready(self) -> bool:
        """Wait until the waiting spare is initialized; True if one is ready (for tests and benchmarks)."""
        spare = self._spare
        if spare is None:
            return False
        await spare.ready.wait()
        return spare.session is not None

    # -- calls ---------------------------------------------------------------------------------------------

    async def run(self, work: Callable[[Session], Awaitable[T]], *, tool_name: str | None) -> T | _NoSpare:
        """Run `work` on the spare (waiting for it if it is still starting), or say there is none."""
        from ._toollist import NO_SPARE

        home = self._home
        if home is None or not home.is_current():
            if home is None or not home.is_alive():
                # The home loop has ended. A loop that calls twice becomes the new home (its next call
                # finds a spare); one that calls once (``execute_sync`` runs a loop per call) does not,
                # or every such call would start a spare only to see it killed with its loop.
                candidate = self._candidate
                if candidate is not None and candidate.is_current():
                    self._candidate = None
                    self.start()
                else:
                    self._candidate = current_home()
            return NO_SPARE
        spare = self._spare
        if spare is None:
            self.start()
            return NO_SPARE
        self._spare = None
        try:
            await spare.ready.wait()
            session = spare.session
            if session is None:
                return NO_SPARE  # it failed to start: a fresh session reports why (or works)
            attempt = spare.attempt
            attempt.tool_name = tool_name
            try:
                return await work(session)
            except BaseException as exc:
                if _errors.is_cancellation(exc):
                    raise
                spare.release.set()
                error = _errors.translate(
                    exc,
                    phase=attempt.phase,
                    server=self._endpoint.describe(),
                    tool_name=tool_name,
                    stderr=await attempt.stderr_tail(),
                    note=attempt.note,
                )
                _errors.reraise(error)
                raise  # pragma: no cover - reraise always raises
        finally:
            spare.release.set()
            # The next spare starts now: spawning a process costs the loop some milliseconds, which
            # should not land inside this call.
            self.start()

    async def aclose(self) -> None:
        """Reap every spare, waiting (from the home loop) until their processes are gone."""
        self.closed = True
        self._spare = None
        if self._finalizer is not None:
            self._finalizer.detach()
        live = list(self._live)
        home = self._home
        if home is None or not live:
            return
        if home.is_current():
            for spare in live:
                spare.release.set()
            with anyio.CancelScope(shield=True):
                for spare in live:
                    await spare.closed.wait()
        else:
            _release_all(home, set(live))


async def _own(spare: _Spare, endpoint: Endpoint, live: set[_Spare]) -> None:
    try:
        await spare.own(endpoint)
    finally:
        live.discard(spare)


def _release_all(home: Home, live: set[_Spare]) -> None:
    """Tell every live spare to shut down (from any thread: a finalizer, atexit)."""

    def release() -> None:
        for spare in list(live):
            spare.release.set()

    home.call_soon(release)


_POOLS: weakref.WeakSet[SparePool] = weakref.WeakSet()


@atexit.register
def _reap_at_exit() -> None:  # pragma: no cover - exercised by the subprocess test
    """Last resort: ask home loops still running (in other threads) to close their spares."""
    for pool in list(_POOLS):
        if pool._home is not None and pool._live:
            _release_all(pool._home, pool._live)
