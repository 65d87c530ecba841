"""Persistent connections: one MCP session kept open for an ``async with`` block, shared by its tools.

```python
async with StdioServer("uvx", ["mcp-server-git"]).connect() as conn:
    tools = await load_mcp_tools(conn, prefix="git")
    await tools[0].execute({...})     # rides the connection's session
# the session and its process are gone here; calling one of the tools raises UserError
```

Ownership: the connection's ``async with`` block holds a task group. Its session is a `Lease`
(`_calls.ownership`) whose owner is a child of that group: opened at the block's start, reopened
(``auto_reconnect=True``) and closed at its end, shielded, so the server gets a full shutdown even when the
block is cancelled. Calls from any task of that event loop borrow the session (JSON-RPC multiplexes concurrent
requests).

Lists loaded from a connection follow the server's tool list: when the server says it changed
(``notifications/tools/list_changed`` on a handshake-era session; a ``subscriptions/listen`` stream on a
2026-07-28 one, held by a child of the group), a *follower* child refreshes every list loaded from the
connection and tells `on_tools_changed` what changed.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.lowlevel

from ..errors import MCPError, MCPTimeoutError, UserError
from ._calls.elicitation import with_defaults
from ._calls.limits import DEFAULT_TIMEOUT, SAME_AS_TIMEOUT, Timeouts
from ._calls.ownership import Lease
from ._calls.protocol import Learned
from ._calls.runner import Runner
from ._calls.session import Opening, Session
from ._errors import Attempt, is_lost, mcp_errors, reraise, root_cause
from ._lists.following import Follower, ToolsChangedCallback
from ._lists.offers import PromptMessage, ServerOffers
from ._lists.toollist import MCPToolList
from ._sdk import ensure_sdk
from ._transports.choice import transport_for

if TYPE_CHECKING:
    from types import TracebackType

    from mcp import types as mcp_types
    from mcp.client.session import ElicitationFnT, ListRootsFnT, LoggingFnT, MessageHandlerFnT, SamplingFnT
    from mcp.types import LoggingLevel

    from ..tools import Content
    from ._configs import ServerConfig
    from ._lists.building import Lister

__all__ = ["DetachedConnection", "MCPConnection", "ToolsChangedCallback"]

logger = logging.getLogger("cubepi.mcp")


class MCPConnection:
    """A live MCP session to one server, open for the ``async with`` block; made by ``server.connect()``.

    Tools loaded with ``load_mcp_tools(conn, ...)`` call over it and never close it. With
    ``auto_reconnect=True``, a call that fails because the connection died reopens it and is sent once more:
    delivery is at-least-once, so a tool that changed something before the connection died runs twice.
    The lists loaded from it follow the server's tool list; `on_tools_changed` is told what changed.
    """

    def __init__(
        self,
        server: ServerConfig,
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
        self.transport = transport_for(server)
        self.auto_reconnect = auto_reconnect
        self.timeouts = Timeouts.from_options(timeout, startup_timeout)
        callbacks = {
            "logging_callback": logging_callback,
            "log_level": log_level or ("debug" if logging_callback is not None else None),
            "sampling_callback": sampling_callback,
            "elicitation_callback": with_defaults(elicitation_callback) if elicitation_callback else None,
            "message_handler": self._on_message,
            "list_roots_callback": list_roots_callback,
        }
        self._kwargs = {key: value for key, value in callbacks.items() if value is not None}
        self._message_handler = message_handler
        self._follower = Follower(server.describe(), on_tools_changed)
        self._learned = Learned()
        self._state = "new"  # -> "open" -> "closed"
        self._lease: Lease[Session] | None = None
        self._opening: Lease[Session] | None = None  # still starting: the block end interrupts it
        self._watching: anyio.CancelScope | None = None  # the current session's listen stream
        self._failure: BaseException | None = None  # why the last (re)open failed
        self._generation = 0  # bumped by every successful open
        self._reopen_lock = anyio.Lock()
        self._group: anyio.abc.TaskGroup | None = None
        self._loop: object = None
        self.reconnects = 0  # how many times the session was reopened

    def describe(self) -> str:
        return self.server.describe()

    @property
    def closed(self) -> bool:
        return self._state == "closed"

    def __repr__(self) -> str:
        return f"MCPConnection({self.server!r}, state={self._state!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        """A connection does not travel: a pickled one is a `DetachedConnection` that refuses to call."""
        return DetachedConnection, (self.describe(),)

    # -- lifecycle -----------------------------------------------------------------------------------------

    async def __aenter__(self) -> MCPConnection:
        if self._state != "new":
            raise UserError(f"a connection is opened once; call {type(self.server).__name__}.connect() again")
        ensure_sdk()
        self._state = "open"
        self._loop = anyio.lowlevel.current_token().native_token
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        group.start_soon(self._follower.run, name=f"cubepi-mcp-follower {self.describe()}")
        try:
            with anyio.CancelScope(shield=True):
                await self._open()
            if self._failure is not None:
                reraise(self._failure)
            if self._follower.followed.is_set():
                await self._follower.until_listening(self.timeouts.list)
        except BaseException:
            await self._close()  # the task group's exit waits for its children: the owner closes shielded
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._close()

    async def _close(self) -> None:
        self._state = "closed"
        self._drop()
        group, self._group = self._group, None
        if group is not None:
            group.cancel_scope.cancel()  # the follower; the session's owner is shielded and closes
            # The block's own exception is not handed to the task group (it would wrap it in a group).
            await group.__aexit__(None, None, None)

    def _drop(self) -> None:
        """Release the current session (its owner closes it; an HTTP one within `HTTP_CLOSE_GRACE`)."""
        lease, self._lease = self._lease, None
        if self._watching is not None:
            self._watching.cancel()
        for held in (lease, self._opening):
            if held is not None:
                held.interrupt()

    async def _open(self) -> None:
        """Open a session, owned by a child of the block's group; or keep why it failed in `_failure`.
        Nothing opens once the block has ended (a reopen can outlast it)."""
        if self._group is None:
            return
        lease = Opening(
            self.server, self.timeouts, self._learned, self._kwargs, self.transport, learn=self._learn
        ).leased()
        self._follower.listening = anyio.Event()
        self._group.start_soon(lease.own, name=f"cubepi-mcp-connection {self.describe()}")
        self._opening = lease
        try:
            await lease.ready.wait()
        finally:
            self._opening = None
        if self._state == "closed":
            lease.interrupt()
            return
        if lease.session is None:
            assert lease.failure is not None
            settled = await lease.settle()
            self._failure = await lease.attempt.error(lease.failure, self.describe(), settled=settled)
            self._follower.listening.set()
            return
        self._lease, self._failure = lease, None
        self._generation += 1
        self._watching = anyio.CancelScope()
        reopened = self._generation > 1
        self._group.start_soon(
            self._follower.listen, lease.session, reopened, self._watching, self.auto_reconnect
        )

    def _learn(self, session: Session) -> None:
        self._learned = dataclasses.replace(
            self._learned, protocol=session.protocol, transport=session.transport
        )

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

    async def _current(self) -> tuple[Lease[Session], int]:
        self._check_usable()
        lease = self._lease
        if lease is None:
            if self._failure is not None and not self.auto_reconnect:
                raise self._failure
            return await self._reopen(self._generation)
        return lease, self._generation

    async def _reopen(self, seen: int) -> tuple[Lease[Session], int]:
        """Reopen the session unless someone already did since generation `seen`; raise if it fails."""
        async with self._reopen_lock:
            self._check_usable()
            if self._generation == seen or self._lease is None:
                old = self._lease
                self._drop()
                with anyio.CancelScope(shield=True):
                    if old is not None:
                        await old.settle()
                    await self._open()
                self._check_usable()
                if self._lease is not None:
                    self.reconnects += 1
            if self._lease is None:
                assert self._failure is not None
                raise self._failure
            return self._lease, self._generation

    async def run(
        self,
        work: Callable[..., Awaitable[Any]],
        *args: Any,
        view: Callable[[Session, Attempt], Session],
        tool_name: str | None,
    ) -> Any:
        """`await work(session, *args)` on a `view` of the live session; one readable error.

        A transport failure (not a timeout, not an ``isError`` result) reopens the connection and runs
        `work` once more when ``auto_reconnect`` is on.
        """
        lease, generation = await self._current()
        try:
            return await self._run_on(lease, work, args, view, tool_name)
        except MCPTimeoutError:
            raise
        except MCPError as error:
            if not self.auto_reconnect:
                raise
            logger.info("connection to %s failed (%s); reconnecting", self.describe(), error)
            try:
                lease, generation = await self._reopen(generation)
            except MCPError as reopen_error:
                raise reopen_error from error
        return await self._run_on(lease, work, args, view, tool_name)

    async def _run_on(
        self,
        lease: Lease[Session],
        work: Callable[..., Awaitable[Any]],
        args: tuple[Any, ...],
        view: Any,
        tool_name: str | None,
    ) -> Any:
        session = lease.session
        attempt = Attempt(tool_name, "call", process=lease.attempt.process, secrets=lease.attempt.secrets)

        async def explain(exc: BaseException) -> tuple[BaseException, bool]:
            cause = root_cause(exc)
            hint = "the connection was lost" if is_lost(cause) else None
            if not self.auto_reconnect and not isinstance(cause, (MCPError, UserError)):
                advice = "connect(auto_reconnect=True) reopens a dead connection"
                hint = f"{hint}; {advice}" if hint else advice
            attempt.note = hint
            return exc, True

        async with mcp_errors(attempt, self.describe(), explain=explain):
            if session is None:
                raise MCPError(f"the connection to {self.describe()} was lost", server=self.describe())
            return await work(view(session, attempt), *args)

    # -- what the server offers besides tools (docs/resources-prompts-instructions.md) ---------------------

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions`` (None: it sent none, or the connection has not opened)."""
        return self._offers().instructions

    async def list_resources(self) -> list[mcp_types.Resource]:
        return await self._offers().list_resources()

    async def list_resource_templates(self) -> list[mcp_types.ResourceTemplate]:
        return await self._offers().list_resource_templates()

    async def read_resource(self, uri: str) -> list[Content]:
        return await self._offers().read_resource(uri)

    async def list_prompts(self) -> list[mcp_types.Prompt]:
        return await self._offers().list_prompts()

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> list[PromptMessage]:
        return await self._offers().get_prompt(name, arguments)

    def _offers(self) -> ServerOffers:
        return ServerOffers(self.runner(self.timeouts, None))

    def runner(self, timeouts: Timeouts, max_concurrency: int | None) -> ConnectionRunner:
        """The runner of a list loaded from this connection, with the list's own timeouts."""
        return ConnectionRunner(self, timeouts, max_concurrency)

    async def load(self, lister: Lister) -> MCPToolList:
        """The list `lister` lists over this connection; it follows the server's tool list."""
        tools = MCPToolList.from_listing(await lister.list(strict=True), lister.relist)
        await self._follower.follow(tools, self.timeouts.list)
        return tools

    async def _on_message(self, message: Any) -> None:
        """The session's `message_handler`: the follower's, then the caller's, if any."""
        protocol = self._learned.protocol
        self._follower.on_message(message, protocol is not None and protocol.stateless)
        if self._message_handler is not None:
            await self._message_handler(message)
        else:
            await anyio.lowlevel.checkpoint()


