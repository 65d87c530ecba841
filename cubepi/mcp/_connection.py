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
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

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

__all__ = ["MCPConnection"]

T = TypeVar("T")
logger = logging.getLogger("cubepi.mcp")


class MCPConnection:
    """A live MCP session to one server, open for the ``async with`` block; made by ``server.connect()``.

    Tools loaded with ``load_mcp_tools(conn, ...)`` call over it and never close it. With
    ``auto_reconnect=True``, a call that fails because the connection died reopens it and is sent once more:
    delivery is at-least-once, so a tool that changed something before the connection died runs twice.
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
    ) -> None:
        if getattr(server, "kind", None) not in ("stdio", "http"):
            raise UserError(f"a connection needs a StdioServer or an HttpServer, got {type(server).__name__}")
        if not isinstance(auto_reconnect, bool):
            raise UserError(f"auto_reconnect must be True or False, got {auto_reconnect!r}")
        self.server = server
        self.auto_reconnect = auto_reconnect
        self.endpoint = Endpoint(server, Timeouts.from_options(timeout, startup_timeout))
        callbacks = {
            "logging_callback": logging_callback,
            "log_level": log_level or ("debug" if logging_callback is not None else None),
            "sampling_callback": sampling_callback,
            "elicitation_callback": with_defaults(elicitation_callback) if elicitation_callback else None,
            "message_handler": message_handler,
            "list_roots_callback": list_roots_callback,
        }
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
        with anyio.CancelScope(shield=True):
            await self._ready.wait()
        if self._failure is not None:
            failure = self._failure
            await self._close(None, None, None)
            _errors.reraise(failure)
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
        try:
            async with open_session(self.endpoint, attempt, **self._session_kwargs) as session:
                opened = True
                self._session, self._attempt, self._failure = session, attempt, None
                self._generation += 1
                self._ready.set()
                await self._wake.wait()
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
        attempt = Attempt(tool_name=tool_name, stderr=self._attempt.stderr)
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

        async def call(name: str, arguments: dict[str, Any], on_update: UpdateCallback | None) -> Any:
            async def work(session: Session) -> mcp_types.CallToolResult:
                return await session.call_tool(name, arguments, on_update)

            return await self.run(work, endpoint=endpoint, tool_name=name)

        return call


def _is_lost(exc: BaseException) -> bool:
    root = _errors.root_cause(exc)
    return isinstance(root, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream))


def _is_transport(exc: BaseException) -> bool:
    root = _errors.root_cause(exc)
    return not isinstance(root, (MCPError, UserError))
