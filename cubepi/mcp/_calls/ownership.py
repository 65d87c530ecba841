"""Who owns what runs beside a list's calls: a keeper task per list and event loop, and leased sessions.

A session whose end matters (a stdio process to stop, a handshake session to ``DELETE``) is opened and
closed by an owner task, and borrowed by one call (`Lease`): the call runs its requests from its own task
(JSON-RPC multiplexes over the SDK's streams), so that when its limit runs out it can return while the
owner goes on closing. The owner is a child of one of two task groups:

- the call's own (a tool without a keeper: under trio, or a list whose loop cannot have one): the call
  then returns once the session has closed;
- the list's `Keeper` in this asyncio loop: one task holding an anyio task group, which also owns the
  list's spare stdio server (``prespawn=True``), its shared HTTP client, and the child that closes that
  client's idle connections. It starts with the first call in a loop, and ends with `aclose()` (which
  waits for every child), with the list's garbage collection (a finalizer stops it from any thread), or
  with the loop's end: ``asyncio.run`` cancels it like every task, its task group cancels the children,
  and each child's close is shielded and bounded (a stdio server's process group ends with it).

A stdio call borrows its session and returns once its answer is in, leaving the server's shutdown to the
keeper (`Keeper.detaches`), in a loop that outlives its calls and while fewer than `MAX_CLOSING` are
closing; elsewhere the call waits for the close.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
import anyio.abc

from ..._calling import in_a_loop_of_one_call
from .._errors import Attempt, is_cancellation

if TYPE_CHECKING:
    import httpx2


__all__ = ["IDLE_GRACE", "MAX_CLOSING", "Keeper", "Lease"]

T = TypeVar("T")
S = TypeVar("S")  # what a lease's opener yields: a session (`_calls.session.Session`)
logger = logging.getLogger("cubepi.mcp")
# How long a list's idle connections stay open after its last call, for the next call to reuse.
IDLE_GRACE = 1.0
# How many stdio servers a list's calls may leave shutting down in one loop; past that a call waits for
# its own server's exit (a burst of calls to servers slow to exit keeps this many processes, not more).
MAX_CLOSING = 8

Opener = Callable[["Lease[S]"], contextlib.AbstractAsyncContextManager[S]]


class Lease(Generic[S]):
    """One session that an owner task opens, holds until released, and closes; one call borrows it.

    The owner runs shielded: only `interrupt` (the borrower went away, or the keeper stops) and, for an
    HTTP session once interrupted, `grace` seconds for its teardown cut it short. A start-up that runs out
    of time is reported at once (`failure`, `ready`), before the transport has closed.
    """

    def __init__(
        self,
        opener: Opener[S],
        *,
        tool_name: str | None = None,
        grace: float | None = None,
        detachable: bool = False,
    ) -> None:
        self.opener = opener
        self.attempt = Attempt(tool_name=tool_name, on_timeout=self._timed_out)
        self.grace = grace
        self.detachable = detachable  # its close may go on without the borrower (a stdio server's exit)
        self.detached = False  # the borrower returned before the close
        self.session: S | None = None
        self.failure: BaseException | None = None  # why it did not open, or what broke it while closing
        self.ready = anyio.Event()  # open, or failed to
        self.released = anyio.Event()
        self.closed = anyio.Event()
        self.opening = anyio.CancelScope()
        self._shield = anyio.CancelScope(shield=True)

    def _timed_out(self, error: BaseException) -> None:
        self.failure = self.failure or error
        self.ready.set()

    def interrupt(self) -> None:
        """Stop the start-up under way and release; an HTTP session gets `grace` seconds to end."""
        self.opening.cancel()
        self.released.set()
        if self.grace is not None:
            self._shield.deadline = min(self._shield.deadline, anyio.current_time() + self.grace)

    async def own(self, closed: Callable[[Lease[S]], None] | None = None) -> None:
        """The owner: open, hold until released, close, then tell `closed`. Never raises."""
        with self._shield:
            try:
                async with self.opener(self) as session:
                    self.session = session
                    self.ready.set()
                    await self.released.wait()
            except BaseException as exc:
                interrupted = self.opening.cancel_called or self.failure is not None
                if not (is_cancellation(exc) and interrupted):
                    self.failure = exc
                    if self.detached and not is_cancellation(exc):  # nobody waits for this close
                        logger.warning("closing a session after its call returned failed: %r", exc)
            finally:
                self.session = None
                self.ready.set()
                self.closed.set()
                if closed is not None:
                    closed(self)

    async def borrow(self, work: Callable[..., Awaitable[T]], *args: Any, wait: bool = True) -> T:
        """Run `work` on the session once it is open, then release it; raises what failed, raw.

        A cancelled borrower interrupts the start-up and waits (shielded) for the close. After `work`,
        `wait` waits for the close too (a used spare closes in the background instead); after a failure
        the caller decides how long to wait (`settle`).
        """
        try:
            await self.ready.wait()
            session = self.session
            if session is None:
                assert self.failure is not None
                raise self.failure
            result = await work(session, *args)
        except BaseException as exc:
            if is_cancellation(exc):
                self.interrupt()
                await self.settle()
            self.released.set()
            raise
        self.released.set()
        if wait:
            await self.settle()
        else:
            self.detached = not self.closed.is_set()
        return result

    async def settle(self, margin: float = math.inf) -> bool:
        """Wait (shielded) up to `margin` seconds for the close; True once closed."""
        with anyio.move_on_after(margin, shield=True):
            await self.closed.wait()
        return self.closed.is_set()


class Keeper:
    """The owner of one list's background work in one asyncio loop (see the module docstring)."""

    def __init__(self) -> None:
        self.group: anyio.abc.TaskGroup | None = None
        self.ready = anyio.Event()
        self.finished = False
        self.leases: set[Lease[Any]] = set()  # every lease a child owns, until closed
        self.spare: Lease[Any] | None = None
        self.home = False  # the loop that loaded the list
        self.one_call = in_a_loop_of_one_call()  # a loop that ends with the call that started it
        self.calls = 0  # calls made in this loop
        self._stop = anyio.Event()
        self._done = anyio.Event()
        self._client: httpx2.AsyncClient | None = None
        self._borrowed = 0
        self._released_at = 0.0
        self._wake = anyio.Event()  # the last borrower returned the client, or stop
        self._counting = False  # `_close_idle` counts down to a close: a release need not wake it
        self._gate = anyio.Lock(fast_acquire=True)  # no call starts while idle connections close

    def launch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the keeper's task in `loop` (the running one); `ready` is set once it owns its group. It
        starts in an empty `contextvars` context: it outlives the call that started it, whose scopes (a
        user's call context, a session's HTTP recording) are not its own."""
        contextvars.Context().run(loop.create_task, self._run(), name="cubepi-mcp-keeper")

    async def _run(self) -> None:
        try:
            async with anyio.create_task_group() as group:
                self.group = group
                group.start_soon(self._close_idle)
                self.ready.set()
                try:
                    await self._stop.wait()
                except BaseException:
                    # Only the loop's end cancels this task, and it has cancelled the SDK's own tasks too:
                    # no graceful shutdown can finish. The servers still held are killed, at once.
                    for lease in list(self.leases):
                        if lease.attempt.process is not None:
                            lease.attempt.process.kill_group()
                    raise
                for lease in list(self.leases):
                    if not lease.ready.is_set() or lease is self.spare:
                        lease.interrupt()
                group.cancel_scope.cancel()
        finally:
            self.group = None
            self.finished = True
            self.ready.set()
            with anyio.CancelScope(shield=True):
                if self._client is not None:
                    with contextlib.suppress(Exception):  # sockets already gone
                        await self._client.aclose()
            self._done.set()

    def stop(self) -> None:
        """End the keeper: spares and start-ups are interrupted, closing sessions finish (any task)."""
        self._stop.set()
        self._wake.set()

    async def aclose(self) -> None:
        """Stop, and wait (shielded) until every child is done."""
        self.stop()
        with anyio.CancelScope(shield=True):
            await self._done.wait()

    @property
    def lasting(self) -> bool:
        """Whether this loop outlives the calls made in it: the loop that loaded the list, or one that
        has made a call before this one, and not a loop run for one call (``execute_sync``). Only there
        does a call leave work behind (a spare to start, a server's shutdown to finish), which a loop that
        ends would cut short."""
        return not self.one_call and (self.home or self.calls >= 2)

    def detaches(self, lease: Lease[Any]) -> bool:
        """Whether a call may return before `lease` has closed: the keeper then owns the rest of its close
        (see `MAX_CLOSING`)."""
        if not lease.detachable or not self.lasting:
            return False
        return sum(other.detached for other in self.leases) < MAX_CLOSING

    async def settled(self) -> None:
        """Wait until no session is still closing after its call returned (for tests and benchmarks)."""
        while closing := [lease for lease in self.leases if lease.detached]:
            await closing[0].closed.wait()

    def own(self, lease: Lease[S]) -> Lease[S]:
        """Start `lease`'s owner as a child."""
        assert self.group is not None
        self.leases.add(lease)
        self.group.start_soon(lease.own, self.leases.discard)
        return lease

    # -- the shared HTTP client ------------------------------------------------------------------------------

    async def lend_client(self, make: Callable[[], httpx2.AsyncClient]) -> httpx2.AsyncClient:
        """The list's HTTP client in this loop, made on first use; `give_back` after the call. Its idle
        connections close `IDLE_GRACE` seconds after the last call (a call that follows within that
        reuses a warm connection); no call starts while they close."""
        if self._gate.locked():
            async with self._gate:
                pass
        if self._client is None:
            self._client = make()
        self._borrowed += 1
        return self._client

    def give_back(self) -> None:
        self._borrowed -= 1
        if self._borrowed == 0:
            self._released_at = anyio.current_time()
            if not self._counting:
                self._wake.set()

    async def _close_idle(self) -> None:
        """Close the idle connections `IDLE_GRACE` after the last release. Calls back to back do not wake
        this task: once counting, it wakes when the grace from the first release ends and counts on from
        the last one."""
        while not self._stop.is_set():
            await self._wake.wait()
            self._wake = anyio.Event()
            self._counting = True
            while not self._stop.is_set() and self._borrowed == 0 and self._client is not None:
                wait = self._released_at + IDLE_GRACE - anyio.current_time()
                if wait <= 0:
                    async with self._gate:
                        if self._borrowed == 0:
                            await self._client.close_idle()  # type: ignore[attr-defined]
                    break
                with anyio.move_on_after(wait):
                    await self._stop.wait()
            self._counting = False
