"""Server configurations: small frozen dataclasses whose reprs never show a header or env value."""

from __future__ import annotations

import enum
import fnmatch
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, cast
from urllib.parse import urlsplit, urlunsplit

from ..errors import UserError

if TYPE_CHECKING:
    import httpx
    from mcp.client.session import (
        ElicitationFnT,
        ListRootsFnT,
        LoggingFnT,
        MessageHandlerFnT,
        SamplingFnT,
    )

    from ._connection import MCPConnection

__all__ = [
    "ENV_PASSTHROUGH",
    "SAME_AS_TIMEOUT",
    "Headers",
    "HttpServer",
    "HttpTransport",
    "Server",
    "StartupTimeout",
    "StderrCallback",
    "StdioServer",
]


class _SameAsTimeout(enum.Enum):
    """The default of `startup_timeout`: start-up gets the limit given as `timeout`."""

    SAME_AS_TIMEOUT = "same as timeout"

    def __repr__(self) -> str:
        return "SAME_AS_TIMEOUT"


SAME_AS_TIMEOUT: Final = _SameAsTimeout.SAME_AS_TIMEOUT
# `startup_timeout`: seconds, None (no limit), or SAME_AS_TIMEOUT (the default).
StartupTimeout: TypeAlias = "float | Literal[_SameAsTimeout.SAME_AS_TIMEOUT] | None"

# Parent variables a stdio server gets on top of the SDK's safe default (PATH, HOME, ...): proxies, CA
# bundles, locale and temp dir, without which `npx` / `uvx` break behind a proxy. No tokens, no keys.
ENV_PASSTHROUGH: tuple[str, ...] = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "LANG",
    "LC_*",
    "TMPDIR",
)

StderrCallback: TypeAlias = Callable[[str], Any]
# Static headers, or a callable giving fresh ones for each connection (rotating tokens); may be async.
Headers: TypeAlias = Mapping[str, str] | Callable[[], Any]

HttpTransport: TypeAlias = Literal["auto", "streamable-http", "sse"]
_TRANSPORTS = ("auto", "streamable-http", "sse")


class _Connectable:
    """`connect()`, shared by both server configurations."""

    def connect(
        self,
        *,
        timeout: float | None = 30.0,
        startup_timeout: StartupTimeout = SAME_AS_TIMEOUT,
        auto_reconnect: bool = False,
        logging_callback: LoggingFnT | None = None,
        sampling_callback: SamplingFnT | None = None,
        elicitation_callback: ElicitationFnT | None = None,
        message_handler: MessageHandlerFnT | None = None,
        list_roots_callback: ListRootsFnT | None = None,
    ) -> MCPConnection:
        """A persistent connection for ``async with server.connect() as conn:`` (see docs/connections.md).

        `timeout` bounds each phase: starting and initialize, listing, calls; `startup_timeout`, when
        given, replaces it for starting and initialize (a cold ``npx -y`` / ``uvx`` start).
        ``auto_reconnect=True`` reopens a dead connection and sends the failed call once more
        (at-least-once). The callbacks go to the SDK's `ClientSession`.
        """
        from ._connection import MCPConnection

        return MCPConnection(
            cast("StdioServer | HttpServer", self),
            timeout=timeout,
            startup_timeout=startup_timeout,
            auto_reconnect=auto_reconnect,
            logging_callback=logging_callback,
            sampling_callback=sampling_callback,
            elicitation_callback=elicitation_callback,
            message_handler=message_handler,
            list_roots_callback=list_roots_callback,
        )


