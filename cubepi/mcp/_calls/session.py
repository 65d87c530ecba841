"""One timed session: opened ready in either era over any transport, and its requests, bounded by phase.

`Opening` holds what opening a session takes; its `session` has the server's transport
(`_transports.base.Transport`: `_transports.stdio` or `_transports.http`) open its streams and hand them
to `start`, which enters the SDK's `ClientSession` and starts the protocol (`_calls.protocol.start`: adopt
a discover result, ``initialize``, or negotiate), all within the start-up limit, and yields a `Session`.
`call_tool` is its call, bounded by the call's limits (`_calls.limits.Deadline`); its listings are in
`_calls.listings`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from ...tools import UpdateCallback
from .._errors import UNSUPPORTED_PROTOCOL_VERSION, Attempt, error_result, is_transport_error
from .._sdk import absorb_tool_listing, run_input_required_driver
from .._transports.http import HttpTransport, recording
from .core_tasks import runs_as_core_task, task_hint, with_task_hint
from .elicitation import missing_input_hint
from .limits import Deadline, Timeouts, progress_relay, timeout_error
from .ownership import Lease
from .protocol import Learned, Protocol
from .protocol import start as start_protocol

if TYPE_CHECKING:
    import httpx2
    from mcp import ClientSession
    from mcp import types as mcp_types

    from .._configs import ServerConfig
    from .._context import CallContext
    from .._transports.base import Streams, Transport, TransportName
    from .ownership import Keeper
    from .tasks import TaskWatch

__all__ = ["INPUT_ROUNDS", "Interrupted", "Opening", "Session", "call_tool", "timed_out"]

# How many times a 2026-07-28 call may be sent again with the input its server asked for.
INPUT_ROUNDS = 10


class Interrupted(Exception):
    """Raised out of `Opening.session` when its `opening` scope was cancelled (the caller left while the
    session started); the caller's cancellation is delivered in its place."""


@dataclass
class Session:
    """A ready SDK session, what it speaks, and what its requests need.

    `starting` is the start-up limit of a new 2026-07-28 stdio process not heard from yet: its first
    request's deadline includes it (`_calls.limits.Deadline`). `definitions` are the listed tools whose calls
    need their definition; `tasks` the list's `TaskWatch` (when it consents to tasks); `sibling` opens
    another fresh session to the same server (HTTP), for a task's polls; `headers` those a callable gave
    (and a call context's), `auth` a call context's.
    """

    client: ClientSession
    protocol: Protocol
    transport: TransportName
    attempt: Attempt
    timeouts: Timeouts
    server: str
    definitions: Mapping[str, mcp_types.Tool] = field(default_factory=dict)
    tasks: TaskWatch | None = None
    sibling: Callable[[], contextlib.AbstractAsyncContextManager[ClientSession]] | None = None
    starting: float | None = None
    headers: dict[str, str] | None = field(default=None, repr=False)
    auth: Any = field(default=None, repr=False)

    def call_deadline(self) -> Deadline:
        """The limit of a call or a read: `timeouts.call` of silence, `timeouts.max_duration` in all."""
        timeouts = self.timeouts
        idle = math.inf if timeouts.call is None else timeouts.call
        hard = math.inf if timeouts.max_duration is None else anyio.current_time() + timeouts.max_duration
        return self.deadline(idle, hard)

    def deadline(self, idle: float, hard: float) -> Deadline:
        """The limit of this session's next request; the first on a new stdio process watches its start-up."""
        starting, self.starting = self.starting, None
        client, version = self.client, self.protocol.version
        return Deadline(
            idle,
            hard,
            starting=starting,
            process=self.attempt.process,
            probe=lambda: client.send_discover(version),
        )


