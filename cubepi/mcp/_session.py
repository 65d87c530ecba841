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
import math
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import anyio.lowlevel

from ..errors import MCPError, MCPTimeoutError, UserError
from ..tools import ToolUpdate, UpdateCallback
from . import _errors
from ._sdk import ensure_sdk
from ._servers import HttpServer, Server, StdioServer
from ._stderr import StderrCapture

if TYPE_CHECKING:
    import httpx
    from mcp import ClientSession
    from mcp import types as mcp_types
    from mcp.shared.session import ProgressFnT

    from ._toollist import ToolListResources

__all__ = ["Attempt", "Endpoint", "Session", "Timeouts", "open_session", "run_stateless"]

T = TypeVar("T")
Phase = Literal["startup", "initialize", "list", "call", "close"]

# How long teardown of an HTTP session may take once the caller is cancelled (stdio teardown is bounded
# by the SDK itself: stdin closed, 2 s grace, then SIGTERM/SIGKILL of the process group).
HTTP_CLOSE_GRACE = 5.0


@dataclass(frozen=True)
class Timeouts:
    """Limits, in seconds (None: no limit), of each phase of a session."""

    initialize: float | None = 30.0
    list: float | None = 30.0
    call: float | None = 30.0

    @classmethod
    def uniform(cls, timeout: float | None) -> Timeouts:
        """The same limit for every phase (what the loaders' `timeout` means)."""
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0
        ):
            raise UserError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
        value = None if timeout is None else float(timeout)
        return cls(initialize=value, list=value, call=value)

    def of(self, phase: Phase) -> float | None:
        if phase in ("startup", "initialize"):
            return self.initialize
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

    async def stderr_tail(self) -> str | None:
        if self.stderr is None:
            return None
        with anyio.CancelScope(shield=True):
            tail = await self.stderr.final_tail()
        return tail or None


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
                    return tools
                if cursor in seen:
                    raise MCPError(
                        f"listing the tools of {self.endpoint.describe()} failed: the server repeated the "
                        f"pagination cursor {cursor[:40]!r} after {len(tools)} tools",
                        server=self.endpoint.describe(),
                    )
                seen.add(cursor)
        raise AssertionError("unreachable")  # pragma: no cover

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None, on_update: UpdateCallback | None = None
    ) -> mcp_types.CallToolResult:
        """`tools/call`. A JSON-RPC error the server sends comes back as an `isError` result; a transport
        failure raises. The SDK's output-schema check (which re-lists tools) is not run here."""
        from mcp import types
        from mcp.shared.exceptions import McpError

        params = types.CallToolRequestParams(name=name, arguments=dict(arguments or {}))
        request = types.ClientRequest(types.CallToolRequest(params=params))
        progress = _progress_adapter(on_update) if on_update is not None else None
        with self.phase("call"):
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
        raise AssertionError("unreachable")  # pragma: no cover


def _progress_adapter(on_update: UpdateCallback) -> ProgressFnT:
    async def relay(progress: float, total: float | None, message: str | None) -> None:
        outcome = on_update(ToolUpdate(progress=progress, total=total, message=message))
        if inspect.isawaitable(outcome):
            await outcome

    return relay


def _timeout_error(endpoint: Endpoint, attempt: Attempt, phase: Phase, limit: float) -> MCPTimeoutError:
    server = endpoint.describe()
    if phase == "call" and attempt.tool_name:
        what = f"calling tool {attempt.tool_name!r} on {server}"
    else:
        what = {"initialize": "initializing", "list": "listing the tools of", "startup": "starting"}.get(
            phase, phase
        ) + f" {server}"
    return MCPTimeoutError(
        f"{what} timed out after {limit:g} s (phase: {phase})",
        phase=phase,
        limit=limit,
        tool_name=attempt.tool_name,
        server=server,
    )


# -- transports --------------------------------------------------------------------------------------------


def _http_client(server: HttpServer) -> httpx.AsyncClient:
    from mcp.shared._httpx_utils import create_mcp_http_client

    return create_mcp_http_client(
        headers=dict(server.headers) if server.headers else None,
        auth=server.auth,
    )


class _Borrowed:
    """Lends an httpx client to `sse_client` (which closes what its factory returns) without closing it."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def __aenter__(self) -> httpx.AsyncClient:
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        return None


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
    attempt.phase = "startup"
    # For HTTP, opening the transport (the SSE GET waits for its endpoint event) counts against initialize.
    # The scope encloses the transport so that cancel scopes nest; it is lifted once initialized. For stdio
    # the spawn is immediate, and the transport must close unhurried (graceful shutdown, process group kill).
    limit = endpoint.timeouts.initialize
    with anyio.CancelScope() as startup:
        if kind != "stdio" and limit is not None:
            startup.deadline = anyio.current_time() + limit
        async with contextlib.AsyncExitStack() as stack:
            if kind == "stdio":
                from mcp.client.stdio import StdioServerParameters, stdio_client

                assert isinstance(server, StdioServer)
                params = StdioServerParameters(
                    command=server.command,
                    args=list(server.args),
                    env=dict(server.env) if server.env is not None else None,
                    cwd=os.fspath(server.cwd) if server.cwd is not None else None,
                )
                capture = attempt.stderr = StderrCapture()
                try:
                    read, write = await stack.enter_async_context(stdio_client(params, errlog=capture.writer))
                finally:
                    capture.close_writer()
            elif kind == "streamable-http":
                from mcp.client.streamable_http import streamable_http_client

                assert isinstance(server, HttpServer) and client is not None
                read, write, _ = await stack.enter_async_context(
                    streamable_http_client(server.url, http_client=client)
                )
            else:
                from mcp.client.sse import sse_client

                assert isinstance(server, HttpServer) and client is not None
                borrowed = _Borrowed(client)
                read, write = await stack.enter_async_context(
                    sse_client(server.url, httpx_client_factory=lambda **_: borrowed)  # type: ignore[arg-type]
                )
            client_session = await stack.enter_async_context(ClientSession(read, write, **session_kwargs))
            session = Session(client_session, endpoint, attempt)
            await session.initialize()
            startup.deadline = math.inf
            yield session
            attempt.phase = "close"
    if startup.cancelled_caught and limit is not None:
        raise _timeout_error(endpoint, attempt, "initialize", limit)


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
            lease: contextlib.AbstractAsyncContextManager[httpx.AsyncClient]
            if endpoint.resources is not None:  # the list's shared client (see _toollist)
                lease = endpoint.resources.http_client(lambda: _http_client(server))
            else:
                lease = _http_client(server)
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
    A loaded list with ``prespawn=True`` runs `work` on its spare session instead (see `_prespawn`).
    """
    if endpoint.resources is not None and not session_kwargs:
        from ._toollist import NO_SPARE

        outcome = await endpoint.resources.run_on_spare(endpoint, work, tool_name=tool_name)
        if outcome is not NO_SPARE:
            return outcome  # type: ignore[return-value]
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
        error = _errors.translate(
            exc,
            phase=attempt.phase,
            server=endpoint.describe(),
            tool_name=tool_name,
            stderr=await attempt.stderr_tail(),
            note=attempt.note,
        )
        _errors.reraise(error)
    if not done:
        # `work` was interrupted because the caller was cancelled: deliver that cancellation now.
        await anyio.lowlevel.checkpoint()
        raise anyio.get_cancelled_exc_class()()
    return result  # type: ignore[return-value]
