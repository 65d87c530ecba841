"""Streamable HTTP and SSE, whole: the client a list's calls share, what cubepi adds to it, the transports.

`http_client(server)` is the SDK's client (its timeouts) with the server's static headers and `auth` (an SDK
OAuth provider wrapped in `dpop.DPoP`, which binds its tokens to a key where the authorization server
supports it), and a guard on what a session sends (`Client.send`), which adds for each request:

- the headers of a callable `HttpServer.headers`, resolved once per session (`resolve_headers`): the
  client itself is shared by the sessions of a list;
- the HTTP status of the MCP endpoint's error answers, kept for the session's error (the SDK turns them
  into JSON-RPC errors and drops the status). Only the endpoint's own: an OAuth provider's token or
  metadata requests go through this client too, and their failure is the auth's error, not the server's;
- the credentials it sends (``Authorization`` and ``DPoP``, which `auth` sets, and the resolved headers)
  as secrets, redacted from the session's errors and from httpx2's log lines;
- a bound on a response body (`max_response_bytes`, counted as it arrives; event streams are bounded
  per event by the SDK) and on ending a handshake-era session: its ``DELETE``, body included, may take
  `HTTP_CLOSE_GRACE` seconds in all.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import anyio

from ...errors import MCPError
from .._calls.limits import ResponseTooLarge
from .._redact import redact, secret_values
from .._sdk import http_timeouts

if TYPE_CHECKING:
    import httpx2

    from .._configs import HttpConfig
    from .._errors import Attempt
    from .base import Opener, S

__all__ = [
    "HTTP_CLOSE_GRACE",
    "HttpKind",
    "HttpTransport",
    "http_client",
    "open_http",
    "recording",
    "resolve_headers",
]

logger = logging.getLogger("cubepi.mcp")

HttpKind = Literal["streamable-http", "sse"]
# How long ending an HTTP session may take: its DELETE, or its teardown once the caller is cancelled.
HTTP_CLOSE_GRACE = 5.0
_CREDENTIAL_HEADERS = ("authorization", "proxy-authorization", "dpop")

# The session whose requests go out now: its `Attempt`, and the headers a callable resolved for it. The SDK's
# transports send each request in its sender's context, so whoever sends sets it (`recording`).
# (A call context's `auth`, when it gives one, replaces the client's for the session's requests.)
_SCOPE: contextvars.ContextVar[tuple[Attempt, dict[str, str] | None, Any] | None] = contextvars.ContextVar(
    "cubepi_http_session", default=None
)


def http_client(server: HttpConfig) -> httpx2.AsyncClient:
    """A client for `server`: the SDK's timeouts, the server's static headers and auth, cubepi's guard."""
    import httpx2

    from .dpop import with_dpop

    request_timeout, read_timeout = http_timeouts()
    static = server.headers if isinstance(server.headers, Mapping) else None
    _redact_logs()
    names = (*_CREDENTIAL_HEADERS, *(name.lower() for name in static or ()))
    client: httpx2.AsyncClient = _client_type()(
        timeout=httpx2.Timeout(request_timeout, read=read_timeout),
        headers=dict(static) if static else None,
        auth=with_dpop(server.auth),
        event_hooks={"request": [_SecretNoter(names)]},  # a call context may bring credentials
    )
    client.guard(server.max_response_bytes)  # type: ignore[attr-defined]
    return client