@dataclass
class Opening:
    """What opening a session to a server takes, as of one request: the `base.Opener` its `transport`
    opens a session with.

    `transport` is the server's (`_transports.choice.transport_for`, made once per list); `keeper` lends
    the list's HTTP client (else a client is made for the session); `kwargs` go to the SDK's
    `ClientSession`; `learn` is told what a session found (the runner that owns `learned`). It refers to
    nothing that owns a list, so that a spare session it opens does not keep the list alive. `call` is
    the call context of the one call it opens for (its headers and auth; `_context`): such an opening is
    never reused.
    """

    server: ServerConfig
    timeouts: Timeouts
    learned: Learned
    kwargs: Mapping[str, Any]
    transport: Transport
    keeper: Keeper | None = None
    tasks: TaskWatch | None = None
    learn: Callable[[Session], None] | None = None
    call: CallContext | None = field(default=None, repr=False)

    @property
    def learned_transport(self) -> TransportName | None:
        return self.learned.transport

    @property
    def call_headers(self) -> Mapping[str, str] | None:
        return None if self.call is None else self.call.headers

    @property
    def call_auth(self) -> Any:
        return None if self.call is None else self.call.auth

    @contextlib.asynccontextmanager
    async def http_client(self, make: Callable[[], httpx2.AsyncClient]) -> AsyncIterator[httpx2.AsyncClient]:
        """The list's shared client for the block (given back at its end), or a fresh one it closes."""
        keeper = self.keeper
        lent = await keeper.lend_client(make) if keeper is not None else None
        try:
            async with contextlib.nullcontext(lent) if lent is not None else make() as client:
                yield client
        finally:
            if keeper is not None:
                keeper.give_back()

    def leased(self, tool_name: str | None = None) -> Lease[Session]:
        """A lease (`_calls.ownership`) whose owner opens a session this way."""
        transport = self.transport
        return Lease(
            self.leasing, tool_name=tool_name, grace=transport.close_grace, detachable=transport.detachable
        )

    def leasing(self, lease: Lease[Session]) -> contextlib.AbstractAsyncContextManager[Session]:
        return self.session(lease.attempt, lease.opening)

    @contextlib.asynccontextmanager
    async def sibling(self) -> AsyncIterator[ClientSession]:
        """Another fresh session to the server (a task's polls go out on their own)."""
        async with dataclasses.replace(self, learn=None).session(Attempt()) as session:
            yield session.client

    @contextlib.asynccontextmanager
    async def one_request(self, attempt: Attempt) -> AsyncIterator[Session]:
        """`session` for a 2026-07-28 request over Streamable HTTP, the path of most calls, written out:
        the session adopts the discover result, sends nothing but its request and waits for nothing (no
        start-up limit); it ends without a word to the server."""
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        transport, learned = self.transport, self.learned
        assert isinstance(transport, HttpTransport) and learned.protocol is not None
        server = transport.server
        if server.protocol != "auto":
            attempt.forced_revision = server.protocol
        async with self.http_client(transport.client) as client:
            headers, auth = await transport.headers(self.call_headers), self.call_auth
            with recording(attempt, headers, auth):
                async with (
                    streamable_http_client(
                        server.url, http_client=client, max_sse_event_size=server.max_response_bytes
                    ) as (read, write),
                    ClientSession(read, write, **self.kwargs) as sdk,
                ):
                    sdk.adopt(learned.protocol.discover)  # type: ignore[arg-type]
                    session = Session(
                        sdk,
                        learned.protocol,
                        "streamable-http",
                        attempt,
                        self.timeouts,
                        server.describe(),
                        learned.definitions,
                        self.tasks,
                        self.sibling,
                        headers=headers,
                        auth=auth,
                    )
                    yield session

    def session(
        self, attempt: Attempt, opening: anyio.CancelScope | None = None
    ) -> contextlib.AbstractAsyncContextManager[Session]:
        """A fresh transport and a ready session, closed when the block ends. Cancelling `opening` stops
        the start-up (the session then closes and `Interrupted` is raised). Exceptions come out raw."""
        return self.transport.session(self, attempt, opening)

    @contextlib.asynccontextmanager
    async def start(
        self,
        attempt: Attempt,
        streams: contextlib.AbstractAsyncContextManager[Streams],
        kind: TransportName,
        opening: anyio.CancelScope | None,
        *,
        headers: dict[str, str] | None = None,
        auth: Any = None,
    ) -> AsyncIterator[Session]:
        """`base.Opener.start`: `streams` entered and its session started within the start-up limit; the
        deadline encloses the transport (so that cancel scopes nest) and is lifted once the session is
        ready."""
        from mcp import ClientSession

        server, timeouts = self.server, self.timeouts
        attempt.phase = "startup"
        limit = timeouts.startup
        opening = opening or anyio.CancelScope()
        with anyio.CancelScope(
            deadline=math.inf if limit is None else anyio.current_time() + limit
        ) as startup:
            async with streams as (read, write), ClientSession(read, write, **self.kwargs) as sdk:
                with opening:
                    attempt.phase = "initialize"
                    try:
                        protocol = await start_protocol(sdk, server.protocol, self.learned.protocol, attempt)
                    except BaseException:
                        if startup.cancel_called and limit is not None and attempt.on_timeout is not None:
                            attempt.on_timeout(
                                timeout_error(timeouts, server.describe(), "initialize", limit)
                            )
                        raise
                if opening.cancel_called:
                    raise Interrupted()
                startup.deadline = math.inf
                session = self._ready(
                    Session(
                        sdk, protocol, kind, attempt, timeouts, server.describe(), headers=headers, auth=auth
                    )
                )
                if protocol.stateless and attempt.process is not None and not attempt.process.heard:
                    session.starting = math.inf if limit is None else limit
                yield session
                attempt.phase = "close"
        if startup.cancelled_caught and limit is not None:
            raise timeout_error(timeouts, server.describe(), "initialize", limit)

    def _ready(self, session: Session) -> Session:
        session.definitions = self.learned.definitions
        session.tasks = self.tasks
        if self.transport.polls_apart:
            session.sibling = self.sibling
        if self.learn is not None:
            self.learn(session)
        return session