class ConnectionRunner(Runner):
    """The runner of a list loaded from a connection; pickled, it refuses to call."""

    def __init__(
        self, connection: MCPConnection | DetachedConnection, timeouts: Timeouts, limit: int | None
    ) -> None:
        self.connection = connection
        self.timeouts = timeouts
        self.max_concurrency = limit
        self.definitions: Mapping[str, mcp_types.Tool] = {}
        self._limiter: anyio.CapacityLimiter | None = None

    def describe(self) -> str:
        return self.connection.describe()

    def remember(self, definitions: Mapping[str, mcp_types.Tool]) -> None:
        self.definitions = dict(definitions)

    def instructions(self) -> str | None:
        learned = getattr(self.connection, "_learned", None)
        protocol = learned.protocol if learned is not None else None
        return protocol.instructions if protocol is not None else None

    def limiter(self) -> anyio.CapacityLimiter | None:
        if self.max_concurrency is not None and self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.max_concurrency)
        return self._limiter

    async def request(
        self, work: Callable[..., Awaitable[Any]], *args: Any, tool_name: str | None = None
    ) -> Any:
        return await self.connection.run(work, *args, view=self._view, tool_name=tool_name)

    def _view(self, session: Session, attempt: Attempt) -> Session:
        """The connection's session for one request: its own `attempt`, this list's timeouts and
        definitions (and no task consent)."""
        process = session.attempt.process
        view = Session(
            session.client,
            session.protocol,
            session.transport,
            attempt,
            self.timeouts,
            session.server,
            self.definitions,
            headers=session.headers,
        )
        if process is not None and not process.heard:
            view.starting = session.starting
        return view

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_limiter": None}


class DetachedConnection:
    """What a connection becomes in another process (tools loaded from it were pickled): calling raises."""

    def __init__(self, describe: str) -> None:
        self._describe = describe

    def describe(self) -> str:
        return self._describe

    async def run(self, work: Any, *args: Any, tool_name: str | None = None, **options: Any) -> Any:
        what = f"tool {tool_name!r}" if tool_name else "this tool list"
        raise UserError(
            f"{what} was loaded from a live connection to {self._describe} (server.connect()), which stays "
            "in the process that opened it: a connection does not travel. To call from other processes, "
            "load stateless tools (load_mcp_tools(server) or the stdio / http loaders) and send those"
        )