class _SecretNoter:
    """A request hook (it runs once `auth` has set its header, before anything is sent or logged): the
    values of the credential headers, the static ones and the resolved ones become secrets of the session."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = frozenset(name.encode() for name in names)

    async def __call__(self, request: httpx2.Request) -> None:
        scope = _SCOPE.get()
        if scope is not None:
            attempt, extra, _ = scope
            names = self.names | {name.lower().encode() for name in extra} if extra else self.names
            headers = request.headers
            found = [value for key, value in headers.raw if key.lower() in names]
            if found:
                attempt.add_secrets(secret_values(value.decode(headers.encoding) for value in found))


@functools.cache
def _client_type() -> Any:
    import httpx2

    from .dpop import with_dpop

    class Client(httpx2.AsyncClient):
        """The SDK's client with cubepi's guard on each request a session sends (see the module docstring).

        The guard sits in `send`, around the request the transport made: the requests an `auth` flow makes
        on its own (an OAuth token or metadata request) are inside it, so their statuses are not taken
        for the MCP endpoint's; a failed token request raises the auth's own error.
        """

        _limit: int | None = None

        def guard(self, limit: int | None) -> None:
            self._limit = limit

        async def send(
            self, request: httpx2.Request, *, stream: bool = False, **options: Any
        ) -> httpx2.Response:
            scope = _SCOPE.get()
            if scope is not None:
                if scope[1]:
                    request.headers.update(scope[1])
                if scope[2] is not None:
                    options["auth"] = with_dpop(scope[2])
            if request.method == "DELETE":
                with anyio.move_on_after(HTTP_CLOSE_GRACE):
                    return await self._guarded(request, False, options)
                raise httpx2.ReadTimeout(f"ending the session took longer than {HTTP_CLOSE_GRACE:g} s")
            return await self._guarded(request, stream, options)

        async def _guarded(self, request: httpx2.Request, stream: bool, options: Any) -> httpx2.Response:
            response = await super().send(request, stream=True, **options)
            scope = _SCOPE.get()
            if scope is not None and response.status_code >= 300:
                scope[0].http_status, scope[0].http_reason = response.status_code, response.reason_phrase
            limit = self._limit
            if limit is not None and not _within(response, limit):
                response.stream = _bounded_type()(response.stream, limit)  # type: ignore[arg-type]
            if not stream:
                try:
                    await response.aread()
                except BaseException:
                    await response.aclose()
                    raise
            return response

        async def close_idle(self) -> None:
            """Close the pooled connections no request uses (httpcore2's pool drops them)."""
            pool = getattr(self._transport, "_pool", None)
            for connection in list(getattr(pool, "connections", ())):
                with contextlib.suppress(Exception):
                    if connection.is_idle():
                        await connection.aclose()

    return Client


def _within(response: httpx2.Response, limit: int) -> bool:
    """Whether a body needs no counting: an event stream (the SDK bounds each event), or a body whose
    ``Content-Length`` (which the HTTP framing holds it to) is within the limit."""
    headers = response.headers
    if headers.get("content-type", "").lower().startswith("text/event-stream"):
        return True
    length = headers.get("content-length")
    return length is not None and length.isdigit() and int(length) <= limit


@functools.cache
def _bounded_type() -> Callable[[httpx2.AsyncByteStream, int], httpx2.AsyncByteStream]:
    import httpx2

    class Bounded(httpx2.AsyncByteStream):
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

    return Bounded


class recording:
    """Within this block (and the tasks it starts, and the requests it sends), the client's guard reports
    to `attempt` and adds `headers` (`resolve_headers`, and a call context's) to each request; `auth`, when
    given, replaces the client's. A class: it is on every call."""

    __slots__ = ("_scope", "_token")

    def __init__(self, attempt: Attempt, headers: dict[str, str] | None = None, auth: Any = None) -> None:
        self._scope = (attempt, headers, auth)
        self._token: contextvars.Token[Any] | None = None

    def __enter__(self) -> None:
        current = _SCOPE.get()
        if current is None or any(a is not b for a, b in zip(current, self._scope, strict=True)):
            self._token = _SCOPE.set(self._scope)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            with contextlib.suppress(ValueError):  # exited in another context
                _SCOPE.reset(self._token)


async def resolve_headers(server: HttpConfig) -> dict[str, str] | None:
    """The headers of a callable `server.headers` (sync or async) for one session; None for static ones.

    A failure of the callable is a readable `MCPError` that never shows a header value.
    """
    make = server.headers
    if not callable(make):
        return None
    try:
        value = make()
        if inspect.isawaitable(value):
            value = await value
        return {str(key): str(item) for key, item in dict(value or {}).items()}
    except Exception as exc:
        raise MCPError(
            f"connecting to {server.describe()} failed: the headers callable raised {type(exc).__name__}",
            server=server.describe(),
        ) from exc


class HttpTransport:
    """The HTTP `base.Transport` of one server: the list's client (or one of the session's own), the
    headers of each session (`headers`), Streamable HTTP or SSE, and an ``"auto"`` server's fallback to
    SSE. A session interrupted gets `HTTP_CLOSE_GRACE` seconds to end."""

    detachable = False
    close_grace = HTTP_CLOSE_GRACE
    takes_call_context = True
    polls_apart = True

    def __init__(self, server: HttpConfig) -> None:
        self.server = server

    def client(self) -> httpx2.AsyncClient:
        return http_client(self.server)

    async def headers(self, call_headers: Mapping[str, str] | None) -> dict[str, str] | None:
        """The headers a session adds: a callable's, then a call context's."""
        server = self.server
        headers = await resolve_headers(server) if callable(server.headers) else None
        if call_headers:
            headers = {**(headers or {}), **call_headers}
        return headers

    @contextlib.asynccontextmanager
    async def session(
        self, opener: Opener[S], attempt: Attempt, opening: anyio.CancelScope | None
    ) -> AsyncIterator[S]:
        async with opener.http_client(self.client) as client:
            headers, auth = await self.headers(opener.call_headers), opener.call_auth
            with recording(attempt, headers, auth):
                async with self._over(opener, attempt, client, opening, headers, auth) as session:
                    yield session

    @contextlib.asynccontextmanager
    async def _over(
        self,
        opener: Opener[S],
        attempt: Attempt,
        client: httpx2.AsyncClient,
        opening: anyio.CancelScope | None,
        headers: dict[str, str] | None,
        auth: Any,
    ) -> AsyncIterator[S]:
        """Streamable HTTP or SSE; an ``"auto"`` server not known yet is tried over Streamable HTTP first,
        and a 4xx (not 401 / 403) to it means an SSE-only server."""
        server, learned = self.server, opener.learned_transport
        kind: HttpKind = "streamable-http" if server.transport == "auto" else server.transport
        if learned == "sse" or learned == "streamable-http":
            kind = learned

        def over(kind: HttpKind) -> contextlib.AbstractAsyncContextManager[S]:
            streams = open_http(server, kind, client)
            return opener.start(attempt, streams, kind, opening, headers=headers, auth=auth)

        async with contextlib.AsyncExitStack() as stack:
            try:
                session = await stack.enter_async_context(over(kind))
            except Exception as exc:
                status = attempt.http_status
                auto = learned is None and server.transport == "auto"
                if not auto or status is None or not 400 <= status < 500 or status in (401, 403):
                    raise
                attempt.note = (
                    f"Streamable HTTP first: the server answered HTTP {status}; then the SSE transport"
                )
                attempt.phase, attempt.http_status = "startup", None
                logger.debug("Streamable HTTP failed (%r); trying SSE", exc)
                session = await stack.enter_async_context(over("sse"))
            yield session


@contextlib.asynccontextmanager
async def open_http(
    server: HttpConfig, kind: HttpKind, client: httpx2.AsyncClient
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's Streamable HTTP or SSE transport to `server` on `client` (which it does not close)."""
    if kind == "streamable-http":
        from mcp.client.streamable_http import streamable_http_client

        bound = server.max_response_bytes
        async with streamable_http_client(
            server.url, http_client=client, max_sse_event_size=bound
        ) as streams:
            yield streams
    else:
        from mcp.client.sse import sse_client

        async with sse_client(server.url, httpx_client_factory=_Lent(client)) as streams:  # type: ignore[arg-type]
            yield streams


class _Lent:
    """Lends a client to `sse_client` (which closes what its factory returns) without closing it."""

    def __init__(self, client: httpx2.AsyncClient) -> None:
        self.client = client

    def __call__(self, **_: Any) -> _Lent:
        return self

    async def __aenter__(self) -> httpx2.AsyncClient:
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        return None


class _RedactingFilter(logging.Filter):
    """Takes the current session's secrets out of the log lines of the HTTP stack (which quote a server's
    reason phrase and headers)."""

    def filter(self, record: logging.LogRecord) -> bool:
        scope = _SCOPE.get()
        if scope is not None and scope[0].secrets:
            text = record.getMessage()
            cleaned = redact(text, scope[0].secrets)
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
        found = logging.getLogger(name)
        if _LOG_FILTER not in found.filters:
            found.addFilter(_LOG_FILTER)