@functools.cache
def _call_result() -> Any:
    """The result type of ``tools/call``: a result, or (2026-07-28) a request for input."""
    from mcp import types
    from pydantic import TypeAdapter

    return TypeAdapter(types.CallToolResult | types.InputRequiredResult)


async def call_tool(
    session: Session,
    name: str,
    arguments: Mapping[str, Any],
    on_update: UpdateCallback | None,
    meta: Mapping[str, Any] | None = None,
) -> mcp_types.CallToolResult:
    """``tools/call``: the result, an ``isError`` result for a JSON-RPC error the server sent, or a raise
    for a transport failure or a limit that ran out (`MCPTimeoutError`).

    The call may go `timeouts.call` seconds without hearing from the server: every progress notification
    pushes the deadline back, up to `timeouts.max_duration` in all. A new 2026-07-28 stdio process gets its
    start-up limit on top until it writes anything (its first request is the call: no probe). Input the
    server asks for mid-call (2026-07-28 ``InputRequiredResult``) goes through the session's callbacks, as
    the SDK's own driver does; a call the server runs as a task goes to `tasks`. When the deadline passes
    or the caller is cancelled, the SDK tells the server (``notifications/cancelled``, or over 2026-07-28
    HTTP by aborting the request). `meta` (a call context's) is the request's ``_meta``.
    """
    from mcp import types
    from mcp.client.session import ClientRequestContext
    from mcp.shared.exceptions import MCPError as SdkError

    client, attempt, tasks = session.client, session.attempt, session.tasks
    definition = session.definitions.get(name)
    attempt.phase, attempt.http_status = "call", None
    deadline = session.call_deadline()
    idle, hard = deadline.idle, deadline.hard
    if definition is not None and session.protocol.stateless:
        absorb_tool_listing(client, definition)

    async def send(responses: Any, state: str | None) -> Any:
        params = types.CallToolRequestParams(
            name=name, arguments=dict(arguments), input_responses=responses, request_state=state
        )
        if meta:
            params.meta = dict(meta)  # type: ignore[assignment]
        adapter = _call_result() if tasks is None else tasks.result_type()
        return await client.send_request(
            types.CallToolRequest(params=params), adapter, progress_callback=relay
        )

    async def dispatch(key: str, request: mcp_types.InputRequest) -> Any:
        meta = request.params.meta if request.params else None
        return await client.dispatch_input_request(
            ClientRequestContext(session=client, request_id=key, meta=meta), request
        )

    with deadline.scope as scope, recording(attempt, session.headers, session.auth):
        relay = progress_relay(scope, idle, hard, on_update)
        core = tasks is not None and runs_as_core_task(definition, session.protocol)
        try:
            if core:
                return await _core_task(session, name, arguments, meta, deadline, relay, on_update, hard)
            if deadline.watching:
                first = await deadline.run(functools.partial(send, None, None))
            else:
                first = await send(None, None)
            if isinstance(first, types.InputRequiredResult):
                first = await run_input_required_driver(
                    first, dispatch=dispatch, retry=send, max_rounds=INPUT_ROUNDS
                )
            if tasks is not None and not isinstance(first, types.CallToolResult):
                return await tasks.finish(session, first, on_update, scope, hard)
            return with_task_hint(first, definition, session.protocol)
        except SdkError as exc:
            if is_transport_failure(exc, session):
                raise
            hint = missing_input_hint(exc.code, exc.error.message)
            hint = hint or (None if core else task_hint(definition, session.protocol))  # driven: no advice
            return error_result(
                exc.error.message + (f" ({hint})" if hint else ""),
                _meta={"jsonrpc_error": exc.error.model_dump(mode="json", exclude_none=True)},
            )
    raise timed_out(session, deadline, hard, name)


