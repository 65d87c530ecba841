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
import itertools
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.lowlevel

from . import _errors
from ._background import Home, current_home
from ._open import open_session
from ._session import CLOSE_MARGIN, Attempt, Endpoint, Session

if TYPE_CHECKING:
    from mcp import types as mcp_types

__all__ = ["SparePool"]

T = TypeVar("T")


class _Spare:
    """One prespawned session and the events its owner task and its one caller meet on."""

    def __init__(self) -> None:
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
        try:
            async with open_session(endpoint, self.attempt) as session:
                await warm_up(session)
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


class _NoSpare:
    def __repr__(self) -> str:
        return "NO_SPARE"


class SparePool:
    """At most one unclaimed spare per list, in the list's home loop; used spares closing behind it."""

    NONE = _NoSpare()  # what `run` returns when no spare could take the call

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
            return self.NONE
        spare = self._spare
        if spare is None:
            self.start()
            return self.NONE
        self._spare = None
        try:
            await spare.ready.wait()
            session = spare.session
            if session is None:
                return self.NONE  # it failed to start: a fresh session reports why (or works)
            attempt = spare.attempt
            attempt.tool_name = tool_name
            try:
                return await work(session)
            except BaseException as exc:
                if _errors.is_cancellation(exc):
                    raise
                spare.release.set()
                # A server that ignores its stdin closing takes seconds to end: not the caller's time.
                with anyio.move_on_after(CLOSE_MARGIN, shield=True):
                    await spare.closed.wait()
                settled = spare.closed.is_set()
                _errors.reraise(await attempt.error(exc, self._endpoint.describe(), settled=settled))
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


# The name a spare session's warm-up asks for (see `warm_up`); no listed tool has it.
WARM_UP_TOOL = "cubepi-warm-up"


async def warm_up(session: Session) -> None:
    """Run the server's code paths of a listing and of a call once, so that the call that takes this
    (spare) session does not pay for them; also checks the server still answers.

    A server's first requests run cold code: a node server's first ``tools/call`` takes several times as
    long as its later ones. This lists the tools (one page), then asks for a tool that none of them is
    named (`WARM_UP_TOOL`, numbered past any listed name). The server answers that no such tool exists:
    its request parsing and call dispatch have run, and no tool has. A transport failure raises.
    """
    from mcp import types
    from mcp.shared.exceptions import MCPError as SdkError

    with session.phase("list"):
        listed = await session.client.list_tools()
        names = {tool.name for tool in listed.tools}
        probe = next(name for n in itertools.count() if (name := f"{WARM_UP_TOOL}-{n}") not in names)
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=probe, arguments={}))
        try:
            result: mcp_types.CallToolResult = await session.client.send_request(
                request, types.CallToolResult
            )
        except SdkError as exc:  # "no such tool": what was asked for
            if _errors.is_transport_mcp_error(exc):
                raise
        else:
            del result


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
