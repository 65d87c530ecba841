"""What a server config holds: small frozen dataclasses whose reprs never show a header or env value.

The layers below the public configs (the transports, the calls, the lists) read these; `_servers` adds what
a user does with a config (`connect()`, `environment()`) on top.
"""

from __future__ import annotations

import functools
import os
import pickle
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias, cast
from urllib.parse import urlsplit, urlunsplit

from ..errors import UserError
from ._calls.limits import DEFAULT_MAX_RESPONSE_BYTES, check_response_bytes
from ._calls.protocol import ProtocolSetting, check_protocol

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "Headers",
    "HttpConfig",
    "HttpTransport",
    "LeftBehind",
    "ServerConfig",
    "StderrCallback",
    "StdioConfig",
]

StderrCallback: TypeAlias = Callable[[str], Any]
# Static headers, or a callable giving fresh ones for each connection (rotating tokens); may be async.
Headers: TypeAlias = Mapping[str, str] | Callable[[], Any]

HttpTransport: TypeAlias = Literal["auto", "streamable-http", "sse"]
_TRANSPORTS = ("auto", "streamable-http", "sse")


class LeftBehind:
    """Stands, in another process, for a setting that could not be pickled with its server config."""

    def __init__(self, setting: str, kind: str, reason: str) -> None:
        self.setting = setting
        self.kind = kind
        self.reason = reason

    def __repr__(self) -> str:
        return f"<{self.kind}, left behind>"


# What each setting that may hold a live object says when it could not travel.
_WAY_OUT = {
    "auth": (
        "give the worker a way to make its own credentials: headers= a module-level function that reads "
        "the token where it runs (an environment variable, a file), or an httpx2.Auth that pickles (a "
        "__reduce__ that builds it again from what it needs: an auth factory)"
    ),
    "headers": (
        "use a module-level function (pickle sends functions by name) or cloudpickle, or build the "
        "server config in the worker"
    ),
    "on_stderr": "use a module-level function (pickle sends functions by name), or none",
}


def _pickle_failure(value: object) -> str | None:
    """Why `value` does not pickle with the pickler at work (a cloudpickle, Ray's included, or pickle)."""
    try:
        _pickler_at_work().dumps(value)
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return None


def _pickler_at_work() -> Any:
    """The cloudpickle module whose code is on the call stack (it is pickling us), else `pickle`."""
    frame = sys._getframe(1)
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        module = sys.modules.get(name) if "cloudpickle" in name else None
        if callable(getattr(module, "dumps", None)):
            return module
        frame = frame.f_back  # type: ignore[assignment]
    return pickle


class _Travelling:
    """Travelling (pickle), shared by both server configurations.

    A config pickles whole: what the user gave it (header values and `env` included) is what a worker
    needs to call. A setting holding a live object that does not pickle (an `auth` with a lock, a lambda
    with plain pickle) is left behind: the config still travels, and calling through it raises `UserError`
    naming the setting and the way out (`check_travelled`).
    """

    _LIVE_SETTINGS: ClassVar[tuple[str, ...]] = ()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for setting in self._LIVE_SETTINGS:
            value = state.get(setting)
            if value is None or isinstance(value, (Mapping, LeftBehind)):
                continue
            reason = _pickle_failure(value)
            if reason is not None:
                state[setting] = LeftBehind(setting, type(value).__name__, reason)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def check_travelled(self) -> None:
        """Raise `UserError` if a setting of this config could not be pickled (see the class docstring)."""
        for setting in self._LIVE_SETTINGS:
            value = getattr(self, setting, None)
            if isinstance(value, LeftBehind):
                describe = cast("ServerConfig", self).describe()
                raise UserError(
                    f"the {setting}= of {describe} ({value.kind}) could not be pickled "
                    f"({value.reason}), so it stayed in the process that made it and this copy of the "
                    f"config cannot call; {_WAY_OUT[setting]}"
                )