@dataclass(frozen=True, repr=False)
class StdioServer(_Connectable):
    """An MCP server started as a subprocess and spoken to over stdin/stdout.

    The process gets the MCP SDK's safe default environment (``PATH``, ``HOME``, ...), the parent's
    variables named in `ENV_PASSTHROUGH` (proxies, CA bundles, ``LANG`` / ``LC_*``, ``TMPDIR``), then `env`;
    never the whole parent environment unless ``inherit_env=True``. Values of `env` are secrets as far as
    cubepi is concerned: they never appear in a repr, a log line or an error.

    `command` is resolved on the ``PATH`` the server gets, as a shell would (``npx`` finds ``npx.cmd`` on
    Windows); a relative path with a directory part is relative to `cwd`. What the server prints on stderr
    is kept (the last 16 KiB, shown in startup and crash errors) and, with `on_stderr`, passed line by line
    to that callback; it runs on a helper thread, and an exception in it is logged, never raised.
    """

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = field(default=None)
    cwd: str | os.PathLike[str] | None = None
    inherit_env: bool = False
    on_stderr: StderrCallback | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.command, str) or not self.command:
            raise UserError(f"StdioServer needs a command, got {self.command!r}")
        if isinstance(self.args, str):
            raise UserError("StdioServer args must be a list of strings, not one string")
        object.__setattr__(self, "args", tuple(str(arg) for arg in self.args))
        if self.env is not None:
            object.__setattr__(self, "env", {str(k): str(v) for k, v in dict(self.env).items()})
        if not isinstance(self.inherit_env, bool):
            raise UserError(f"inherit_env must be True or False, got {self.inherit_env!r}")
        if self.on_stderr is not None and not callable(self.on_stderr):
            raise UserError("on_stderr must be a callable taking one line of text")

    def environment(self) -> dict[str, str]:
        """The environment the server process gets (see the class docstring)."""
        if self.inherit_env:
            base = dict(os.environ)
        else:
            from mcp.client.stdio import get_default_environment

            base = get_default_environment()
            for key, value in os.environ.items():
                if any(fnmatch.fnmatchcase(key, pattern) for pattern in ENV_PASSTHROUGH):
                    base.setdefault(key, value)
        return {**base, **(self.env or {})}

    def describe(self) -> str:
        """A secret-free one-line description (used in errors and as the tools' origin)."""
        text = shlex.join([self.command, *self.args])
        if len(text) > 160:
            text = text[:157] + "..."
        return f"stdio server `{text}`"

    def __repr__(self) -> str:
        env = f", env=<{len(self.env)} vars: {', '.join(sorted(self.env))}>" if self.env else ""
        cwd = f", cwd={os.fspath(self.cwd)!r}" if self.cwd is not None else ""
        inherit = ", inherit_env=True" if self.inherit_env else ""
        return f"StdioServer(command={self.command!r}, args={list(self.args)!r}{env}{cwd}{inherit})"


@dataclass(frozen=True, repr=False)
class HttpServer(_Connectable):
    """An MCP server reached over HTTP: Streamable HTTP, the older SSE transport, or ``"auto"``.

    ``"auto"`` tries Streamable HTTP first and falls back to SSE when the server answers the initialize
    POST with a 4xx, as the MCP specification's backwards-compatibility section describes. `headers` and
    `auth` (any `httpx.Auth`, so the SDK's OAuth provider works) go on every request; header values never
    appear in a repr or an error, and neither does the URL's query string. `headers` may be a callable
    (sync or async) returning fresh headers: it is called once for each connection (rotating tokens).
    """

    url: str
    headers: Headers | None = None
    auth: httpx.Auth | None = None
    transport: HttpTransport = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.url, str) or not self.url.startswith(("http://", "https://")):
            raise UserError(f"HttpServer needs an http:// or https:// URL, got {_safe_url(str(self.url))!r}")
        if self.transport not in _TRANSPORTS:
            raise UserError(f"transport must be one of {', '.join(_TRANSPORTS)}; got {self.transport!r}")
        if self.headers is not None and not callable(self.headers):
            object.__setattr__(self, "headers", {str(k): str(v) for k, v in dict(self.headers).items()})

    def describe(self) -> str:
        """A secret-free one-line description (no header values, no query string, no user info)."""
        return f"http server {_safe_url(self.url)}"

    def __repr__(self) -> str:
        if callable(self.headers):
            headers = ", headers=<callable>"
        else:
            headers = f", headers=<{', '.join(sorted(self.headers))}>" if self.headers else ""
        auth = f", auth=<{type(self.auth).__name__}>" if self.auth is not None else ""
        return f"HttpServer(url={_safe_url(self.url)!r}{headers}{auth}, transport={self.transport!r})"


Server: TypeAlias = StdioServer | HttpServer


def _safe_url(url: str) -> str:
    """The URL without user info, query or fragment (where API keys hide)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable url>"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port else host
    query = "?…" if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, "", "")) + query
