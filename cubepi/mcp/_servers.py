"""Server configurations: small frozen dataclasses whose reprs never show a header or env value."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias
from urllib.parse import urlsplit, urlunsplit

from ..errors import UserError

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpServer", "HttpTransport", "Server", "StdioServer"]

HttpTransport: TypeAlias = Literal["auto", "streamable-http", "sse"]
_TRANSPORTS = ("auto", "streamable-http", "sse")


@dataclass(frozen=True, repr=False)
class StdioServer:
    """An MCP server started as a subprocess and spoken to over stdin/stdout.

    The process gets the MCP SDK's safe default environment (``PATH``, ``HOME``, ...) plus `env`, never the
    whole parent environment. Values of `env` are secrets as far as cubepi is concerned: they never appear
    in a repr, a log line or an error.
    """

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = field(default=None)
    cwd: str | os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.command, str) or not self.command:
            raise UserError(f"StdioServer needs a command, got {self.command!r}")
        if isinstance(self.args, str):
            raise UserError("StdioServer args must be a list of strings, not one string")
        object.__setattr__(self, "args", tuple(str(arg) for arg in self.args))
        if self.env is not None:
            object.__setattr__(self, "env", {str(k): str(v) for k, v in dict(self.env).items()})

    def describe(self) -> str:
        """A secret-free one-line description (used in errors and as the tools' origin)."""
        text = shlex.join([self.command, *self.args])
        if len(text) > 160:
            text = text[:157] + "..."
        return f"stdio server `{text}`"

    def __repr__(self) -> str:
        env = f", env=<{len(self.env)} vars: {', '.join(sorted(self.env))}>" if self.env else ""
        cwd = f", cwd={os.fspath(self.cwd)!r}" if self.cwd is not None else ""
        return f"StdioServer(command={self.command!r}, args={list(self.args)!r}{env}{cwd})"


@dataclass(frozen=True, repr=False)
class HttpServer:
    """An MCP server reached over HTTP: Streamable HTTP, the older SSE transport, or ``"auto"``.

    ``"auto"`` tries Streamable HTTP first and falls back to SSE when the server answers the initialize
    POST with a 4xx, as the MCP specification's backwards-compatibility section describes. `headers` and
    `auth` (any `httpx.Auth`, so the SDK's OAuth provider works) go on every request; header values never
    appear in a repr or an error, and neither does the URL's query string.
    """

    url: str
    headers: Mapping[str, str] | None = None
    auth: httpx.Auth | None = None
    transport: HttpTransport = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.url, str) or not self.url.startswith(("http://", "https://")):
            raise UserError(f"HttpServer needs an http:// or https:// URL, got {_safe_url(str(self.url))!r}")
        if self.transport not in _TRANSPORTS:
            raise UserError(f"transport must be one of {', '.join(_TRANSPORTS)}; got {self.transport!r}")
        if self.headers is not None:
            object.__setattr__(self, "headers", {str(k): str(v) for k, v in dict(self.headers).items()})

    def describe(self) -> str:
        """A secret-free one-line description (no header values, no query string, no user info)."""
        return f"http server {_safe_url(self.url)}"

    def __repr__(self) -> str:
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
