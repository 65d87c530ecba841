"""One MCP session's data and its phase-bounded requests: timeouts, the protocol found, errors.

`Endpoint` is what the calls to one server share: the server, its timeouts, the HTTP transport and the
protocol found for it (`Protocol`: a 2026-07-28 ``server/discover`` result, or the handshake era).
`Attempt` keeps what an error report needs (phase reached, stderr tail, exit code, HTTP status); `Session`
wraps a ready SDK `ClientSession` with cubepi's phase timeouts for ``tools/list`` and ``tools/call``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import anyio.lowlevel

from ..errors import MCPError, MCPTimeoutError, UserError
from ..tools import ToolUpdate, UpdateCallback
from . import _errors
from ._http import recording_status
from ._input import missing_input_hint
from ._process import ProcessInfo
from ._redact import redact
from ._stderr import StderrCapture
from ._tasks import Tasks, legacy_task_hint, runs_only_as_task, with_legacy_task_hint

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp import types as mcp_types
    from mcp.shared.dispatcher import ProgressFnT

    from ._servers import Server
    from ._toollist import ToolListResources

__all__ = [
    "CLOSE_MARGIN",
    "DEFAULT_MAX_DURATION",
    "DEFAULT_TIMEOUT",
    "SAME_AS_TIMEOUT",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Attempt",
    "Endpoint",
    "Interrupted",
    "Phase",
    "Protocol",
    "Session",
    "Timeouts",
    "timeout_error",
]

T = TypeVar("T")
logger = logging.getLogger("cubepi.mcp")
Phase = Literal["startup", "initialize", "list", "call", "close"]

DEFAULT_TIMEOUT = 30.0
# The hard bound of one call, however much progress it reports: finite, so that no server can hold a
# caller forever; None (given explicitly) lifts it.
DEFAULT_MAX_DURATION = 600.0
UNSUPPORTED_PROTOCOL_VERSION = -32022
REQUEST_TIMEOUT = -32001
# How long a call whose limit ran out waits for its session to close before it raises all the same (the
# closing goes on in the background, owned by the list).
CLOSE_MARGIN = 0.05
# How many times a 2026-07-28 call may be sent again with the input its server asked for.
INPUT_ROUNDS = 10


@functools.cache
def _call_result() -> Any:
    """The result type of ``tools/call``: a result, or (2026-07-28) a request for input."""
    from mcp import types
    from pydantic import TypeAdapter

    return TypeAdapter(types.CallToolResult | types.InputRequiredResult)


class _SameAsTimeout:
    """The default of `startup_timeout`: the value of `timeout`."""

    def __repr__(self) -> str:
        return "SAME_AS_TIMEOUT"


SAME_AS_TIMEOUT: Any = _SameAsTimeout()


def _seconds(name: str, value: float | None) -> float | None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
    ):
        raise UserError(f"{name} must be a positive number of seconds or None, got {value!r}")
    return None if value is None else float(value)


@dataclass(frozen=True)
class Timeouts:
    """Limits, in seconds (None: no limit), of each phase of a session.

    `startup` bounds spawning / connecting plus ``initialize`` (or ``server/discover``); `list` the whole
    listing; `call` a ``tools/call`` with no progress: each progress notification the server sends pushes
    the call's deadline back by `call`, and `max_duration` (default ten minutes; None: no bound) caps the
    call however much progress arrives.
    """

    startup: float | None = DEFAULT_TIMEOUT
    list: float | None = DEFAULT_TIMEOUT
    call: float | None = DEFAULT_TIMEOUT
    max_duration: float | None = DEFAULT_MAX_DURATION
    startup_keyword: str = "timeout"  # the keyword that set `startup`, for error messages

    @classmethod
    def from_options(
        cls,
        timeout: float | None = DEFAULT_TIMEOUT,
        startup_timeout: float | None = SAME_AS_TIMEOUT,
        max_duration: float | None = DEFAULT_MAX_DURATION,
    ) -> Timeouts:
        """What the loaders' `timeout`, `startup_timeout` (default: `timeout`) and `max_duration` mean."""
        value = _seconds("timeout", timeout)
        if startup_timeout is SAME_AS_TIMEOUT:
            startup, keyword = value, "timeout"
        else:
            startup, keyword = _seconds("startup_timeout", startup_timeout), "startup_timeout"
        return cls(
            startup=startup,
            list=value,
            call=value,
            max_duration=_seconds("max_duration", max_duration),
            startup_keyword=keyword,
        )

    def of(self, phase: Phase) -> float | None:
        if phase in ("startup", "initialize"):
            return self.startup
        if phase == "list":
            return self.list
        if phase == "call":
            return self.call
        return None


