"""Tasks a loaded tool list runs between calls (a shared HTTP client's keeper, a spare stdio server).

They belong to the event loop that started them, the list's *home*: spawned as system tasks of that loop,
so that when the loop ends (``asyncio.run`` cancels what is left) they close what they own. Only asyncio
loops are homes; under another backend, or from another loop than the home (``execute_sync`` runs its own),
calls simply do without (a client per call, no spare), which is always correct, only slower.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Coroutine
from typing import Any

import anyio

__all__ = ["Closings", "Home", "current_home"]


class Home:
    """One running asyncio loop, held weakly: spawn tasks in it, call into it from any thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = weakref.ref(loop)
        self._tasks: set[asyncio.Task[Any]] = set()

    def is_current(self) -> bool:
        """Whether the code calling this runs in this loop."""
        try:
            return asyncio.get_running_loop() is self._loop()
        except RuntimeError:
            return False

    def is_alive(self) -> bool:
        loop = self._loop()
        return loop is not None and not loop.is_closed()

    def spawn(
        self,
        coro: Coroutine[Any, Any, None],
        *,
        name: str,
        finish: bool = False,
        at_loop_end: Callable[[], None] | None = None,
    ) -> None:
        """Run `coro` as a task of this loop (from inside it). The loop's end cancels it, unless `finish`:
        then the loop's end calls `at_loop_end` (to make it finish soon) and waits for it (`_Finishing`)."""
        loop = self._loop()
        assert loop is not None
        if finish:
            task: asyncio.Task[None] = _Finishing(coro, loop=loop, name=name, at_loop_end=at_loop_end)
        else:
            task = loop.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def call_soon(self, callback: Callable[[], None]) -> bool:
        """Schedule `callback` in this loop from any thread (a finalizer); False when the loop is gone."""
        loop = self._loop()
        if loop is None or loop.is_closed():
            return False
        try:
            loop.call_soon_threadsafe(callback)
        except RuntimeError:  # closed between the check and the call
            return False
        return True


class _Finishing(asyncio.Task):  # type: ignore[type-arg]
    """A task that the loop's end does not cut short: it finishes, and the loop's end waits for it.

    When ``asyncio.run`` (or anyio's runner) ends, it cancels every task left, from outside the loop, then
    runs the loop until they are done. That cancellation, thrown into the SDK's nested context managers
    of a session being closed, leaves the session's DELETE unsent, and was seen to make the program hang
    for good (an exception whose context is itself, which contextlib then walks forever). This task
    refuses a cancellation that comes while its loop is not running and has the loop call `at_loop_end`
    instead, if set, to make it finish sooner. Cancel scopes (anyio's, which run inside the loop) still
    reach it, so it stays bounded by its own timeouts.
    """

    def __init__(
        self,
        coro: Coroutine[Any, Any, None],
        *,
        loop: asyncio.AbstractEventLoop,
        name: str,
        at_loop_end: Callable[[], None] | None,
    ) -> None:
        super().__init__(coro, loop=loop, name=name)
        self.at_loop_end = at_loop_end

    def cancel(self, msg: Any | None = None) -> bool:
        if not self.get_loop().is_running():
            if self.at_loop_end is not None:
                self.get_loop().call_soon(self.at_loop_end)  # it runs again, to wait for this task
            return False
        return super().cancel(msg)


class Closings:
    """Sessions of a list that go on closing in the background after their call returned (a limit ran out):
    the list's `aclose()` waits for them, so that nothing it started is left running."""

    def __init__(self) -> None:
        self._live: dict[anyio.Event, Home] = {}

    def add(self, closed: anyio.Event, home: Home) -> None:
        self._live[closed] = home

    def discard(self, closed: anyio.Event) -> None:
        self._live.pop(closed, None)

    async def wait(self) -> None:
        """Wait (shielded) until every closing of the current loop is done; those of another loop end on
        their own, bounded by their own shutdown."""
        with anyio.CancelScope(shield=True):
            for closed, home in list(self._live.items()):
                if home.is_current():
                    await closed.wait()


def current_home() -> Home | None:
    """The running loop as a home, or None when it cannot be one (not asyncio)."""
    try:
        return Home(asyncio.get_running_loop())
    except RuntimeError:
        return None
