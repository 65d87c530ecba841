"""Stateless HTTP calls that return as soon as their result is in, while the list closes their sessions.

Closing an HTTP session (the SDK transport's teardown, then the DELETE that ends the session on the server)
costs about as much client time as the call itself, and the caller has no use for it. In the home loop of
the list's shared HTTP client (see `_toollist`), a stateless HTTP call therefore runs its whole session
(open, initialize, ``tools/call``, close) in an *owner* task of that loop (the SDK's transports are async
context managers bound to the task that entered them). The caller waits for the result only; the owner
goes on closing.

Nothing changes in what a call gets (a session no earlier call used) or in how a session closes (the same
code, the DELETE bounded by `HTTP_CLOSE_GRACE`). A caller cancelled mid-call waits for its session to
close, as an inline call does. `aclose()` of the list waits for every session still closing, and so does
the end of the loop: owner tasks are not cut short by it (see `_background._Finishing`), so every session
gets its DELETE. stdio calls stay inline: at the loop's end asyncio cancels the SDK's own tasks too, and
a server process whose shutdown was under way would be killed instead of shut down.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio

from ._background import Home

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["DetachedSessions"]

T = TypeVar("T")
logger = logging.getLogger("cubepi.mcp")

Work = Callable[["Session"], Awaitable[T]]
# A stateless run (`run_stateless` without its list's resources): opens a session, runs the work, closes it.
Run = Callable[[Work[T]], Awaitable[T]]


class _Handoff(Generic[T]):
    """What one owner task and its caller meet on."""

    def __init__(self) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.delivered = anyio.Event()  # the result (or the error) is in
        self.closed = anyio.Event()  # the owner has closed the session
        self.scope = anyio.CancelScope()  # cancelled when the caller is


class DetachedSessions:
    """The sessions of one list that are open or closing in its home loop."""

    def __init__(self) -> None:
        self._live: set[_Handoff[Any]] = set()

    async def run(self, home: Home, run: Run[T], work: Work[T]) -> T:
        """`run(work)` in an owner task of `home` (the running loop); return once `work` has returned."""
        handoff: _Handoff[T] = _Handoff()
        self._live.add(handoff)
        home.spawn(_own(handoff, run, work, self._live), name="cubepi-mcp-session", finish=True)
        try:
            await handoff.delivered.wait()
        except BaseException:
            # The caller was cancelled: interrupt the call and wait for its session to close, as inline.
            handoff.scope.cancel()
            with anyio.CancelScope(shield=True):
                await handoff.closed.wait()
            raise
        if handoff.error is not None:
            raise handoff.error
        return handoff.result  # type: ignore[no-any-return]

    async def wait_closed(self) -> None:
        """Wait until every session of the list has closed (each is bounded by its close grace)."""
        with anyio.CancelScope(shield=True):
            for handoff in list(self._live):
                await handoff.closed.wait()


async def _own(handoff: _Handoff[T], run: Run[T], work: Work[T], live: set[_Handoff[Any]]) -> None:
    async def delivering(session: Session) -> T:
        handoff.result = result = await work(session)
        handoff.delivered.set()
        return result

    try:
        with handoff.scope:  # the caller's cancellation ends here, once the session has closed
            await run(delivering)
    except Exception as exc:
        if handoff.delivered.is_set():  # the caller has its result: a failed close is nobody's error
            logger.debug("closing a session after its call failed: %s", exc)
        else:
            handoff.error = exc
    except BaseException as exc:  # KeyboardInterrupt and the like: the caller gets it too
        if not handoff.delivered.is_set():
            handoff.error = exc
        raise
    finally:
        handoff.delivered.set()
        handoff.closed.set()
        live.discard(handoff)
