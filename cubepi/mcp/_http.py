"""The httpx2 side of MCP's HTTP transports: the client cubepi builds, and what it adds to the SDK's use.

- `http_client(server)`: the SDK's default client settings plus the server's static headers and auth.
- Rotating headers (`HttpServer.headers` as a callable): resolved once per session, applied to each of its
  requests by a request hook, because the client itself may be shared by several sessions.
- Ending a handshake-era session (its DELETE) may take at most `HTTP_CLOSE_GRACE` in all, body included: a
  server that never answers it, or answers one byte a second, would otherwise hold every call.
- A response body may hold at most `HttpServer.max_response_bytes`, counted as it arrives (a body that
  never ends fails with `ResponseTooLarge`); SSE bodies are bounded per event by the SDK instead.
- `recording_status`: the SDK turns an HTTP error answer into a JSON-RPC error and drops the status; a
  response hook keeps it for the session's error message ("HTTP 401 ... check the headers / auth"). A
  request hook adds the values of the headers the user gave (and of ``Authorization``, where `auth` puts
  its token) to the session's secrets, which are redacted from its errors and from httpx2's log lines.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import MCPError
from ._limits import DEFAULT_MAX_RESPONSE_BYTES, ResponseTooLarge
from ._redact import redact, secret_values

if TYPE_CHECKING:
    import httpx2

    from ._servers import HttpServer

__all__ = ["HTTP_CLOSE_GRACE", "connection_headers", "http_client", "recording_status"]

# How long ending an HTTP session may take: its DELETE, or its teardown once the caller is cancelled.
HTTP_CLOSE_GRACE = 5.0


def http_client(server: HttpServer) -> httpx2.AsyncClient:
    """A client for `server`: the SDK's timeouts, the server's static headers and auth, cubepi's hooks."""
    import httpx2
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    static = server.headers if isinstance(server.headers, Mapping) else None
    limit = getattr(server, "max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES)
    _redact_logs()
    return _client_type()(
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        headers=dict(static) if static else None,
        auth=server.auth,
        event_hooks={
            "request": [_apply_connection_headers, _SecretNoter((*_CREDENTIAL_HEADERS, *(static or {})))],
            "response": [_record_status, functools.partial(_bound_body, limit)],
        },
    )


@functools.cache
def _client_type() -> type[httpx2.AsyncClient]:
    import httpx2

    class Client(httpx2.AsyncClient):
        """The SDK's client (`create_mcp_http_client`) with a total bound on ending a session."""

        async def send(self, request: httpx2.Request, **options: Any) -> httpx2.Response:
            if request.method != "DELETE":
                return await super().send(request, **options)
            with anyio.move_on_after(HTTP_CLOSE_GRACE):
                response = await super().send(request, **options)
                try:
                    await response.aread()
                except BaseException:
                    await response.aclose()
                    raise
                return response
            raise httpx2.ReadTimeout(f"ending the session took longer than {HTTP_CLOSE_GRACE:g} s")

    return Client


@functools.cache
def _bounded_body_type() -> Callable[[httpx2.AsyncByteStream, int], httpx2.AsyncByteStream]:
    import httpx2

    class BoundedBody(httpx2.AsyncByteStream):
        """A response body that raises `ResponseTooLarge` once more than `limit` bytes came."""

        def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
            self._inner = inner
            self._limit = limit

        async def __aiter__(self) -> AsyncIterator[bytes]:
            seen = 0
            async for chunk in self._inner:
                seen += len(chunk)
                if seen > self._limit:
                    raise ResponseTooLarge(self._limit)
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    return BoundedBody


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


# Headers whose values are credentials whoever set them (`auth` puts its token in ``Authorization``).
_CREDENTIAL_HEADERS = ("authorization", "proxy-authorization")


class _SecretNoter:
    """A request hook: the values of `names` (and of the session's resolved headers) become secrets of the
    session being recorded (`recording_status`)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    async def __call__(self, request: httpx2.Request) -> None:
        sink = _STATUS_SINK.get()
        if sink is None:
            return
        names = (*self.names, *(_CONNECTION_HEADERS.get() or ()))
        found = secret_values(request.headers[name] for name in names if name in request.headers)
        if not set(found).issubset(sink.secrets):
            sink.secrets = tuple(dict.fromkeys((*sink.secrets, *found)))


class _RedactingFilter(logging.Filter):
    """Takes the current session's secrets out of the log lines of the HTTP stack (which quote a server's
    reason phrase and headers)."""

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = getattr(_STATUS_SINK.get(), "secrets", ())
        if secrets:
            text = record.getMessage()
            cleaned = redact(text, secrets)
            if cleaned != text:
                record.msg, record.args = cleaned, ()
        return True


_LOG_FILTER = _RedactingFilter()


# A filter applies to the records of its own logger only, not to its children's.
_HTTP_LOGGERS = (
    "httpx2",
    *(f"httpcore2.{name}" for name in ("connection", "http11", "http2", "proxy", "socks")),
)


def _redact_logs() -> None:
    for name in _HTTP_LOGGERS:
        logger = logging.getLogger(name)
        if _LOG_FILTER not in logger.filters:
            logger.addFilter(_LOG_FILTER)


async def _bound_body(limit: int | None, response: httpx2.Response) -> None:
    import httpx2

    stream = response.stream
    # An event stream is bounded per event, by the SDK (`max_sse_event_size`).
    events = response.headers.get("content-type", "").lower().startswith("text/event-stream")
    if limit is not None and not events and isinstance(stream, httpx2.AsyncByteStream):
        response.stream = _bounded_body_type()(stream, limit)


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