def timed_out(session: Session, deadline: Deadline, hard: float, name: str) -> Exception:
    """The error of a call-like request (`name`: the tool, URI or prompt) whose `deadline` ran out:
    `max_duration` (`hard`) passed, the server never started, or `timeout` of silence."""
    timeouts = session.timeouts
    missed = deadline.missed_start()
    if deadline.scope.deadline >= hard and not deadline.start_failed:
        assert timeouts.max_duration is not None
        return timeout_error(
            timeouts, session.server, "call", timeouts.max_duration, tool_name=name, what="max_duration"
        )
    if missed is not None:
        return timeout_error(timeouts, session.server, "startup", missed, tool_name=name)
    assert timeouts.call is not None
    return timeout_error(timeouts, session.server, "call", timeouts.call, tool_name=name)


async def _core_task(
    session: Session,
    name: str,
    arguments: Mapping[str, Any],
    meta: Mapping[str, Any] | None,
    deadline: Deadline,
    relay: Any,
    on_update: UpdateCallback | None,
    hard: float,
) -> mcp_types.CallToolResult:
    """A tool a handshake-era server runs only as a task (`_calls.core_tasks`): the task's result."""
    from .core_tasks import CoreDriver, call_as_task

    assert session.tasks is not None
    send = functools.partial(call_as_task, session.client, name, arguments, relay, meta)
    created = await (deadline.run(send) if deadline.watching else send())
    if not hasattr(created, "task"):
        return created
    return await session.tasks.finish(session, created, on_update, deadline.scope, hard, CoreDriver)


def is_transport_failure(exc: Any, session: Session) -> bool:
    """Whether an SDK error on a call is the connection's failure rather than the server's answer: one the
    SDK made up, a refused protocol version, a refused authorization, or (handshake era) a session the
    server no longer knows."""
    if is_transport_error(exc) or exc.code == UNSUPPORTED_PROTOCOL_VERSION:
        return True
    status = session.attempt.http_status
    return status in (401, 403) or (status == 404 and not session.protocol.stateless)
