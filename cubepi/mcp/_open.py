"""Opening an MCP session in either protocol era, over stdio, Streamable HTTP or SSE.

`open_session(endpoint)` is an async context manager over an SDK transport and a `ClientSession` that is
ready to use: on a server whose protocol is known it adopts it (2026-07-28: no request at all; handshake
era: ``initialize``); otherwise it probes ``server/discover`` once, bounded, and falls back to
``initialize``. For an ``"auto"`` HTTP server it finds the transport (Streamable HTTP, else SSE).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

import anyio

from .._calling import lent_elicitation
from ..errors import MCPError
from . import _errors
from ._http import connection_headers, http_client, recording_status
from ._input import with_defaults
from ._process import end_group, track_process
from ._redact import secret_values
from ._sdk import ensure_sdk
from ._session import (
    UNSUPPORTED_PROTOCOL_VERSION,
    Attempt,
    Endpoint,
    Interrupted,
    Protocol,
    Session,
    timeout_error,
)
from ._stderr import StderrCapture

if TYPE_CHECKING:
    import httpx2
    from mcp import ClientSession

    from ._servers import HttpServer, StdioServer

__all__ = ["DISCOVER_LIMIT", "negotiate", "open_session", "resolve_command"]

logger = logging.getLogger("cubepi.mcp")

# How long a server may take to answer ``server/discover`` before it counts as a handshake-era server that
# ignores unknown methods (one that answers with an error falls back at once).
DISCOVER_LIMIT = 2.0


# -- negotiation -------------------------------------------------------------------------------------------


async def negotiate(client: ClientSession, attempt: Attempt) -> None:
    """Find the server's protocol on a fresh session: ``server/discover``, else the handshake.

    A server that answers discover with an error falls back at once; one that does not answer within
    `DISCOVER_LIMIT` seconds gets ``initialize``. A server that was only slow to start answers that
    handshake with -32022 (its connection already serves 2026-07-28), and so does one naming other
    modern versions: both go to the SDK's own negotiation, which probes again at a mutual version.
    """
    from mcp import types
    from mcp.client._probe import negotiate_auto
    from mcp.shared.exceptions import MCPError as SdkError
    from mcp_types.version import LATEST_MODERN_VERSION, MODERN_PROTOCOL_VERSIONS
    from pydantic import ValidationError

    try:
        with anyio.fail_after(DISCOVER_LIMIT):
            raw = await client.send_discover(LATEST_MODERN_VERSION)
    except (SdkError, TimeoutError) as exc:
        refused = attempt.http_status in (401, 403) or 300 <= (attempt.http_status or 0) < 400
        if isinstance(exc, SdkError) and (_errors.is_connection_closed(exc) or refused):
            raise  # the connection is gone, or the request was refused: no era verdict
        if isinstance(exc, SdkError) and exc.code == UNSUPPORTED_PROTOCOL_VERSION:
            await negotiate_auto(client)
            return
        attempt.http_status = None  # the probe's refusal says nothing of the handshake
        try:
            await client.initialize()
        except SdkError as handshake:
            if handshake.code != UNSUPPORTED_PROTOCOL_VERSION:
                raise
            await negotiate_auto(client)
        return
    try:
        result = types.DiscoverResult.model_validate(raw)
    except ValidationError:
        await client.initialize()
        return
    if not any(version in result.supported_versions for version in MODERN_PROTOCOL_VERSIONS):
        await client.initialize()
        return
    client.adopt(result)


def _adopts(endpoint: Endpoint) -> bool:
    """Whether a session to `endpoint` starts by adopting a 2026-07-28 discover result it already has (or
    a pinned revision): `_start` then sends no request."""
    pinned = getattr(endpoint.server, "protocol", "auto")
    if pinned == "auto":
        return endpoint.protocol is not None and endpoint.protocol.stateless
    return pinned != "legacy"


async def _start(endpoint: Endpoint, client: ClientSession, attempt: Attempt) -> Protocol:
    """Make `client` ready as the endpoint's protocol says; returns the protocol it speaks."""
    pinned = getattr(endpoint.server, "protocol", "auto")
    known = endpoint.protocol
    if pinned == "legacy" or (pinned == "auto" and known is not None and not known.stateless):
        result = await client.initialize()
        return Protocol(result.protocol_version)
    if pinned != "auto":
        from mcp import types

        attempt.forced_revision = pinned
        discover = known.discover if known is not None else None
        if discover is None:
            discover = types.DiscoverResult(
                supported_versions=[pinned],
                capabilities=types.ServerCapabilities(),
                result_type="complete",
                ttl_ms=0,
                cache_scope="public",
            )
        client.adopt(discover)
        return Protocol(pinned, discover)
    if known is not None:
        client.adopt(known.discover)  # type: ignore[arg-type]
        return known
    await negotiate(client, attempt)
    version = client.protocol_version or ""
    return Protocol(version, client.discover_result)


