"""Opening MCP sessions: transports, initialize, phase timeouts, and the stateless one-session-per-call run.

`Endpoint` is what the tools of one loaded list share: the server, its timeouts and the HTTP transport
found for it. `open_session(endpoint, attempt)` is an async context manager over transport + `ClientSession`
+ initialize; `Session` adds phase timeouts (`list_tools`, `call_tool`). `run_stateless(endpoint, work)`
opens a fresh session, runs `work` on it and closes everything whatever happens, then raises one readable
`MCPError` (never an exception group).
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import logging
import math
import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import anyio.lowlevel

from ..errors import MCPError, MCPTimeoutError, UserError
from ..tools import ToolUpdate, UpdateCallback
from . import _errors
from ._http import HTTP_CLOSE_GRACE, Borrowed, SessionEnd, connection_headers, http_client
from ._process import ProcessInfo, track_process
from ._sdk import ensure_sdk
from ._servers import SAME_AS_TIMEOUT, HttpServer, Server, StartupTimeout, StdioServer
from ._stderr import StderrCapture

if TYPE_CHECKING:
    import httpx
    from mcp import ClientSession
    from mcp import types as mcp_types
    from mcp.shared.session import ProgressFnT

    from ._toollist import ToolListResources

__all__ = ["Attempt", "Endpoint", "Session", "Timeouts", "open_session", "run_stateless"]

T = TypeVar("T")
logger = logging.getLogger("cubepi.mcp")
Phase = Literal["startup", "initialize", "list", "call", "close"]

# The name a spare session's warm-up asks for (see `Session.warm_up`); no listed tool has it.
WARM_UP_TOOL = "cubepi-warm-up"

DEFAULT_TIMEOUT = 30.0
# How long telling the server `notifications/cancelled` may hold up closing the session.
CANCEL_NOTICE_GRACE = 1.0


def _seconds(name: str, value: float | None) -> float | None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
    ):
        raise UserError(f"{name} must be a positive number of seconds or None, got {value!r}")
    return None if value is None else float(value)


@dataclass(frozen=True)
class Timeouts:
    """Limits, in seconds (None: no limit), of each phase of a session.

    `startup` bounds spawning / connecting plus ``initialize``; `list` the whole listing; `call` a
    ``tools/call`` with no progress: each progress notification the server sends pushes the call's deadline
    back by `call`, and `max_duration` (None: no bound) caps the call however much progress arrives.
    `startup_option` is the keyword that set `startup`, for error messages.
    """

    startup: float | None = DEFAULT_TIMEOUT
    list: float | None = DEFAULT_TIMEOUT
    call: float | None = DEFAULT_TIMEOUT
    max_duration: float | None = None
    startup_option: Literal["timeout", "startup_timeout"] = "timeout"

    @property
    def initialize(self) -> float | None:
        """The limit of the initialize handshake: it is part of `startup`."""
        return self.startup

    @classmethod
    def uniform(cls, timeout: float | None) -> Timeouts:
        """The same limit for every phase."""
        value = _seconds("timeout", timeout)
        return cls(startup=value, list=value, call=value)

    @classmethod
    def from_options(
        cls,
        timeout: float | None = DEFAULT_TIMEOUT,
        startup_timeout: StartupTimeout = SAME_AS_TIMEOUT,
        max_duration: float | None = None,
    ) -> Timeouts:
        """What the loaders' `timeout`, `startup_timeout` and `max_duration` mean (checked here): `timeout`
        bounds every phase, and `startup_timeout`, unless left at `SAME_AS_TIMEOUT`, replaces it for
        start-up."""
        value = _seconds("timeout", timeout)
        option: Literal["timeout", "startup_timeout"]
        if startup_timeout is SAME_AS_TIMEOUT:
            startup, option = value, "timeout"
        else:
            startup, option = _seconds("startup_timeout", startup_timeout), "startup_timeout"
        return cls(
            startup=startup,
            list=value,
            call=value,
            max_duration=_seconds("max_duration", max_duration),
            startup_option=option,
        )

    def of(self, phase: Phase) -> float | None:
        if phase in ("startup", "initialize"):
            return self.startup
        if phase == "list":
            return self.list
        if phase == "call":
            return self.call
        return None


@dataclass
class Endpoint:
    """The server behind one loaded tool list, and what its calls share (the HTTP transport found)."""

    server: Server
    timeouts: Timeouts = field(default_factory=Timeouts)
    http_transport: Literal["streamable-http", "sse"] | None = None
    # What the calls of one loaded list share (HTTP client, spare stdio server); None: nothing shared.
    resources: ToolListResources | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.server, HttpServer) and self.server.transport != "auto":
            self.http_transport = self.server.transport

    def describe(self) -> str:
        return self.server.describe()


@dataclass
class Attempt:
    """Book-keeping of one session for error reports: the phase reached and the server's stderr."""

    tool_name: str | None = None
    phase: Phase = "startup"
    stderr: StderrCapture | None = None
    note: str | None = None  # context for the error message, e.g. how the Streamable HTTP attempt failed
    # The stdio server's process (its exit code for errors) and its `env` values, kept out of the stderr tail.
    process: ProcessInfo = field(default_factory=ProcessInfo)
    secrets: tuple[str, ...] = ()
    # Set when the caller is cancelled while the session is still being opened (see `interrupt`).
    interrupted: bool = False
    opening: anyio.CancelScope | None = None
    # The call under way, and an HTTP failure the SDK only reports to the message handler (see `_on_message`).
    call_scope: anyio.CancelScope | None = None
    transport_error: Exception | None = None

    async def stderr_tail(self) -> str | None:
        if self.stderr is None:
            return None
        with anyio.CancelScope(shield=True):
            tail = await self.stderr.final_tail()
        return _errors.redact(tail, self.secrets) or None

    @property
    def exit_code(self) -> int | None:
        """The stdio server's exit code once it has ended (None: still running, not stdio, unknown)."""
        return self.process.returncode

    def interrupt(self) -> None:
        """The caller was cancelled: stop the initialize under way (the transport still closes unhurried)."""
        self.interrupted = True
        if self.opening is not None:
            self.opening.cancel()