@dataclass(frozen=True)
class Protocol:
    """The protocol a server speaks, found once: a 2026-07-28 discover result, or the handshake era."""

    version: str
    discover: mcp_types.DiscoverResult | None = None

    @property
    def stateless(self) -> bool:
        """True on the 2026-07-28 revision: a call is one request, with no handshake."""
        return self.discover is not None


@dataclass
class Endpoint:
    """The server behind one loaded tool list, and what its calls share (transport and protocol found)."""

    server: Server
    timeouts: Timeouts = field(default_factory=Timeouts)
    http_transport: Literal["streamable-http", "sse"] | None = None
    protocol: Protocol | None = None
    # The listed tools whose calls need their definition (`_needs_definition`): a fresh 2026-07-28 session
    # learns it from here, so that the SDK sends `Mcp-Param-*` headers; a task-only tool's error names why.
    listed: dict[str, mcp_types.Tool] = field(default_factory=dict, repr=False, compare=False)
    # Callbacks every session to this server gets (the SDK's `ClientSession` keywords).
    callbacks: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # What the calls of one loaded list share (HTTP client, spare stdio server); None: nothing shared.
    resources: ToolListResources | None = field(default=None, repr=False, compare=False)
    # The tasks extension of a list that consents to tasks (`tasks=True`); see _tasks.
    tasks: Tasks | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        transport = getattr(self.server, "transport", None)
        if transport in ("streamable-http", "sse"):
            self.http_transport = transport

    def describe(self) -> str:
        return self.server.describe()

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A pickled endpoint lands: its list's resources (made again here) get this endpoint's spares."""
        self.__dict__.update(state)
        if self.resources is not None:
            self.resources.adopt(self)


@dataclass
class Attempt:
    """Book-keeping of one session for error reports: the phase reached and the server's stderr."""

    tool_name: str | None = None
    phase: Phase = "startup"
    stderr: StderrCapture | None = None
    note: str | None = None  # context for the error message, e.g. how the Streamable HTTP attempt failed
    # The stdio server's process (its exit code for errors); what the user gave (`env` values, header values,
    # tokens: see `_redact`), kept out of every message built from what the server sent.
    process: ProcessInfo = field(default_factory=ProcessInfo)
    secrets: tuple[str, ...] = ()
    http_status: int | None = None  # the last HTTP error (or redirect) status the server answered
    http_reason: str = ""
    forced_revision: str | None = None  # the revision `protocol=` pins, for the error's hint
    # Set when the caller is cancelled while the session is still being opened (see `interrupt`).
    interrupted: bool = False
    opening: anyio.CancelScope | None = None
    # Told of a start-up timeout as soon as it happens, before the transport has closed (the closing of a
    # server that ignores its stdin takes seconds; see `_call._run_owned`).
    on_timeout: Callable[[MCPTimeoutError], None] | None = None

    async def stderr_tail(self, *, settled: bool = True) -> str | None:
        """What the server printed last; `settled`: once it is gone (waits briefly for its pipe's end),
        else what it printed so far."""
        if self.stderr is None:
            return None
        if settled:
            with anyio.CancelScope(shield=True):
                tail = await self.stderr.final_tail()
        else:
            tail = self.stderr.tail()
        return redact(tail, self.secrets) or None

    @property
    def exit_code(self) -> int | None:
        """The stdio server's exit code once it has ended (None: still running, not stdio, unknown)."""
        return self.process.returncode

    def interrupt(self) -> None:
        """The caller was cancelled: stop the start-up under way (the transport still closes unhurried)."""
        self.interrupted = True
        if self.opening is not None:
            self.opening.cancel()

    async def error(
        self, exc: BaseException, server: str, *, settled: bool = True, phase: Phase | None = None
    ) -> BaseException:
        """`exc` as the readable error to raise in its place (see `_errors.translate`); `settled`: the
        session has closed (else the stderr tail is what the server printed so far); `phase`: the phase
        `exc` happened in, when the session has moved on since."""
        return _errors.translate(
            exc,
            phase=phase or self.phase,
            server=server,
            tool_name=self.tool_name,
            stderr=await self.stderr_tail(settled=settled),
            note=self.note,
            exit_code=self.exit_code,
            http_status=(self.http_status, self.http_reason) if self.http_status else None,
            secrets=self.secrets,
            forced_revision=self.forced_revision,
        )


