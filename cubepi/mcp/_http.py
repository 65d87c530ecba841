"""The httpx2 side of MCP's HTTP transports: the client cubepi builds, and what it adds to the SDK's use.

- `http_client(server)`: the SDK's default client settings plus the server's static headers and auth.
- Rotating headers (`HttpServer.headers` as a callable): resolved once per session, applied to each of its
  requests by a request hook, because the client itself may be shared by several sessions.
- Ending a handshake-era session (its DELETE) may take at most `HTTP_CLOSE_GRACE`, not the client's read
  timeout: a server that never answers it would otherwise hold every stateless call for 30 s.
- `recording_status`: the SDK turns an HTTP error answer into a JSON-RPC error and drops the status; a
  response hook keeps it for the session's error message ("HTTP 401 ... check the headers / auth").
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import MCPError

if TYPE_CHECKING:
    import httpx2

    from ._servers import HttpServer

__all__ = ["HTTP_CLOSE_GRACE", "connection_headers", "http_client", "recording_status"]

# How long ending an HTTP session may take: its DELETE, or its teardown once the caller is cancelled.
HTTP_CLOSE_GRACE = 5.0


def http_client(server: HttpServer) -> httpx2.AsyncClient:
    """A client for `server`: the SDK's timeouts, the server's static headers and auth, cubepi's hooks."""
    from mcp.shared._httpx_utils import create_mcp_http_client

    static = server.headers if isinstance(server.headers, Mapping) else None
    client = create_mcp_http_client(headers=dict(static) if static else None, auth=server.auth)
    hooks = client.event_hooks
    client.event_hooks = {
        **hooks,
        "request": [*hooks.get("request", []), _apply_connection_headers, _bound_session_end],
        "response": [*hooks.get("response", []), _record_status],
    }
    return client


# The headers of the session being opened when `HttpServer.headers` is a callable: resolved once per
# session in `connection_headers`, applied to each of its requests (the client itself may be shared).
_CONNECTION_HEADERS: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "cubepi_mcp_connection_headers", default=None
)
# Whatever records the HTTP status of the current session's failed responses (an `Attempt`).
_STATUS_SINK: contextvars.ContextVar[Any] = contextvars.ContextVar("cubepi_mcp_status_sink", default=None)


async def _apply_connection_headers(request: httpx2.Request) -> None:
    headers = _CONNECTION_HEADERS.get()
    if headers:
        request.headers.update(headers)


async def _bound_session_end(request: httpx2.Request) -> None:
    if request.method == "DELETE":
        import httpx2

        request.extensions["timeout"] = httpx2.Timeout(HTTP_CLOSE_GRACE).as_dict()


async def _record_status(response: httpx2.Response) -> None:
    sink = _STATUS_SINK.get()
    if sink is not None and response.status_code >= 300:
        sink.http_status = response.status_code
        sink.http_reason = response.reason_phrase


@contextlib.contextmanager
def _setting(var: contextvars.ContextVar[Any], value: Any) -> Iterator[None]:
    """`var` set to `value` for this block (and the tasks it starts)."""
    token = var.set(value)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # exited in another context
            var.reset(token)


def recording_status(sink: Any) -> contextlib.AbstractContextManager[None]:
    """Within this block (and the tasks it starts), HTTP error and redirect statuses are written to
    `sink.http_status` and their reason phrase to `sink.http_reason`."""
    if _STATUS_SINK.get() is sink:  # already recording there (a call inside its own session's block)
        return contextlib.nullcontext()
    return _setting(_STATUS_SINK, sink)


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
    with _setting(_CONNECTION_HEADERS, headers):
        yield
