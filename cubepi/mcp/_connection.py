"""Persistent connections: one MCP session kept open for an ``async with`` block, shared by its tools.

```python
async with StdioServer("uvx", ["mcp-server-git"]).connect() as conn:
    tools = await load_mcp_tools(conn, prefix="git")
    await tools[0].execute({...})     # rides the connection's session
# the session and its process are gone here; calling one of the tools raises UserError
```

Ownership: the SDK's transports are async context managers bound to the task that entered them, so the
session is opened, reopened (``auto_reconnect=True``) and closed by an *owner* task that the connection
starts in its ``async with`` block; calls from any task of that event loop only borrow it (JSON-RPC
multiplexes concurrent requests over the one session). The owner runs shielded and is told to close when
the block ends, so the server gets a full shutdown even when the block is cancelled.

Lists loaded from a connection follow the server's tool list: when the server says it changed
(``notifications/tools/list_changed`` on a handshake-era session; a ``subscriptions/listen`` stream the
owner holds on a 2026-07-28 one), a *follower* task refreshes every list loaded from the connection and
tells `on_tools_changed` what changed.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import logging
import math
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import anyio
import anyio.abc
import anyio.lowlevel

from ..errors import MCPError, MCPTimeoutError, UserError
from ..tools import UpdateCallback
from . import _errors
from ._http import HTTP_CLOSE_GRACE
from ._input import with_defaults
from ._open import open_session
from ._session import DEFAULT_TIMEOUT, SAME_AS_TIMEOUT, Attempt, Endpoint, Session, Timeouts
from ._toollist import MCPToolList, ToolChanges, merge_changes

if TYPE_CHECKING:
    from types import TracebackType

    from mcp import types as mcp_types
    from mcp.client.session import (
        ElicitationFnT,
        ListRootsFnT,
        LoggingFnT,
        MessageHandlerFnT,
        SamplingFnT,
    )
    from mcp.types import LoggingLevel

    from ._servers import Server

__all__ = ["DetachedConnection", "MCPConnection", "ToolsChangedCallback", "run_on"]

T = TypeVar("T")
logger = logging.getLogger("cubepi.mcp")

# Told what changed in the lists loaded from a connection when the server's tool list changed (sync or async).
ToolsChangedCallback: TypeAlias = Callable[[ToolChanges], "Awaitable[None] | None"]

# How many times in a row a ``subscriptions/listen`` stream that dropped is opened again.
LISTEN_RETRIES = 3


class MCPConnection:
    """A live MCP session to one server, open for the ``async with`` block; made by ``server.connect()``.

    Tools loaded with ``load_mcp_tools(conn, ...)`` call over it and never close it. With
    ``auto_reconnect=True``, a call that fails because the connection died reopens it and is sent once more:
    delivery is at-least-once, so a tool that changed something before the connection died runs twice.

    The lists loaded from it follow the server's tool list (see `follow`); `on_tools_changed` is told what
    changed each time the server says its tools changed.
    """

    def __init__(
        self,
        server: Server,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        startup_timeout: float | None = SAME_AS_TIMEOUT,
        auto_reconnect: bool = False,
        logging_callback: LoggingFnT | None = None,
        log_level: LoggingLevel | None = None,
        sampling_callback: SamplingFnT | None = None,
        elicitation_callback: ElicitationFnT | None = None,
        message_handler: MessageHandlerFnT | None = None,
        list_roots_callback: ListRootsFnT | None = None,
        on_tools_changed: ToolsChangedCallback | None = None,
    ) -> None:
        if getattr(server, "kind", None) not in ("stdio", "http"):
            raise UserError(f"a connection needs a StdioServer or an HttpServer, got {type(server).__name__}")
        if not isinstance(auto_reconnect, bool):
            raise UserError(f"auto_reconnect must be True or False, got {auto_reconnect!r}")
        if on_tools_changed is not None and not callable(on_tools_changed):
            raise UserError("on_tools_changed must be a function of the ToolChanges (sync or async)")
        server.check_travelled()
        self.server = server
        self.auto_reconnect = auto_reconnect
        self.endpoint = Endpoint(server, Timeouts.from_options(timeout, startup_timeout))
        callbacks = {
            "logging_callback": logging_callback,
            "log_level": log_level or ("debug" if logging_callback is not None else None),
            "sampling_callback": sampling_callback,
            "elicitation_callback": with_defaults(elicitation_callback) if elicitation_callback else None,
            "message_handler": self._on_message,
            "list_roots_callback": list_roots_callback,
        }
        self._message_handler = message_handler
        self._on_tools_changed = on_tools_changed
        self._session_kwargs = {key: value for key, value in callbacks.items() if value is not None}
        self._state = "new"  # -> "open" -> "closed"
        self._session: Session | None = None
        self._attempt: Attempt | None = None  # of the current session: its stderr
        self._failure: BaseException | None = None  # why the last (re)open failed
        self._generation = 0  # bumped by every successful open
        self._ready = anyio.Event()
        self._wake = anyio.Event()
        self._closing = False
        self._reopen_lock = anyio.Lock()
        self._task_group: anyio.abc.TaskGroup | None = None
        self._shield: anyio.CancelScope | None = None
        self._loop: object = None
        self.reconnects = 0  # how many times the session was reopened
        # Following the server's tool list: the lists loaded from this connection (weakly held), whether
        # anyone follows (a list or a callback), the current session's listen stream being ready, and a
        # change the follower has yet to handle.
        self._lists: weakref.WeakValueDictionary[int, MCPToolList] = weakref.WeakValueDictionary()
        self._list_ids = itertools.count()
        self._followed = anyio.Event()
        if on_tools_changed is not None:
            self._followed.set()
        self._listening = anyio.Event()
        self._changed = anyio.Event()
        self._follower: anyio.CancelScope | None = None

    # -- lifecycle -----------------------------------------------------------------------------------------

    def describe(self) -> str:
        return self.server.describe()

    @property
    def closed(self) -> bool:
        return self._state == "closed"

    def __repr__(self) -> str:
        return f"MCPConnection({self.server!r}, state={self._state!r})"

    async def __aenter__(self) -> MCPConnection:
        if self._state != "new":
            raise UserError(f"a connection is opened once; call {type(self.server).__name__}.connect() again")
        self._state = "open"
        self._loop = anyio.lowlevel.current_token().native_token
        group = anyio.create_task_group()
        await group.__aenter__()
        self._task_group = group
        group.start_soon(self._own, name=f"cubepi-mcp-connection {self.describe()}")
        self._follower = anyio.CancelScope()
        group.start_soon(self._follow_changes, self._follower, name=f"cubepi-mcp-follower {self.describe()}")
        with anyio.CancelScope(shield=True):
            await self._ready.wait()
        if self._failure is not None:
            failure = self._failure
            await self._close(None, None, None)
            _errors.reraise(failure)
        if self._followed.is_set():
            try:
                await self._until_listening()
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self._close(None, None, None)
                raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._close(exc_type, exc, tb)

    async def _close(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        self._state = "closed"
        self._closing = True
        self._wake.set()
        self._ready.set()
        if self._shield is not None and self.server.kind == "http":
            self._shield.deadline = anyio.current_time() + HTTP_CLOSE_GRACE
        if self._follower is not None:
            self._follower.cancel()
        group, self._task_group = self._task_group, None
        if group is not None:
            # The block's own exception is not handed to the task group (it would wrap it in an exception
            # group); it propagates unchanged once the owner has closed the session.
            await group.__aexit__(None, None, None)
        return None

    async def _own(self) -> None:
        """The owner task: open, hold until woken, close; again after each reconnect request. Never raises."""
        with anyio.CancelScope(shield=True) as self._shield:
            while not self._closing:
                await self._hold_one()

    async def _hold_one(self) -> None:
        attempt = Attempt()
        opened = False
        listening = self._listening = anyio.Event()
        try:
            async with open_session(self.endpoint, attempt, **self._session_kwargs) as session:
                opened = True
                self._session, self._attempt, self._failure = session, attempt, None
                self._generation += 1
                async with anyio.create_task_group() as watchers:
                    watchers.start_soon(self._listen, session, listening)
                    self._ready.set()
                    await self._wake.wait()
                    watchers.cancel_scope.cancel()
                self._session = None
        except BaseException as exc:
            self._session = None
            if not isinstance(exc, Exception) and not _errors.is_cancellation(exc):
                raise  # KeyboardInterrupt and the like
            if opened:  # closing a session whose server is gone: nothing to report
                logger.debug("closing the connection to %s: %r", self.describe(), exc)
                return
            self._failure = await attempt.error(exc, self.describe())
            self._ready.set()
            await self._wake.wait()  # the next reconnect request tries again
        finally:
            listening.set()

    # -- following the server's tool list ------------------------------------------------------------------

    async def follow(self, tools: MCPToolList) -> None:
        """Refresh `tools` (loaded from this connection) whenever the server says its tools changed.

        Returns once the connection listens for changes (on a 2026-07-28 server: its ``subscriptions/
        listen`` stream is acknowledged), so that no change made after this returns goes unnoticed.
        """
        self._lists[next(self._list_ids)] = tools
        self._followed.set()
        await self._until_listening()

    async def _until_listening(self) -> None:
        limit = self.endpoint.timeouts.list
        with anyio.move_on_after(math.inf if limit is None else limit) as scope:
            await self._listening.wait()
        if scope.cancelled_caught:
            logger.warning(
                "%s did not acknowledge subscriptions/listen within %g s; tool-list changes may be missed "
                "until it does",
                self.describe(),
                limit,
            )

    def _signal(self) -> None:
        """The server's tools changed: wake the follower (changes arriving meanwhile make one more pass)."""
        if self._followed.is_set():
            self._changed.set()

    def _modern(self) -> bool:
        protocol = self.endpoint.protocol
        return protocol is not None and protocol.stateless

    async def _on_message(self, message: Any) -> None:
        """The session's `message_handler`: handshake-era ``notifications/tools/list_changed`` wakes the
        follower (on 2026-07-28 the listen stream does); then the caller's `message_handler`, if any."""
        if getattr(message, "method", None) == "notifications/tools/list_changed" and not self._modern():
            self._signal()
        if self._message_handler is not None:
            await self._message_handler(message)
        else:
            await anyio.lowlevel.checkpoint()

    async def _listen(self, session: Session, listening: anyio.Event) -> None:
        """Watch the tool list of `session` (a task of the owner, cancelled with the session). On a
        2026-07-28 server that offers ``tools.listChanged``, hold a ``subscriptions/listen`` stream once
        someone follows; a handshake-era server sends its notifications unasked (`_on_message`). After
        a reconnect, the lists refresh: changes made while the connection was down were missed."""
        reopened = self._generation > 1
        protocol = session.endpoint.protocol
        discover = protocol.discover if protocol is not None else None
        try:
            if discover is None:
                listening.set()
                if reopened:
                    self._signal()
                return
            capability = discover.capabilities.tools
            if capability is None or not capability.list_changed:
                return
            await self._followed.wait()
            await self._hold_listen(session, listening, reopened)
        except Exception as exc:
            logger.warning("stopped following the tool list of %s: %s", self.describe(), exc)
        finally:
            listening.set()

    async def _hold_listen(self, session: Session, listening: anyio.Event, reopened: bool) -> None:
        from mcp.client.subscriptions import SubscriptionLost, listen

        losses = 0
        while True:
            try:
                async with listen(session.client, tools_list_changed=True) as subscription:
                    listening.set()
                    if reopened or losses:
                        self._signal()  # changes made before this stream was acknowledged were missed
                    async for _event in subscription:
                        losses = 0
                        self._signal()
                return  # the server ended the stream
            except SubscriptionLost:
                losses += 1
                if losses > LISTEN_RETRIES:
                    raise
                logger.debug("the listen stream of %s dropped; listening again", self.describe())

    async def _follow_changes(self, scope: anyio.CancelScope) -> None:
        """The follower task: after each change the server announced, refresh the lists, tell the caller."""
        with scope:
            while True:
                await self._changed.wait()
                self._changed = anyio.Event()
                await self._tools_changed()

    async def _tools_changed(self) -> None:
        found: list[ToolChanges] = []
        for tools in list(self._lists.values()):
            try:
                found.append(await tools.refresh(force=True))
            except Exception as exc:
                logger.warning("refreshing the tools of %s after a change failed: %s", self.describe(), exc)
        callback = self._on_tools_changed
        if callback is None:
            return
        try:
            outcome = callback(merge_changes(found))
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            logger.exception("on_tools_changed raised (ignored; the connection goes on)")

    # -- calls ---------------------------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._state == "new":
            raise UserError(
                f"the connection to {self.describe()} is not open; use it as `async with server.connect() "
                "as conn:`"
            )
        if self._state == "closed":
            raise UserError(
                f"the connection to {self.describe()} is closed: its tools work only inside its "
                "`async with` block (load the tools again, or use stateless tools)"
            )
        if anyio.lowlevel.current_token().native_token is not self._loop:
            raise UserError(
                f"the connection to {self.describe()} belongs to the event loop that opened it; call its "
                "tools with `await tool.execute(...)` in that loop (not execute_sync or another thread)"
            )

    async def _current(self) -> tuple[Session, int]:
        self._check_usable()
        session = self._session
        if session is None:
            if self._failure is not None and not self.auto_reconnect:
                raise self._failure
            return await self._reopen(self._generation)
        return session, self._generation

    async def _reopen(self, seen: int) -> tuple[Session, int]:
        """Reopen the session unless someone already did since generation `seen`; raise if it fails."""
        async with self._reopen_lock:
            self._check_usable()
            if self._generation == seen or self._session is None:
                self._ready = anyio.Event()
                wake, self._wake = self._wake, anyio.Event()
                wake.set()
                with anyio.CancelScope(shield=True):
                    await self._ready.wait()
                self._check_usable()
                if self._session is not None:
                    self.reconnects += 1
            session = self._session
            if session is None:
                assert self._failure is not None
                raise self._failure
            return session, self._generation

    async def run(
        self,
        work: Callable[[Session], Awaitable[T]],
        *,
        endpoint: Endpoint | None = None,
        tool_name: str | None = None,
        phase: str = "call",
    ) -> T:
        """Run `work` on a view of the live session whose timeouts are `endpoint`'s; one readable error.

        A transport failure (not a timeout, not an ``isError`` result) reopens the connection and runs
        `work` once more when ``auto_reconnect`` is on.
        """
        session, generation = await self._current()
        try:
            return await self._run_on(session, work, endpoint, tool_name, phase)
        except MCPTimeoutError:
            raise
        except MCPError as error:
            if not self.auto_reconnect:
                raise
            logger.info("connection to %s failed (%s); reconnecting", self.describe(), error)
            try:
                session, generation = await self._reopen(generation)
            except MCPError as reopen_error:
                raise reopen_error from error
        return await self._run_on(session, work, endpoint, tool_name, phase)

    async def _run_on(
        self,
        session: Session,
        work: Callable[[Session], Awaitable[T]],
        endpoint: Endpoint | None,
        tool_name: str | None,
        phase: str,
    ) -> T:
        assert self._attempt is not None
        attempt = Attempt(tool_name=tool_name, stderr=self._attempt.stderr, secrets=self._attempt.secrets)
        view = Session(session.client, endpoint or self.endpoint, attempt)
        try:
            return await work(view)
        except BaseException as exc:
            if _errors.is_cancellation(exc) or not isinstance(exc, Exception):
                raise
            hint = "the connection was lost" if _is_lost(exc) else None
            if not self.auto_reconnect and _is_transport(exc):
                advice = "connect(auto_reconnect=True) reopens a dead connection"
                hint = f"{hint}; {advice}" if hint else advice
            error = _errors.translate(
                exc,
                phase=phase,
                server=self.describe(),
                tool_name=tool_name,
                stderr=await attempt.stderr_tail() if attempt.stderr is not None else None,
                note=hint,
                secrets=attempt.secrets,
            )
            _errors.reraise(error)
            raise  # pragma: no cover

    def endpoint_for(self, timeouts: Timeouts) -> Endpoint:
        """The endpoint whose timeouts a loaded list's calls use (the connection's server and transport)."""
        return dataclasses.replace(self.endpoint, timeouts=timeouts, resources=None)

    async def list_tools(self, *, endpoint: Endpoint | None = None) -> list[mcp_types.Tool]:
        """Every tool the server lists (pagination followed)."""

        async def work(session: Session) -> list[mcp_types.Tool]:
            return await session.list_tools()

        return await self.run(work, endpoint=endpoint, phase="list")

    def caller(
        self, endpoint: Endpoint
    ) -> Callable[[str, dict[str, Any], UpdateCallback | None], Awaitable[Any]]:
        """A `ToolCaller` over this connection with `endpoint`'s timeouts."""
        return _ConnectionCaller(self, endpoint)

    def __reduce__(self) -> tuple[Any, ...]:
        """A connection does not travel: a pickled one is a `DetachedConnection` that refuses to call."""
        return DetachedConnection, (self.describe(),)