class Interrupted(Exception):
    """Raised out of `open_session` when `Attempt.interrupt` stopped the start-up: the caller's
    cancellation is delivered in its place once the transport has closed."""


class Session:
    """A ready MCP session with phase timeouts. Only valid inside `open_session`."""

    def __init__(self, client: ClientSession, endpoint: Endpoint, attempt: Attempt) -> None:
        self.client = client
        self.endpoint = endpoint
        self.attempt = attempt
        # Set for a new stdio process that has not answered anything yet: its start-up limit, which the
        # first request's wait includes (see `_watch_start`).
        self.starting: float | None = None
        self.start_failed: float | None = None  # the start-up limit the process ran past

    @contextlib.contextmanager
    def phase(self, phase: Phase) -> Any:
        """Bound a phase by its timeout (plus the start-up limit of a process not heard from yet); raise
        `MCPTimeoutError` naming it when exceeded."""
        self.attempt.phase = phase
        limit = self.endpoint.timeouts.of(phase)
        if limit is not None and self.starting is not None:
            limit += self.starting
        with anyio.move_on_after(math.inf if limit is None else limit) as scope:
            yield
        if scope.cancelled_caught and limit is not None:
            raise timeout_error(self.endpoint, self.attempt, phase, limit)
        self.starting = None

    async def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool the server lists, following `nextCursor` to the end (a repeated cursor is an error)."""
        from mcp import types

        tools: list[types.Tool] = []
        seen: set[str] = set()
        cursor: str | None = None
        with self.phase("list"):
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
                page = await self.client.list_tools(params=params)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    usable = _usable_tools(tools, self.endpoint.describe())
                    self.endpoint.listed = {tool.name: tool for tool in usable if _needs_definition(tool)}
                    return usable
                if cursor in seen:
                    raise MCPError(
                        f"listing the tools of {self.endpoint.describe()} failed: the server repeated the "
                        f"pagination cursor {cursor[:40]!r} after {len(tools)} tools",
                        server=self.endpoint.describe(),
                    )
                seen.add(cursor)
        raise AssertionError("unreachable")  # pragma: no cover

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None, on_update: UpdateCallback | None = None
    ) -> mcp_types.CallToolResult:
        """``tools/call``. A JSON-RPC error the server sends comes back as an `isError` result; a transport
        failure raises. The SDK's output-schema check (which would list the tools first) is not run here.

        On a 2026-07-28 server, input the server asks for mid-call (an ``InputRequiredResult``: sampling,
        elicitation, roots) goes through the session's callbacks and the call is sent again with the
        answers, as the SDK's own driver does (at most `INPUT_ROUNDS` rounds); handshake-era servers ask
        with requests of their own, which the SDK routes to the same callbacks.

        The call may go `timeouts.call` seconds without hearing from the server: every progress
        notification pushes the deadline back, up to `timeouts.max_duration` in all. When the deadline
        passes, or the caller is cancelled, the SDK tells the server (``notifications/cancelled``, or on a
        2026-07-28 HTTP call by aborting the request).
        """
        from mcp import types
        from mcp.client._input_required import run_input_required_driver
        from mcp.client.session import ClientRequestContext
        from mcp.shared.exceptions import MCPError as SdkError

        client = self.client
        self.attempt.phase = "call"
        timeouts = self.endpoint.timeouts
        idle = math.inf if timeouts.call is None else timeouts.call
        started = anyio.current_time()
        hard = math.inf if timeouts.max_duration is None else started + timeouts.max_duration
        # A new 2026-07-28 stdio process gets its start-up limit on top, until it is seen to be up.
        initial = idle + self.starting if self.starting is not None else idle
        tasks = self.endpoint.tasks

        async def send(
            responses: mcp_types.InputResponses | None, state: str | None
        ) -> mcp_types.CallToolResult | mcp_types.InputRequiredResult:
            params = types.CallToolRequestParams(
                name=name, arguments=dict(arguments or {}), input_responses=responses, request_state=state
            )
            adapter = _call_result() if tasks is None else tasks.call_result()
            return await client.send_request(
                types.CallToolRequest(params=params), adapter, progress_callback=progress
            )

        async def dispatch(key: str, request: mcp_types.InputRequest) -> Any:
            meta = request.params.meta if request.params else None
            context = ClientRequestContext(session=client, request_id=key, meta=meta)
            return await client.dispatch_input_request(context, request)

        self._learn(name)
        # Always ask for progress (a progressToken): progress is what keeps a long call alive.
        with (
            anyio.CancelScope(deadline=min(started + initial, hard)) as scope,
            recording_status(self.attempt),
        ):
            progress = _progress_relay(scope, idle, hard, on_update)
            self.attempt.http_status = None

            async def call() -> mcp_types.CallToolResult:
                if self.starting is None:
                    first = await send(None, None)
                else:
                    first = await self._watching_start(functools.partial(send, None, None), scope, idle, hard)
                if isinstance(first, types.InputRequiredResult):
                    first = await run_input_required_driver(
                        first, dispatch=dispatch, retry=send, max_rounds=INPUT_ROUNDS
                    )
                if tasks is not None and not isinstance(first, types.CallToolResult):
                    return await tasks.finish(self, first, on_update, scope, hard)
                return with_legacy_task_hint(first, self.endpoint.listed.get(name), self.endpoint.protocol)

            try:
                return await call()
            except SdkError as exc:
                if self._is_transport_failure(exc):
                    raise
                hint = missing_input_hint(exc.code, exc.error.message) or legacy_task_hint(
                    self.endpoint.listed.get(name), self.endpoint.protocol
                )
                text = exc.error.message + (f" ({hint})" if hint else "")
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=text)],
                    is_error=True,
                    _meta={"jsonrpc_error": exc.error.model_dump(mode="json", exclude_none=True)},
                )
        if self.start_failed is not None:
            raise timeout_error(self.endpoint, self.attempt, "startup", self.start_failed)
        if scope.deadline >= hard:
            assert timeouts.max_duration is not None
            raise timeout_error(
                self.endpoint, self.attempt, "call", timeouts.max_duration, what="max_duration"
            )
        assert timeouts.call is not None
        raise timeout_error(self.endpoint, self.attempt, "call", timeouts.call)

    async def _watching_start(
        self, call: Callable[[], Awaitable[T]], scope: anyio.CancelScope, idle: float, hard: float
    ) -> T:
        """`call()` (the first request to the process), with `_watch_start` beside it until it is answered:
        an answer shows the server is up as well as the probe's does, and from then on the probe's late
        answer must not move the deadline (a task's is `max_duration`; input rounds keep the first
        request's, start-up limit included). What `call` raises comes out as it is (no group)."""
        outcome: list[T] = []
        failure: list[BaseException] = []
        async with anyio.create_task_group() as watching:
            watching.start_soon(self._watch_start, scope, idle, hard)
            # Let the probe go out first: a server reading one line at a time answers it before it takes
            # the call (its send hands the line over before it suspends).
            await anyio.lowlevel.checkpoint()
            try:
                outcome.append(await call())
            except BaseException as exc:  # re-raised below, outside the task group
                failure.append(exc)
            finally:
                watching.cancel_scope.cancel()
        if failure:
            raise failure[0]
        return outcome[0]

    async def _watch_start(self, call: anyio.CancelScope, idle: float, hard: float) -> None:
        """Beside the first call to a new 2026-07-28 stdio process: ask ``server/discover`` (written just
        before the call, with no wait for its answer) to learn when the server is up. It (or the call)
        must answer within the start-up limit, or the call ends as a start-up timeout; once it has, the
        call gets its own `timeout` of silence from then on, as a call to a started server does."""
        from mcp.shared.exceptions import MCPError as SdkError

        limit, self.starting = self.starting, None
        assert limit is not None
        protocol = self.endpoint.protocol
        version = protocol.version if protocol is not None else ""
        with anyio.move_on_after(limit) as waiting:
            while True:
                try:
                    await self.client.send_discover(version)
                except SdkError as exc:
                    if exc.code == REQUEST_TIMEOUT:  # the SDK's own bound on one probe: ask again
                        continue
                    if _errors.is_connection_closed(exc):
                        return  # the process died: the call reports it
                break  # any answer, an error included, says the server is up
        if waiting.cancelled_caught:
            self.start_failed = limit
            call.cancel()
        elif not call.cancel_called:
            call.deadline = min(anyio.current_time() + idle, hard)

    def _learn(self, name: str) -> None:
        """Tell a session that never listed the tools the definition of the one it calls, so that its
        ``x-mcp-header`` parameters go out as ``Mcp-Param-*`` headers: the call stays one request, never a
        ``HEADER_MISMATCH`` followed by a listing and a retry. (The SDK has no public way to hand a session
        a tool definition; `_absorb_tool_listing` is what its own response cache uses.)"""
        from mcp import types

        listed = self.endpoint.listed
        tool = listed.get(name) if listed else None
        protocol = self.endpoint.protocol
        if tool is None or protocol is None or not protocol.stateless:
            return
        absorb = getattr(self.client, "_absorb_tool_listing", None)
        if absorb is not None:
            absorb(types.ListToolsResult(tools=[tool.model_copy()]), complete=False)

    def _is_transport_failure(self, exc: Any) -> bool:
        """Whether an SDK error on a call is the connection's failure rather than the server's answer:
        one the SDK made up, a refused protocol version, a refused authorization, or (handshake era) a
        session the server no longer knows."""
        if _errors.is_transport_mcp_error(exc) or exc.code == UNSUPPORTED_PROTOCOL_VERSION:
            return True
        status = self.attempt.http_status
        stateless = self.endpoint.protocol is not None and self.endpoint.protocol.stateless
        return status in (401, 403) or (status == 404 and not stateless)


def _needs_definition(tool: mcp_types.Tool) -> bool:
    """Whether a call of `tool` needs its definition (found once, at listing, so that a call of any other
    tool skips `Session._learn`): it names parameters to mirror into ``Mcp-Param-*`` headers, or a
    handshake-era server runs it only as a task (`legacy_task_hint`)."""
    if runs_only_as_task(tool):
        return True
    try:
        from mcp.shared.inbound import x_mcp_header_map
    except ImportError:  # pragma: no cover - another SDK layout: learn every tool, as before
        return True
    return bool(x_mcp_header_map(tool.input_schema))


def _usable_tools(tools: list[mcp_types.Tool], server: str) -> list[mcp_types.Tool]:
    """The listed tools a caller can use: one without a name is skipped, and of tools sharing a name the
    first is kept, each with a warning on the ``cubepi.mcp`` logger. Names are never rewritten."""
    usable: list[mcp_types.Tool] = []
    names: set[str] = set()
    for tool in tools:
        if not tool.name:
            logger.warning("skipping a tool without a name listed by %s", server)
        elif tool.name in names:
            logger.warning(
                "skipping a second tool named %r listed by %s (keeping the first)", tool.name, server
            )
        else:
            names.add(tool.name)
            usable.append(tool)
    return usable


def _progress_relay(
    scope: anyio.CancelScope, idle: float, hard: float, on_update: UpdateCallback | None
) -> ProgressFnT:
    """Progress notifications push `scope`'s deadline back by `idle` (never past `hard`), then reach
    `on_update`."""

    async def relay(progress: float, total: float | None, message: str | None) -> None:
        if not scope.cancel_called:
            scope.deadline = min(anyio.current_time() + idle, hard)
        if on_update is not None:
            outcome = on_update(ToolUpdate(progress=progress, total=total, message=message))
            if inspect.isawaitable(outcome):
                await outcome

    return relay


def timeout_error(
    endpoint: Endpoint, attempt: Attempt, phase: Phase, limit: float, *, what: str = "timeout"
) -> MCPTimeoutError:
    """The `MCPTimeoutError` of `phase`, naming the limit that ran out and the keyword that sets it."""
    server = endpoint.describe()
    if phase == "call" and attempt.tool_name:
        action = f"calling tool {attempt.tool_name!r} on {server}"
    else:
        verb = {"initialize": "initializing", "list": "listing the tools of", "startup": "starting"}
        action = f"{verb.get(phase, phase)} {server}"
    if what == "max_duration":
        text = (
            f"{action} ran past max_duration={limit:g} s (phase: {phase}); raise max_duration for longer "
            "calls (None: no limit)"
        )
    elif phase == "call":
        text = f"{action} timed out: no result or progress for {limit:g} s (timeout; phase: {phase})"
    elif phase in ("startup", "initialize"):
        keyword = endpoint.timeouts.startup_keyword
        if keyword == "timeout":
            advice = "timeout also bounds start-up: raise it, or give startup_timeout for start-up alone"
        else:
            advice = "raise startup_timeout for a slower start"
        text = f"{action} timed out after {limit:g} s ({keyword}; phase: {phase}); {advice}"
    else:
        text = f"{action} timed out after {limit:g} s (timeout; phase: {phase})"
    return MCPTimeoutError(text, phase=phase, limit=limit, tool_name=attempt.tool_name, server=server)
