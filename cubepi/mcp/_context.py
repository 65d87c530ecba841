"""Who a call is for: the call context, a `contextvars` scope the application opens around its calls.

``with call_context(headers=..., meta=..., auth=..., values=...):`` makes a `CallContext` current for the
calls made within it (and the tasks they start): its `headers` go on the HTTP requests of each call, on
top of the server's own; its `auth` replaces the server's; its `meta` is the ``_meta`` of each
``tools/call``; its `values` feed the list's `hidden_arguments`. Scopes nest: an inner one adds to (and
overrides, key by key) the outer one.

A context is read where a call starts, in the caller's task: the per-call headers and auth are handed to
that call's own session (`_session.Opening.call`), never to anything a list caches or shares, so a call
made for one user never carries another's credentials. A context does not travel with a tool; to run a
call in another process, capture it explicitly at submit time (`CallContext.bind`, `current_call_context`).
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import UserError

__all__ = ["CallContext", "call_context", "current_call_context"]

T = TypeVar("T")


def _names(mapping: Mapping[str, Any]) -> str:
    return "<" + ", ".join(sorted(map(str, mapping))) + ">"


@dataclass(frozen=True, repr=False)
class CallContext:
    """Who the calls of a scope are for. Its repr shows names only: no header value, no auth, no value.

    It pickles (when its `auth` does), so that it can travel with a call to another process
    (`bind`); the tools never carry one.
    """

    headers: Mapping[str, str] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)
    auth: Any = None
    values: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for option in ("headers", "meta", "values"):
            given = getattr(self, option)
            if not isinstance(given, Mapping):
                raise UserError(f"call_context({option}=...) takes a dict, got {type(given).__name__}")
            if not all(isinstance(key, str) for key in given):
                raise UserError(f"call_context({option}=...) takes a dict with string keys")
        if not all(isinstance(value, str) for value in self.headers.values()):
            raise UserError("call_context(headers=...) takes a dict of strings")
        if self.auth is not None and not callable(getattr(self.auth, "auth_flow", None)):
            raise UserError(
                f"call_context(auth=...) takes an httpx2.Auth (e.g. the SDK's OAuth provider), "
                f"got {type(self.auth).__name__}"
            )
        for option in ("headers", "meta", "values"):
            object.__setattr__(self, option, dict(getattr(self, option)))

    def __repr__(self) -> str:
        parts = [
            f"{option}={_names(getattr(self, option))}"
            for option in ("headers", "meta", "values")
            if getattr(self, option)
        ]
        if self.auth is not None:
            parts.append(f"auth=<{type(self.auth).__name__}>")
        return f"CallContext({', '.join(parts)})"

    @property
    def reaches_transport(self) -> bool:
        """Whether the calls need a session of their own (per-call headers or auth)."""
        return bool(self.headers) or self.auth is not None

    def over(self, outer: CallContext) -> CallContext:
        """This context nested in `outer`: each mapping adds to the outer one, key by key; an auth wins."""
        return CallContext(
            headers={**outer.headers, **self.headers},
            meta={**outer.meta, **self.meta},
            auth=self.auth if self.auth is not None else outer.auth,
            values={**outer.values, **self.values},
        )

    def run(self, function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)`` with this context current (replacing the current one), in a copy
        of the current `contextvars` context. What a worker runs for a call submitted with `bind`."""
        context = contextvars.copy_context()
        return context.run(_run_within, self, function, args, kwargs)

    def bind(self, function: Callable[..., T]) -> Callable[..., T]:
        """`function` bound to run with this context current, wherever it is called: the explicit way to
        send a call to another process (``client.submit(current_call_context().bind(tool.execute_sync),
        arguments)``). It pickles when `function` and this context do."""
        return functools.partial(self.run, function)


_EMPTY = CallContext()
_CURRENT: contextvars.ContextVar[CallContext] = contextvars.ContextVar("cubepi_call_context", default=_EMPTY)


def _run_within(context: CallContext, function: Callable[..., T], args: Any, kwargs: Any) -> T:
    _CURRENT.set(context)
    return function(*args, **kwargs)


def current_call_context() -> CallContext:
    """The call context of the current scope (an empty one outside any)."""
    return _CURRENT.get()


class call_context:
    """A scope in which calls are made for someone: ``with call_context(headers=..., meta=..., auth=...,
    values=...):`` or ``async with``.

    `headers` go on the HTTP requests of each call made within (over the server's own); `auth` (an
    ``httpx2.Auth``) replaces the server's auth for them; `meta` is sent as each ``tools/call``'s
    ``_meta``; `values` feed `hidden_arguments` (``lambda ctx: ctx.values["user_id"]``). Nested scopes add
    to the outer one. Entering yields the `CallContext` now current.
    """

    __slots__ = ("_token", "context")

    def __init__(
        self,
        *,
        headers: Mapping[str, str] | None = None,
        meta: Mapping[str, Any] | None = None,
        auth: Any = None,
        values: Mapping[str, Any] | None = None,
    ) -> None:
        self.context = CallContext(
            headers=headers if headers is not None else {},
            meta=meta if meta is not None else {},
            auth=auth,
            values=values if values is not None else {},
        )
        self._token: contextvars.Token[CallContext] | None = None

    def __repr__(self) -> str:
        return f"call_context({self.context!r})"

    def __enter__(self) -> CallContext:
        if self._token is not None:
            raise UserError("a call_context scope is entered once; make a new one for each block")
        merged = self.context.over(_CURRENT.get())
        self._token = _CURRENT.set(merged)
        return merged

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)

    async def __aenter__(self) -> CallContext:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__()
