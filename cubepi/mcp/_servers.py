"""The server configs a user makes: `StdioServer`, `HttpServer`, and what a config does (`connect()`).

Their data and its rules (validation, secret-free reprs, travelling) are `_configs`'s, so that the layers
below read a config without importing the connection a config opens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias, cast

from ._calls.limits import SAME_AS_TIMEOUT
from ._configs import HttpConfig, StdioConfig
from ._connection import MCPConnection, ToolsChangedCallback
from ._transports import stdio
from ._transports.stdio import ENV_PASSTHROUGH

if TYPE_CHECKING:
    from mcp.client.session import (
        ElicitationFnT,
        ListRootsFnT,
        LoggingFnT,
        MessageHandlerFnT,
        SamplingFnT,
    )
    from mcp.types import LoggingLevel

__all__ = ["ENV_PASSTHROUGH", "HttpServer", "Server", "StdioServer"]


class _Connectable:
    """`connect()`, shared by both server configs."""

    def connect(
        self,
        *,
        timeout: float | None = 30.0,
        startup_timeout: float | None = SAME_AS_TIMEOUT,
        auto_reconnect: bool = False,
        logging_callback: LoggingFnT | None = None,
        log_level: LoggingLevel | None = None,
        sampling_callback: SamplingFnT | None = None,
        elicitation_callback: ElicitationFnT | None = None,
        message_handler: MessageHandlerFnT | None = None,
        list_roots_callback: ListRootsFnT | None = None,
        on_tools_changed: ToolsChangedCallback | None = None,
    ) -> MCPConnection:
        """A persistent connection for ``async with server.connect() as conn:`` (see docs/connections.md).

        `timeout` bounds every phase (start-up included, unless `startup_timeout` is given) and every
        call without progress. ``auto_reconnect=True``
        reopens a dead connection and sends the failed call once more (at-least-once). The callbacks go
        to the SDK's `ClientSession`. On a 2026-07-28 server, logs are sent only to requests that ask
        for them: `log_level` asks (default ``"debug"`` when a `logging_callback` is given).
        The lists loaded from the connection follow the server's tool list; `on_tools_changed` (sync or
        async) is told what changed (a `ToolChanges`) each time the server says its tools changed.
        """
        return MCPConnection(
            cast("Server", self),
            timeout=timeout,
            startup_timeout=startup_timeout,
            auto_reconnect=auto_reconnect,
            logging_callback=logging_callback,
            log_level=log_level,
            sampling_callback=sampling_callback,
            elicitation_callback=elicitation_callback,
            message_handler=message_handler,
            list_roots_callback=list_roots_callback,
            on_tools_changed=on_tools_changed,
        )


class StdioServer(StdioConfig, _Connectable):
    """An MCP server started as a subprocess and spoken to over stdin/stdout.

    The process gets the MCP SDK's safe default environment (``PATH``, ``HOME``, ...), the parent's
    variables named in `ENV_PASSTHROUGH` (proxies, CA bundles, ``LANG`` / ``LC_*``, ``TMPDIR``), then `env`;
    never the whole parent environment unless ``inherit_env=True``. Values of `env` are secrets as far as
    cubepi is concerned: they never appear in a repr, a log line or an error.

    `command` is resolved on the ``PATH`` the server gets, as a shell would (``npx`` finds ``npx.cmd`` on
    Windows); a relative path with a directory part is relative to `cwd`. What the server prints on stderr
    is kept (the last 16 KiB, shown in startup and crash errors) and, with `on_stderr`, passed line by line
    to that callback; it runs in the event loop (keep it quick), and an exception in it is logged, never
    raised.

    `max_response_bytes` (default 64 MiB; None: no limit) bounds one message the server writes: a longer
    line fails the call with an `MCPError` naming the limit, before it can fill the caller's memory.
    """

    def environment(self) -> dict[str, str]:
        """The environment the server process gets (see the class docstring)."""
        return stdio.environment(self)


class HttpServer(HttpConfig, _Connectable):
    """An MCP server reached over HTTP: Streamable HTTP, the older SSE transport, or ``"auto"``.

    ``"auto"`` tries Streamable HTTP first and falls back to SSE when the server answers the initialize
    POST with a 4xx, as the MCP specification's backwards-compatibility section describes. `headers` and
    `auth` (any `httpx2.Auth`, so the SDK's OAuth providers work) go on every request; header values never
    appear in a repr or an error, and neither does the URL's query string. `headers` may be a callable
    (sync or async) returning fresh headers: it is called once for each connection (rotating tokens).

    `max_response_bytes` (default 64 MiB; None: no limit) bounds one response body, or one event of a
    Streamable HTTP event stream: a larger one fails the call with an `MCPError` naming the limit.
    """


Server: TypeAlias = StdioServer | HttpServer