class Interrupted(Exception):
    """Raised out of `_open_once` when `Attempt.interrupt` stopped the initialize: the caller's cancellation
    is delivered in its place once the transport has closed."""


class Session:
    """An initialized MCP session with phase timeouts. Only valid inside `open_session`."""

    def __init__(self, client: ClientSession, endpoint: Endpoint, attempt: Attempt) -> None:
        self.client = client
        self.endpoint = endpoint
        self.attempt = attempt
        self.initialize_result: mcp_types.InitializeResult | None = None

    @contextlib.contextmanager
    def phase(self, phase: Phase) -> Any:
        """Bound a phase by its timeout; raise `MCPTimeoutError` naming it when exceeded."""
        self.attempt.phase = phase
        limit = self.endpoint.timeouts.of(phase)
        with anyio.move_on_after(math.inf if limit is None else limit) as scope:
            yield
        if scope.cancelled_caught and limit is not None:
            raise _timeout_error(self.endpoint, self.attempt, phase, limit)

    async def initialize(self) -> mcp_types.InitializeResult:
        with self.phase("initialize"):
            self.initialize_result = await self.client.initialize()
        return self.initialize_result

    async def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool the server lists, following `nextCursor` to the end (a repeated cursor is an error)."""
        from mcp import types

        tools: list[types.Tool] = []
        seen: set[str] = set()
        cursor: str | None = None
        with self.phase("list"):
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
                page = await self.client.send_request(
                    types.ClientRequest(types.ListToolsRequest(params=params)), types.ListToolsResult
                )
                tools.extend(page.tools)
                cursor = page.nextCursor
                if not cursor:
                    return _usable_tools(tools, self.endpoint.describe())
                if cursor in seen:
                    raise MCPError(
                        f"listing the tools of {self.endpoint.describe()} failed: the server repeated the "
                        f"pagination cursor {cursor[:40]!r} after {len(tools)} tools",
                        server=self.endpoint.describe(),
                    )
                seen.add(cursor)
        raise AssertionError("unreachable")  # pragma: no cover

    async def warm_up(self) -> None:
        """Run the server's code paths of a listing and of a call once, so that the call that takes this
        (spare) session does not pay for them; also checks the server still answers.

        A server's first requests run cold code: a node server's first ``tools/call`` takes several times
        as long as its later ones. This lists the tools (one page, as the SDK's own fresh sessions do), then
        asks for a tool that none of them is named (`WARM_UP_TOOL`, numbered past any listed name). The
        server answers that no such tool exists: its request parsing and call dispatch have run, and no
        tool has. A transport failure on the way raises (the spare is not used).
        """
        from mcp import types
        from mcp.shared.exceptions import McpError

        with self.phase("list"):
            listed = await self.client.list_tools()
            names = {tool.name for tool in listed.tools}
            probe = next(name for n in itertools.count() if (name := f"{WARM_UP_TOOL}-{n}") not in names)
            params = types.CallToolRequestParams(name=probe, arguments={})
            try:
                await self.client.send_request(
                    types.ClientRequest(types.CallToolRequest(params=params)), types.CallToolResult
                )
            except McpError as exc:  # "no such tool": what was asked for
                if _errors.is_transport_mcp_error(exc):
                    raise

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None, on_update: UpdateCallback | None = None
    ) -> mcp_types.CallToolResult:
        """`tools/call`. A JSON-RPC error the server sends comes back as an `isError` result; a transport
        failure raises. The SDK's output-schema check (which re-lists tools) is not run here.

        The call may go `timeouts.call` seconds without hearing from the server: every progress
        notification pushes the deadline back, up to `timeouts.max_duration` in all. When the deadline
        passes, or the caller is cancelled, the server is sent ``notifications/cancelled`` for the request
        before the session closes.
        """
        from mcp import types
        from mcp.shared.exceptions import McpError

        params = types.CallToolRequestParams(name=name, arguments=dict(arguments or {}))
        request = types.ClientRequest(types.CallToolRequest(params=params))
        self.attempt.phase = "call"
        timeouts = self.endpoint.timeouts
        idle = math.inf if timeouts.call is None else timeouts.call
        started = anyio.current_time()
        hard = math.inf if timeouts.max_duration is None else started + timeouts.max_duration
        scope = anyio.CancelScope(deadline=min(started + idle, hard))
        # Always ask for progress (a progressToken): progress is what keeps a long call alive.
        progress = _progress_relay(scope, idle, hard, on_update)
        request_id = self.client._request_id  # the id send_request is about to use
        self.attempt.call_scope = scope
        try:
            with scope:
                try:
                    return await self.client.send_request(
                        request, types.CallToolResult, progress_callback=progress
                    )
                except McpError as exc:
                    if _errors.is_transport_mcp_error(exc):
                        raise
                    return types.CallToolResult(
                        content=[types.TextContent(type="text", text=f"{exc.error.message}")],
                        isError=True,
                        _meta={"jsonrpc_error": exc.error.model_dump(mode="json", exclude_none=True)},
                    )
        except anyio.get_cancelled_exc_class():
            await self.tell_cancelled(request_id, "the client cancelled the call")
            raise
        finally:
            self.attempt.call_scope = None
        if self.attempt.transport_error is not None:  # the response was lost (see `_on_message`)
            raise self.attempt.transport_error
        # The scope's deadline passed: the call timed out.
        ran_too_long = scope.deadline >= hard
        await self.tell_cancelled(
            request_id, "max_duration exceeded" if ran_too_long else "timed out waiting for the result"
        )
        if ran_too_long:
            assert timeouts.max_duration is not None
            raise _timeout_error(
                self.endpoint, self.attempt, "call", timeouts.max_duration, what="max_duration"
            )
        assert timeouts.call is not None
        raise _timeout_error(self.endpoint, self.attempt, "call", timeouts.call)

    async def tell_cancelled(self, request_id: int, reason: str) -> None:
        """Send ``notifications/cancelled`` for `request_id`; best effort, bounded, never raises."""
        from mcp import types

        notice = types.ClientNotification(
            types.CancelledNotification(
                params=types.CancelledNotificationParams(requestId=request_id, reason=reason)
            )
        )
        with anyio.move_on_after(CANCEL_NOTICE_GRACE, shield=True):
            with contextlib.suppress(Exception):  # the transport may be gone already
                await self.client.send_notification(notice)
                await anyio.sleep(0.01)  # let the transport's writer put it on the wire before closing


def _on_message(attempt: Attempt, handler: Any) -> Any:
    """A `ClientSession` message handler that ends the call under way when the HTTP transport failed.

    The SDK's Streamable HTTP client hands a failed response (a body cut off mid-way: ``RemoteProtocolError``)
    to the message handler, not to the request waiting for it, which would then wait for its timeout.
    """

    async def on_message(message: Any) -> None:
        if (
            isinstance(message, Exception)
            and type(message).__module__.startswith(("httpx", "httpcore"))
            and attempt.call_scope is not None
        ):
            attempt.transport_error = message
            attempt.call_scope.cancel()
        if handler is not None:
            await handler(message)

    return on_message


def _usable_tools(tools: list[mcp_types.Tool], server: str) -> list[mcp_types.Tool]:
    """The listed tools a caller can use: one without a name is skipped, and of tools sharing a name the
    first is kept (a call by that name reaches whichever the server picks), each with a warning on the
    ``cubepi.mcp`` logger. Names are never rewritten (`AgentTool.api_name` makes them safe for LLM APIs)."""
    usable: list[mcp_types.Tool] = []
    names: set[str] = set()
    for tool in tools:
        if not tool.name:
            logger.warning("skipping a tool without a name listed by %s", server)
        elif tool.name in names:
            logger.warning(
                "skipping a second tool named %r listed by %s (keeping the first)", tool.name, server
            )
        else:
            names.add(tool.name)
            usable.append(tool)
    return usable


def _progress_relay(
    scope: anyio.CancelScope, idle: float, hard: float, on_update: UpdateCallback | None
) -> ProgressFnT:
    """Progress notifications push `scope`'s deadline back by `idle` (never past `hard`), then reach
    `on_update`."""

    async def relay(progress: float, total: float | None, message: str | None) -> None:
        if not scope.cancel_called:
            scope.deadline = min(anyio.current_time() + idle, hard)
        if on_update is not None:
            outcome = on_update(ToolUpdate(progress=progress, total=total, message=message))
            if inspect.isawaitable(outcome):
                await outcome

    return relay


def _timeout_error(
    endpoint: Endpoint, attempt: Attempt, phase: Phase, limit: float, *, what: str = "timeout"
) -> MCPTimeoutError:
    server = endpoint.describe()
    if phase == "call" and attempt.tool_name:
        action = f"calling tool {attempt.tool_name!r} on {server}"
    else:
        action = {"initialize": "initializing", "list": "listing the tools of", "startup": "starting"}.get(
            phase, phase
        ) + f" {server}"
    if what == "max_duration":
        text = f"{action} ran past max_duration={limit:g} s (phase: {phase})"
    elif phase == "call":
        text = f"{action} timed out: no result or progress for {limit:g} s (timeout; phase: {phase})"
    elif phase in ("startup", "initialize") and endpoint.timeouts.startup_option == "startup_timeout":
        text = (
            f"{action} timed out after {limit:g} s (startup_timeout; phase: {phase}); "
            "raise startup_timeout for a slower start"
        )
    elif phase in ("startup", "initialize"):
        text = (
            f"{action} timed out after {limit:g} s (timeout; phase: {phase}); timeout also bounds start-up: "
            "raise it, or give startup_timeout for start-up alone (a cold npx / uvx start)"
        )
    else:
        text = f"{action} timed out after {limit:g} s (timeout; phase: {phase})"
    return MCPTimeoutError(
        text,
        phase=phase,
        limit=limit,
        tool_name=attempt.tool_name,
        server=server,
    )


# -- transports --------------------------------------------------------------------------------------------


async def _drain_after_close(source: Any, sink: Any) -> None:
    """Relay the stdio transport's messages to the session; once the session has closed, keep reading
    (and drop) what the server still sends, such as its answer to ``notifications/cancelled``.

    Without it the SDK's stdout reader hits a closed stream while the transport shuts down, and the
    resulting `BrokenResourceError` both hides the call's real error and cuts the shutdown short. Never
    raises (its group encloses the transport, whose shutdown must not be cancelled).
    """
    try:
        async with source, sink:  # closed here too: a loop ending mid-shutdown cancels this task
            async for message in source:
                # Once the session is gone, drop messages until the transport closes.
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await sink.send(message)
    except Exception:  # the transport closed its end: nothing more to relay
        pass


@contextlib.asynccontextmanager
async def _open_once(
    endpoint: Endpoint,
    attempt: Attempt,
    kind: Literal["stdio", "streamable-http", "sse"],
    client: httpx.AsyncClient | None,
    session_kwargs: Mapping[str, Any],
) -> AsyncIterator[Session]:
    """One transport + one initialized `ClientSession`, closed on exit."""
    from mcp import ClientSession

    server = endpoint.server
    ending: SessionEnd | None = None
    attempt.phase = "startup"
    # For HTTP, opening the transport (the SSE GET waits for its endpoint event) counts against initialize.
    # The scope encloses the transport so that cancel scopes nest; it is lifted once initialized. For stdio
    # the spawn is immediate, and the transport must close unhurried (graceful shutdown, process group kill).
    limit = endpoint.timeouts.startup
    with anyio.CancelScope() as startup:
        if kind != "stdio" and limit is not None:
            startup.deadline = anyio.current_time() + limit
        async with contextlib.AsyncExitStack() as stack:
            if kind == "stdio":
                from mcp.client.stdio import StdioServerParameters, stdio_client

                assert isinstance(server, StdioServer)
                env = server.environment()
                params = StdioServerParameters(
                    command=resolve_command(endpoint, env),
                    args=list(server.args),
                    env=env,
                    cwd=os.fspath(server.cwd) if server.cwd is not None else None,
                )
                capture = attempt.stderr = StderrCapture(on_line=server.on_stderr)
                attempt.secrets = tuple((server.env or {}).values())
                # The drain task's group encloses the transport, so it outlives the transport's shutdown.
                drains = await stack.enter_async_context(anyio.create_task_group())
                try:
                    with track_process(attempt.process):
                        raw_read, write = await stack.enter_async_context(
                            stdio_client(params, errlog=capture.writer)
                        )
                finally:
                    capture.close_writer()
                read_sink, read = anyio.create_memory_object_stream[Any](0)
                drains.start_soon(_drain_after_close, raw_read, read_sink)
            elif kind == "streamable-http":
                from mcp.client.streamable_http import streamable_http_client

                assert isinstance(server, HttpServer) and client is not None
                ending = SessionEnd(server.url, client)
                stack.push_async_callback(ending.send)  # runs once the transport has closed
                read, write, ending.session_id = await stack.enter_async_context(
                    streamable_http_client(server.url, http_client=client, terminate_on_close=False)
                )
            else:
                from mcp.client.sse import sse_client

                assert isinstance(server, HttpServer) and client is not None
                borrowed = Borrowed(client)
                read, write = await stack.enter_async_context(
                    sse_client(server.url, httpx_client_factory=lambda **_: borrowed)  # type: ignore[arg-type]
                )
            kwargs = dict(session_kwargs)
            if kind != "stdio":
                kwargs["message_handler"] = _on_message(attempt, session_kwargs.get("message_handler"))
            client_session = await stack.enter_async_context(ClientSession(read, write, **kwargs))
            session = Session(client_session, endpoint, attempt)
            # The caller's cancellation must reach the initialize (a server may take its time to start),
            # while the transport around it closes under run_stateless's shield.
            opening = attempt.opening = anyio.CancelScope()
            if attempt.interrupted:
                opening.cancel()
            with opening:
                await session.initialize()
            attempt.opening = None
            if ending is not None and session.initialize_result is not None:
                ending.protocol_version = session.initialize_result.protocolVersion
            if opening.cancel_called:
                raise Interrupted()
            startup.deadline = math.inf
            yield session
            attempt.phase = "close"
    if startup.cancelled_caught and limit is not None:
        raise _timeout_error(endpoint, attempt, "initialize", limit)


def resolve_command(endpoint: Endpoint, env: Mapping[str, str]) -> str:
    """The stdio server's command as a shell would find it: on the server's ``PATH`` (``npx`` finds
    ``npx.cmd`` on Windows), a relative path with a directory part relative to `cwd`. Raises a clear
    `MCPError` for a missing command or working directory."""
    server = endpoint.server
    assert isinstance(server, StdioServer)
    command = server.command
    describe = endpoint.describe()
    if server.cwd is not None and not os.path.isdir(server.cwd):
        raise MCPError(
            f"starting {describe} failed: the working directory {os.fspath(server.cwd)!r} does not exist",
            server=describe,
        )
    has_dir = os.sep in command or (os.altsep is not None and os.altsep in command)
    lookup = command
    if has_dir and server.cwd is not None and not os.path.isabs(command):
        lookup = os.path.join(os.fspath(server.cwd), command)
    found = shutil.which(lookup, path=None if has_dir else env.get("PATH", os.defpath))
    if found is None:
        if has_dir:
            where = "no executable file there"
        else:
            where = "not on the PATH the server gets; give its full path or set PATH in env"
        raise MCPError(
            f"starting {describe} failed: command not found: {command!r} ({where})", server=describe
        )
    return found


@contextlib.asynccontextmanager
async def open_session(
    endpoint: Endpoint, attempt: Attempt | None = None, **session_kwargs: Any
) -> AsyncIterator[Session]:
    """A fresh transport and initialized session to `endpoint`'s server, closed when the block ends.

    For an ``"auto"`` HTTP server whose transport is not known yet, Streamable HTTP is tried first; a 4xx to
    its initialize POST means an SSE-only server, and the SSE transport is used (and remembered on the
    endpoint). Exceptions come out raw (exception groups included); `run_stateless` translates them.
    `session_kwargs` go to `ClientSession` (callbacks for logging, sampling, ...).
    """
    ensure_sdk()
    attempt = attempt if attempt is not None else Attempt()
    server = endpoint.server
    async with contextlib.AsyncExitStack() as stack:
        if isinstance(server, StdioServer):
            session = await stack.enter_async_context(
                _open_once(endpoint, attempt, "stdio", None, session_kwargs)
            )
        else:
            await stack.enter_async_context(connection_headers(server))
            lease: contextlib.AbstractAsyncContextManager[httpx.AsyncClient]
            if endpoint.resources is not None:  # the list's shared client (see _toollist)
                lease = endpoint.resources.http_client(lambda: http_client(server))
            else:
                lease = http_client(server)
            client = await stack.enter_async_context(lease)
            kind = endpoint.http_transport
            if kind is None:
                try:
                    session = await stack.enter_async_context(
                        _open_once(endpoint, attempt, "streamable-http", client, session_kwargs)
                    )
                    endpoint.http_transport = "streamable-http"
                except Exception as exc:
                    if not _errors.is_http_4xx_at_initialize(exc):
                        raise
                    first = _errors.describe_failure(_errors.root_cause(exc))
                    attempt.note = f"Streamable HTTP first: {first}; then the SSE transport"
                    attempt.phase = "startup"
                    session = await stack.enter_async_context(
                        _open_once(endpoint, attempt, "sse", client, session_kwargs)
                    )
                    endpoint.http_transport = "sse"
            else:
                session = await stack.enter_async_context(
                    _open_once(endpoint, attempt, kind, client, session_kwargs)
                )
        yield session


async def run_stateless(
    endpoint: Endpoint,
    work: Callable[[Session], Awaitable[T]],
    *,
    tool_name: str | None = None,
    **session_kwargs: Any,
) -> T:
    """Open a fresh session, run `work` on it, close it whatever happens; raise one readable `MCPError`.

    Cancellation of the caller interrupts `work` only: the transport is then closed under a shield, so a
    stdio server gets the SDK's full shutdown (stdin closed, grace period, SIGTERM/SIGKILL of its process
    group) and no process or socket outlives the call. The cancellation is re-raised afterwards.
    The tools of a loaded list run `work` on its spare session with ``prespawn=True`` (see `_prespawn`),
    and over HTTP return once `work` has, while the list closes the session behind (see `_detached`).
    """

    async def fresh(work: Callable[[Session], Awaitable[T]]) -> T:
        return await _run_fresh(endpoint, work, tool_name=tool_name, **session_kwargs)

    if endpoint.resources is not None and not session_kwargs:
        return await endpoint.resources.run(work, fresh=fresh, tool_name=tool_name)
    return await fresh(work)


async def _run_fresh(
    endpoint: Endpoint,
    work: Callable[[Session], Awaitable[T]],
    *,
    tool_name: str | None = None,
    **session_kwargs: Any,
) -> T:
    attempt = Attempt(tool_name=tool_name)
    body = anyio.CancelScope()
    shield = anyio.CancelScope(shield=True)
    grace = None if isinstance(endpoint.server, StdioServer) else HTTP_CLOSE_GRACE
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
        if _errors.is_cancellation(exc):
            raise
        if any(isinstance(leaf, Interrupted) for leaf in _errors.leaves(exc)):
            done = False  # the caller was cancelled while initializing: delivered below
        else:
            error = _errors.translate(
                exc,
                phase=attempt.phase,
                server=endpoint.describe(),
                tool_name=tool_name,
                stderr=await attempt.stderr_tail(),
                note=attempt.note,
                exit_code=attempt.exit_code,
            )
            _errors.reraise(error)
    if not done:
        # `work` was interrupted because the caller was cancelled: deliver that cancellation now.
        await anyio.lowlevel.checkpoint()
        raise anyio.get_cancelled_exc_class()()
    return result  # type: ignore[return-value]
