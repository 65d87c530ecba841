"""What the layers above a transport know of it: the interfaces the transports implement.

`Transport` is a server's transport as a session's opener uses it (`stdio.StdioTransport`,
`http.HttpTransport`; `choice.transport_for` picks one), and `Opener` what the opener gives it back: the
start of an SDK session on the streams it made. Nothing here imports a transport, so the calls and the
errors can name what they use of one (a stdio server's process) without importing the transport that
makes it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, TypeVar

if TYPE_CHECKING:
    import anyio
    import httpx2

__all__ = ["Opener", "ServerProcess", "Streams", "Transport", "TransportName"]

TransportName: TypeAlias = Literal["stdio", "streamable-http", "sse"]
Streams: TypeAlias = tuple[Any, Any]  # the SDK's read and write streams of one session
S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)


class ServerProcess(Protocol):
    """A stdio server's process as a call sees it (`stdio.StdioProcess`): whether it has written to
    stdout yet (`heard`, and `on_output` told when it first does), its exit code, what it printed on
    stderr, and the kill of its process group when the loop ends."""

    heard: bool
    on_output: Callable[[], None] | None

    @property
    def returncode(self) -> int | None: ...

    async def stderr_tail(self, *, settled: bool = True) -> str: ...

    def kill_group(self) -> None: ...


class Opener(Protocol[S_co]):
    """What a transport is given to open one session (`_calls.session.Opening`): the transport an
    ``"auto"`` HTTP server was found to speak, a call context's headers and auth, the list's HTTP client
    (lent for the session's length, or one of its own made by `make`), and `start`: an SDK session on
    `streams`, started within the start-up limit (its `headers` and `auth` kept for its requests)."""

    @property
    def learned_transport(self) -> TransportName | None: ...

    @property
    def call_headers(self) -> Mapping[str, str] | None: ...

    @property
    def call_auth(self) -> Any: ...

    def http_client(
        self, make: Callable[[], httpx2.AsyncClient]
    ) -> contextlib.AbstractAsyncContextManager[httpx2.AsyncClient]: ...

    def start(
        self,
        attempt: Any,
        streams: contextlib.AbstractAsyncContextManager[Streams],
        kind: TransportName,
        opening: anyio.CancelScope | None,
        *,
        headers: dict[str, str] | None = None,
        auth: Any = None,
    ) -> contextlib.AbstractAsyncContextManager[S_co]: ...


class Transport(Protocol):
    """A server's transport as the calls use it, so that no caller asks which one it is.

    `detachable`: a session's close may go on once its answer is in (a stdio server's exit);
    `close_grace`: how long an interrupted session's teardown may take (None: as long as it takes);
    `takes_call_context`: a call context's headers and auth reach it (`_context`); `polls_apart`: a
    task's polls go out on sessions of their own, not on the call's (`_calls.tasks`). `session` opens
    one (`attempt`: the `_errors.Attempt` it reports to; cancelling `opening` stops its start-up).
    """

    @property
    def detachable(self) -> bool: ...

    @property
    def close_grace(self) -> float | None: ...

    @property
    def takes_call_context(self) -> bool: ...

    @property
    def polls_apart(self) -> bool: ...

    def session(
        self, opener: Opener[S], attempt: Any, opening: anyio.CancelScope | None
    ) -> contextlib.AbstractAsyncContextManager[S]: ...
