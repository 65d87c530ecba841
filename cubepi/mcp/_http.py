"""The httpx side of MCP's HTTP transports: the client cubepi builds, and what it adds to the SDK's use of it.

- `http_client(server)`: the SDK's default client settings plus the server's headers and auth, and
  connections that go back to the pool when the SDK stops reading a finished response (see
  `_keepalive`), so that the requests of one session (initialize, the initialized notification, the call,
  the DELETE) ride one connection instead of opening four.
- Rotating headers (`HttpServer.headers` as a callable): resolved once per session, applied to each of its
  requests, because the client itself may be shared by several sessions.
- `without_get_stream`: stateless sessions skip the optional Streamable HTTP GET stream.
- `SessionEnd`: the spec's DELETE that ends a Streamable HTTP session, bounded by `HTTP_CLOSE_GRACE`.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING

import anyio

from ..errors import MCPError
from ._servers import HttpServer

if TYPE_CHECKING:
    import httpx

__all__ = [
    "HTTP_CLOSE_GRACE",
    "Borrowed",
    "SessionEnd",
    "connection_headers",
    "http_client",
    "without_get_stream",
]

# How long ending an HTTP session may take: its DELETE, or its teardown once the caller is cancelled.
HTTP_CLOSE_GRACE = 5.0


def http_client(server: HttpServer) -> httpx.AsyncClient:
    """A client for `server`: the SDK's timeouts, its static headers and auth, reused connections."""
    from mcp.shared._httpx_utils import create_mcp_http_client

    from ._keepalive import keep_alive

    static = server.headers if isinstance(server.headers, Mapping) else None
    client = create_mcp_http_client(headers=dict(static) if static else None, auth=server.auth)
    hooks = client.event_hooks
    requests = [*hooks.get("request", [])]
    if callable(server.headers):
        requests.append(_apply_connection_headers)
    client.event_hooks = {**hooks, "request": requests, "response": [*hooks.get("response", []), keep_alive]}
    return client


# -- headers of one session --------------------------------------------------------------------------------

# The headers of the session being opened when `HttpServer.headers` is a callable: resolved once per
# session in `connection_headers`, applied to each of its requests (the client itself may be shared).
_CONNECTION_HEADERS: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "cubepi_mcp_connection_headers", default=None
)


async def _apply_connection_headers(request: httpx.Request) -> None:
    headers = _CONNECTION_HEADERS.get()
    if headers:
        request.headers.update(headers)


@contextlib.asynccontextmanager
async def connection_headers(server: HttpServer) -> AsyncIterator[None]:
    """Resolve `server.headers` when it is a callable (sync or async) for the requests of this block.

    A failure of the callable is a readable `MCPError` that never shows a header value.
    """
    make = server.headers
    if not callable(make):
        yield
        return
    try:
        value = make()
        if inspect.isawaitable(value):
            value = await value
        headers = {str(key): str(item) for key, item in dict(value or {}).items()}
    except Exception as exc:
        raise MCPError(
            f"connecting to {server.describe()} failed: the headers callable raised {type(exc).__name__}",
            server=server.describe(),
        ) from exc
    token = _CONNECTION_HEADERS.set(headers)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # exited in another context
            _CONNECTION_HEADERS.reset(token)


# -- the GET stream ----------------------------------------------------------------------------------------


class _NoGetStream(Exception):
    """Raised by a request hook in place of the optional Streamable HTTP GET stream (see below)."""


async def _refuse_get_stream(request: httpx.Request) -> None:
    if request.method == "GET" and "mcp-session-id" in request.headers:
        raise _NoGetStream("a stateless session opens no GET stream")


def without_get_stream(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """`client`, for sessions that live for one call: no standalone GET stream (Streamable HTTP).

    After ``initialize`` the SDK opens a GET stream for server messages *unrelated* to any request; the
    specification makes it optional for the client, and what relates to a call (its progress, logs,
    sampling or elicitation requests) comes on the call's own POST response stream. A one-call session
    has no use for it, and skipping it saves a request and a connection per call. The request hook
    refuses it before anything is sent (the SDK logs that and gives up). SSE's GET carries no session
    id and is untouched; persistent connections do not use this.
    """
    hooks = client.event_hooks
    client.event_hooks = {**hooks, "request": [*hooks.get("request", []), _refuse_get_stream]}
    return client


# -- lending and ending ------------------------------------------------------------------------------------


class Borrowed:
    """Lends an httpx client to `sse_client` (which closes what its factory returns) without closing it."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def __aenter__(self) -> httpx.AsyncClient:
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        return None


class SessionEnd:
    """Ends a Streamable HTTP session once its transport has closed: the spec's DELETE, bounded.

    The SDK would send it from inside the transport's exit, limited only by the client's timeouts, so a
    server that never answers a DELETE would hold every stateless call for the read timeout (30 s).
    Here the SDK's own `terminate_session` runs after the transport closed, shielded (a cancelled call
    still ends its session) and given at most `HTTP_CLOSE_GRACE`.
    """

    def __init__(self, url: str, client: httpx.AsyncClient) -> None:
        self.url = url
        self.client = client
        self.session_id: Callable[[], str | None] = lambda: None
        self.protocol_version: str | int | None = None

    async def send(self) -> None:
        from mcp.client.streamable_http import StreamableHTTPTransport

        session_id = self.session_id()
        if not session_id:
            return
        transport = StreamableHTTPTransport(self.url)
        # The SDK sets both after initialize; it declares them as plain ``None`` attributes.
        transport.session_id = session_id  # type: ignore[assignment]
        transport.protocol_version = str(self.protocol_version) if self.protocol_version else None  # type: ignore[assignment]
        with anyio.CancelScope(shield=True) as scope:
            scope.deadline = anyio.current_time() + HTTP_CLOSE_GRACE
            await transport.terminate_session(self.client)