class DetachedConnection:
    """What a connection becomes in another process (tools loaded from it were pickled): calling raises."""

    def __init__(self, describe: str) -> None:
        self._describe = describe

    def describe(self) -> str:
        return self._describe

    async def run(self, work: Any, **options: Any) -> Any:
        tool = options.get("tool_name")
        what = f"tool {tool!r}" if tool else "this tool list"
        raise UserError(
            f"{what} was loaded from a live connection to {self._describe} (server.connect()), which stays "
            "in the process that opened it: a connection does not travel. To call from other processes, "
            "load stateless tools (load_mcp_tools(server) or the stdio / http loaders) and send those"
        )


async def run_on(connection: MCPConnection | DetachedConnection, work: Any, **options: Any) -> Any:
    """``connection.run(work, **options)``, as a function: a partial of it pickles with the connection
    (a bound method would take `MCPConnection.run` along, whatever the connection became)."""
    return await connection.run(work, **options)


@dataclasses.dataclass
class _ConnectionCaller:
    """A `ToolCaller` over a live connection (an object: pickled, it refuses to call)."""

    connection: MCPConnection | DetachedConnection
    endpoint: Endpoint

    async def __call__(self, name: str, arguments: dict[str, Any], on_update: UpdateCallback | None) -> Any:
        async def work(session: Session) -> mcp_types.CallToolResult:
            return await session.call_tool(name, arguments, on_update)

        return await self.connection.run(work, endpoint=self.endpoint, tool_name=name)


def _is_lost(exc: BaseException) -> bool:
    root = _errors.root_cause(exc)
    return isinstance(root, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream))


def _is_transport(exc: BaseException) -> bool:
    root = _errors.root_cause(exc)
    return not isinstance(root, (MCPError, UserError))