# -- transports --------------------------------------------------------------------------------------------


def _stdio_params(endpoint: Endpoint, attempt: Attempt) -> Any:
    from mcp.client.stdio import StdioServerParameters

    server: StdioServer = endpoint.server  # type: ignore[assignment]
    env = server.environment()
    attempt.secrets = secret_values((server.env or {}).values())
    return StdioServerParameters(
        command=resolve_command(server, env),
        args=list(server.args),
        env=env,
        cwd=os.fspath(server.cwd) if server.cwd is not None else None,
    )


@contextlib.asynccontextmanager
async def _transport(
    endpoint: Endpoint,
    attempt: Attempt,
    kind: Literal["stdio", "streamable-http", "sse"],
    client: httpx2.AsyncClient | None,
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK transport of `kind`: its (read, write) streams for the block."""
    if kind == "stdio":
        from mcp.client.stdio import stdio_client

        server: StdioServer = endpoint.server  # type: ignore[assignment]
        params = _stdio_params(endpoint, attempt)
        capture = attempt.stderr = StderrCapture(on_line=server.on_stderr)
        attempt.process.max_line = server.max_response_bytes
        async with contextlib.AsyncExitStack() as stack:
            stack.push_async_callback(end_group, attempt.process)  # once the SDK's transport has closed
            try:
                with track_process(attempt.process):
                    streams = await stack.enter_async_context(stdio_client(params, errlog=capture.writer))
            finally:
                capture.close_writer()
            yield streams
        return
    http: HttpServer = endpoint.server  # type: ignore[assignment]
    assert client is not None
    if kind == "streamable-http":
        from mcp.client.streamable_http import streamable_http_client

        bound = http.max_response_bytes
        async with streamable_http_client(http.url, http_client=client, max_sse_event_size=bound) as streams:
            yield streams
    else:
        from mcp.client.sse import sse_client

        async with sse_client(http.url, httpx_client_factory=_Borrowed(client)) as streams:  # type: ignore[arg-type]
            yield streams


class _Borrowed:
    """Lends an httpx2 client to `sse_client` (which closes what its factory returns) without closing it."""

    def __init__(self, client: httpx2.AsyncClient) -> None:
        self.client = client

    def __call__(self, **_: Any) -> _Borrowed:
        return self

    async def __aenter__(self) -> httpx2.AsyncClient:
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        return None


@contextlib.asynccontextmanager
async def _open_once(
    endpoint: Endpoint,
    attempt: Attempt,
    kind: Literal["stdio", "streamable-http", "sse"],
    client: httpx2.AsyncClient | None,
    session_kwargs: Mapping[str, Any],
) -> AsyncIterator[Session]:
    """One transport and one ready `ClientSession`, closed on exit."""
    from mcp import ClientSession

    attempt.phase = "startup"
    if kind == "streamable-http" and _adopts(endpoint):
        # Opening sends nothing and waits for nothing: no start-up limit to keep.
        async with (
            _transport(endpoint, attempt, kind, client) as (read, write),
            ClientSession(read, write, **session_kwargs) as sdk_session,
        ):
            attempt.phase = "initialize"
            endpoint.protocol = await _start(endpoint, sdk_session, attempt)
            yield Session(sdk_session, endpoint, attempt)
            attempt.phase = "close"
        return
    limit = endpoint.timeouts.startup
    # The start-up deadline encloses the transport so that cancel scopes nest; it is lifted once the
    # session is ready. The SDK's stdio transport shields its own shutdown.
    with anyio.CancelScope() as startup:
        if limit is not None:
            startup.deadline = anyio.current_time() + limit
        async with (
            _transport(endpoint, attempt, kind, client) as (read, write),
            ClientSession(read, write, **session_kwargs) as sdk_session,
        ):
            opening = attempt.opening = anyio.CancelScope()
            if attempt.interrupted:
                opening.cancel()
            with opening:
                attempt.phase = "initialize"
                try:
                    protocol = await _start(endpoint, sdk_session, attempt)
                except BaseException:
                    if startup.cancel_called and limit is not None and attempt.on_timeout is not None:
                        attempt.on_timeout(timeout_error(endpoint, attempt, "initialize", limit))
                    raise
            attempt.opening = None
            if opening.cancel_called:
                raise Interrupted()
            if endpoint.protocol != protocol:
                endpoint.protocol = protocol
            startup.deadline = math.inf
            session = Session(sdk_session, endpoint, attempt)
            if kind == "stdio" and protocol.stateless:
                session.starting = limit if limit is not None else math.inf
            yield session
            attempt.phase = "close"
    if startup.cancelled_caught and limit is not None:
        raise timeout_error(endpoint, attempt, "initialize", limit)


def resolve_command(server: StdioServer, env: Mapping[str, str]) -> str:
    """The stdio server's command as a shell would find it: on the server's ``PATH`` (``npx`` finds
    ``npx.cmd`` on Windows), a relative path with a directory part relative to `cwd`. Raises a clear
    `MCPError` for a missing command or working directory."""
    command = server.command
    describe = server.describe()
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
    """A fresh transport and ready session to `endpoint`'s server, closed when the block ends.

    For an ``"auto"`` HTTP server whose transport is not known yet, Streamable HTTP is tried first; an HTTP
    4xx to its first requests means an SSE-only server, and the SSE transport is used (and remembered on
    the endpoint). Exceptions come out raw (exception groups included); `run_stateless` translates them.
    `session_kwargs` go to the SDK's `ClientSession` (callbacks for logging, sampling, elicitation, ...).
    """
    ensure_sdk()
    attempt = attempt if attempt is not None else Attempt()
    session_kwargs = {**endpoint.callbacks, **session_kwargs}
    lent = lent_elicitation()
    if lent is not None and "elicitation_callback" not in session_kwargs:
        session_kwargs["elicitation_callback"] = with_defaults(lent)
    server = endpoint.server
    if server.kind == "stdio":
        async with _open_once(endpoint, attempt, "stdio", None, session_kwargs) as session:
            yield session
        return
    http: HttpServer = server
    async with contextlib.AsyncExitStack() as stack:
        if callable(http.headers):
            await stack.enter_async_context(connection_headers(http))
        stack.enter_context(recording_status(attempt))
        lease: contextlib.AbstractAsyncContextManager[httpx2.AsyncClient]
        if endpoint.resources is not None:  # the list's shared client (see _toollist)
            lease = endpoint.resources.http_client(lambda: http_client(http))
        else:
            lease = _owned(http_client(http))
        client = await stack.enter_async_context(lease)
        kind = endpoint.http_transport
        if kind is None:
            try:
                session = await stack.enter_async_context(
                    _open_once(endpoint, attempt, "streamable-http", client, session_kwargs)
                )
                endpoint.http_transport = "streamable-http"
            except Exception as exc:
                status = attempt.http_status
                if status is None or not 400 <= status < 500 or status in (401, 403):
                    raise
                attempt.note = (
                    f"Streamable HTTP first: the server answered HTTP {status}; then the SSE transport"
                )
                attempt.phase = "startup"
                attempt.http_status = None
                logger.debug("Streamable HTTP failed (%r); trying SSE", exc)
                session = await stack.enter_async_context(
                    _open_once(endpoint, attempt, "sse", client, session_kwargs)
                )
                endpoint.http_transport = "sse"
        else:
            session = await stack.enter_async_context(
                _open_once(endpoint, attempt, kind, client, session_kwargs)
            )
        yield session


@contextlib.asynccontextmanager
async def _owned(client: httpx2.AsyncClient) -> AsyncIterator[httpx2.AsyncClient]:
    async with client:
        yield client
