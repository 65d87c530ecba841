"""Following a server's tool list: the lists loaded from a connection refresh when the server says so.

A handshake-era server sends ``notifications/tools/list_changed`` unasked (`Follower.on_message`); on a
2026-07-28 server that offers ``tools.listChanged`` the connection holds a ``subscriptions/listen``
stream (`Follower.listen`, a child of the connection's task group, cancelled with its session). Each
announced change wakes `Follower.run` (another child), which refreshes every list loaded from the
connection and tells `on_tools_changed` what changed.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import math
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio

from .toollist import MCPToolList, ToolChanges, merge_changes

if TYPE_CHECKING:
    from .._calls.session import Session

__all__ = ["Follower", "ToolsChangedCallback"]

logger = logging.getLogger("cubepi.mcp")

# Told what changed in the lists loaded from a connection when the server's tool list changed (sync or async).
ToolsChangedCallback: TypeAlias = Callable[[ToolChanges], "Awaitable[None] | None"]
# How many times in a row a ``subscriptions/listen`` stream that dropped is opened again.
LISTEN_RETRIES = 3


class Follower:
    """The lists loaded from one connection (weakly held), and whether anyone follows (a list or a
    callback). `listening` is set once the current session listens (or cannot)."""

    def __init__(self, describe: str, on_tools_changed: ToolsChangedCallback | None) -> None:
        self.describe = describe
        self.on_tools_changed = on_tools_changed
        self.lists: weakref.WeakValueDictionary[int, MCPToolList] = weakref.WeakValueDictionary()
        self._ids = itertools.count()
        self.followed = anyio.Event()
        if on_tools_changed is not None:
            self.followed.set()
        self.listening = anyio.Event()
        self._changed = anyio.Event()

    async def follow(self, tools: MCPToolList, limit: float | None) -> None:
        """Refresh `tools` whenever the server says its tools changed; returns once the connection
        listens for changes, so that no change made after this returns goes unnoticed."""
        self.lists[next(self._ids)] = tools
        self.followed.set()
        await self.until_listening(limit)

    async def until_listening(self, limit: float | None) -> None:
        with anyio.move_on_after(math.inf if limit is None else limit) as scope:
            await self.listening.wait()
        if scope.cancelled_caught:
            logger.warning(
                "%s did not acknowledge subscriptions/listen within %g s; tool-list changes may be missed "
                "until it does",
                self.describe,
                limit,
            )

    def signal(self) -> None:
        """The server's tools changed: wake `run` (changes arriving meanwhile make one more pass)."""
        if self.followed.is_set():
            self._changed.set()

    def on_message(self, message: Any, stateless: bool) -> None:
        """A session's message: a handshake-era ``notifications/tools/list_changed`` is a change (on
        2026-07-28 the listen stream tells)."""
        if getattr(message, "method", None) == "notifications/tools/list_changed" and not stateless:
            self.signal()

    async def listen(self, session: Session, reopened: bool, scope: anyio.CancelScope, resumes: bool) -> None:
        """Watch the tool list of `session` (a task cancelled with it). After a reconnect the lists
        refresh: changes made while the connection was down were missed. `resumes`: a connection that
        reopens (``auto_reconnect``) listens again on its next session."""
        listening = self.listening
        discover = session.protocol.discover
        with scope:
            try:
                if discover is None:
                    listening.set()
                    if reopened:
                        self.signal()
                    return
                capability = discover.capabilities.tools
                if capability is None or not capability.list_changed:
                    return
                await self.followed.wait()
                await self._hold(session, listening, reopened)
            except Exception as exc:
                until = " until the connection reopens" if resumes else ""
                logger.warning("stopped following the tool list of %s%s: %s", self.describe, until, exc)
            finally:
                listening.set()

    async def _hold(self, session: Session, listening: anyio.Event, reopened: bool) -> None:
        from mcp.client.subscriptions import SubscriptionLost, listen

        losses = 0
        while True:
            try:
                async with listen(session.client, tools_list_changed=True) as subscription:
                    listening.set()
                    if reopened or losses:
                        self.signal()  # changes made before this stream was acknowledged were missed
                    async for _event in subscription:
                        losses = 0
                        self.signal()
                return  # the server ended the stream
            except SubscriptionLost:
                losses += 1
                if losses > LISTEN_RETRIES:
                    raise
                logger.debug("the listen stream of %s dropped; listening again", self.describe)

    async def run(self) -> None:
        """After each change the server announced, refresh the lists, tell the callback."""
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            found: list[ToolChanges] = []
            for tools in list(self.lists.values()):
                try:
                    found.append(await tools.refresh(force=True))
                except Exception as exc:
                    logger.warning("refreshing the tools of %s after a change failed: %s", self.describe, exc)
            if self.on_tools_changed is None:
                continue
            try:
                outcome = self.on_tools_changed(merge_changes(found))
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.exception("on_tools_changed raised (ignored; the connection goes on)")