@dataclass(frozen=True, repr=False)
class StdioConfig(_Travelling):
    """What starts a stdio server and how it is spoken to: the data of `StdioServer`."""

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = field(default=None)
    cwd: str | os.PathLike[str] | None = None
    inherit_env: bool = False
    on_stderr: StderrCallback | None = field(default=None, compare=False)
    protocol: ProtocolSetting = "auto"
    max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES
    kind: ClassVar[Literal["stdio"]] = "stdio"
    _LIVE_SETTINGS: ClassVar[tuple[str, ...]] = ("on_stderr",)

    def __post_init__(self) -> None:
        check_protocol(self.protocol)
        check_response_bytes(self.max_response_bytes)
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

    def describe(self) -> str:
        """A secret-free one-line description (used in errors and as the tools' origin)."""
        return self._description

    @functools.cached_property
    def _description(self) -> str:
        text = shlex.join([self.command, *self.args])
        if len(text) > 160:
            text = text[:157] + "..."
        return f"stdio server `{text}`"

    def __repr__(self) -> str:
        env = f", env=<{len(self.env)} vars: {', '.join(sorted(self.env))}>" if self.env else ""
        cwd = f", cwd={os.fspath(self.cwd)!r}" if self.cwd is not None else ""
        inherit = ", inherit_env=True" if self.inherit_env else ""
        protocol = f", protocol={self.protocol!r}" if self.protocol != "auto" else ""
        name = type(self).__name__
        return (
            f"{name}(command={self.command!r}, args={list(self.args)!r}{env}{cwd}{inherit}{protocol}"
            f"{_limit_repr(self.max_response_bytes)})"
        )


@dataclass(frozen=True, repr=False)
class HttpConfig(_Travelling):
    """Where an HTTP server is and how it is spoken to: the data of `HttpServer`."""

    url: str
    headers: Headers | None = None
    auth: httpx2.Auth | None = None
    transport: HttpTransport = "auto"
    protocol: ProtocolSetting = "auto"
    max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES
    kind: ClassVar[Literal["http"]] = "http"
    _LIVE_SETTINGS: ClassVar[tuple[str, ...]] = ("headers", "auth")

    def __post_init__(self) -> None:
        check_protocol(self.protocol)
        check_response_bytes(self.max_response_bytes)
        if not isinstance(self.url, str) or not self.url.startswith(("http://", "https://")):
            raise UserError(f"HttpServer needs an http:// or https:// URL, got {_safe_url(str(self.url))!r}")
        if self.transport not in _TRANSPORTS:
            raise UserError(f"transport must be one of {', '.join(_TRANSPORTS)}; got {self.transport!r}")
        if self.headers is not None and not callable(self.headers):
            object.__setattr__(self, "headers", {str(k): str(v) for k, v in dict(self.headers).items()})

    def describe(self) -> str:
        """A secret-free one-line description (no header values, no query string, no user info)."""
        return self._description

    @functools.cached_property
    def _description(self) -> str:
        return f"http server {_safe_url(self.url)}"

    def __repr__(self) -> str:
        if isinstance(self.headers, LeftBehind):
            headers = f", headers={self.headers!r}"
        elif callable(self.headers):
            headers = ", headers=<callable>"
        else:
            headers = f", headers=<{', '.join(sorted(self.headers))}>" if self.headers else ""
        if isinstance(self.auth, LeftBehind):
            auth = f", auth={self.auth!r}"
        else:
            auth = f", auth=<{type(self.auth).__name__}>" if self.auth is not None else ""
        protocol = f", protocol={self.protocol!r}" if self.protocol != "auto" else ""
        name = type(self).__name__
        return (
            f"{name}(url={_safe_url(self.url)!r}{headers}{auth}, transport={self.transport!r}{protocol}"
            f"{_limit_repr(self.max_response_bytes)})"
        )


ServerConfig: TypeAlias = StdioConfig | HttpConfig


def _limit_repr(limit: int | None) -> str:
    return f", max_response_bytes={limit!r}" if limit != DEFAULT_MAX_RESPONSE_BYTES else ""


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
