"""Long-running calls as tasks: the ``io.modelcontextprotocol/tasks`` extension (SEP-2663, 2026-07-28).

A server that advertises the extension in ``server/discover`` may answer a consenting ``tools/call`` with a
task (``resultType: "task"``: a task id, a status, ``pollIntervalMs``, ``ttlMs``) instead of the result.
`TaskWatch` is what a list keeps for it: the result type that admits a task (cubepi sends ``tools/call``
itself, so the SDK's `ResultClaim`, which only its `Client.call_tool` resolves, is not on its path), the
calls waiting on tasks (so that closing the list stops them), and `finish`, which `_calls.session.call_tool`
hands a task to. It polls ``tasks/get`` (over HTTP each poll on a fresh session, and one that fails in
transport is sent again, so a call survives a dropped connection while the server keeps the task),
reports ``statusMessage`` changes as updates, answers ``inputRequests`` through the session's callbacks
with ``tasks/update``, and sends ``tasks/cancel`` when the call is cancelled, runs out of time or its list
closes. The task id is the only state. The consent itself is the SDK's own ``ClientSession(extensions=
...)``, stamped on every 2026-07-28 request of a list that consents (``tasks=True``, the default).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeVar

import anyio
from pydantic import BaseModel

from ..._calling import lent_elicitation
from ...errors import MCPError
from ...tools import ToolUpdate, UpdateCallback
from .._errors import error_result, is_transport_error, reraise, root_cause, said
from .elicitation import missing_input_hint
from .limits import Timeouts

if TYPE_CHECKING:
    import contextlib

    from mcp import ClientSession
    from mcp import types as mcp_types

    from .._errors import Attempt

__all__ = [
    "CANCEL_LIMIT",
    "POLL_CAP",
    "POLL_DEFAULT",
    "POLL_FLOOR",
    "Driver",
    "TaskSession",
    "TaskWatch",
    "poll_delay",
]


class TaskSession(Protocol):
    """What a task's driver uses of the session its task was created on (`session.Session`)."""

    @property
    def client(self) -> ClientSession: ...

    @property
    def attempt(self) -> Attempt: ...

    @property
    def sibling(self) -> Callable[[], contextlib.AbstractAsyncContextManager[ClientSession]] | None: ...


# Polling honours the server's pollIntervalMs within these bounds (seconds); POLL_DEFAULT when it sends none.
POLL_FLOOR = 0.05
POLL_CAP = 5.0
POLL_DEFAULT = 1.0
# How long cubepi waits for the server to take a tasks/cancel (best effort).
CANCEL_LIMIT = 5.0
# Pause before sending a failed poll again (doubling up to the poll cap).
RETRY_PAUSE = 0.1
TERMINAL = frozenset({"completed", "failed", "cancelled"})
_MISSING_CAPABILITY = -32021

R = TypeVar("R", bound=BaseModel)


@functools.cache
def _models() -> Any:
    """The wire shapes of the extension (built on first use: the SDK is imported only when needed)."""
    from mcp import types
    from mcp_types import RequestParams, Result
    from pydantic import Discriminator, Tag, TypeAdapter

    Status = Literal["working", "input_required", "completed", "failed", "cancelled"]

    class TaskCreated(Result):
        """A ``tools/call`` the server runs as a task."""

        result_type: Literal["task"]
        task_id: str
        status: Status = "working"
        status_message: str | None = None
        poll_interval_ms: int | None = None
        ttl_ms: int | None = None

    class TaskState(Result):
        """A ``tasks/get`` answer: the task, with its result, error or input requests inlined."""

        task_id: str
        status: Status
        status_message: str | None = None
        poll_interval_ms: int | None = None
        result: dict[str, Any] | None = None
        error: dict[str, Any] | None = None
        input_requests: dict[str, Any] | None = None

    class TaskParams(RequestParams):
        task_id: str

    class UpdateParams(TaskParams):
        input_responses: dict[str, Any]

    class GetTask(types.Request[TaskParams, Literal["tasks/get"]]):
        method: Literal["tasks/get"] = "tasks/get"
        name_param = "taskId"

    class UpdateTask(types.Request[UpdateParams, Literal["tasks/update"]]):
        method: Literal["tasks/update"] = "tasks/update"
        name_param = "taskId"

    class CancelTask(types.Request[TaskParams, Literal["tasks/cancel"]]):
        method: Literal["tasks/cancel"] = "tasks/cancel"
        name_param = "taskId"

    def route(value: Any) -> str:
        tag = value.get("resultType") if isinstance(value, dict) else getattr(value, "result_type", None)
        return "task" if tag == "task" else "core"

    call_result = TypeAdapter(
        Annotated[
            Annotated[types.CallToolResult | types.InputRequiredResult, Tag("core")]
            | Annotated[TaskCreated, Tag("task")],
            Discriminator(route),
        ]
    )

    class Models:
        created = TaskCreated
        state = TaskState
        params = TaskParams
        update_params = UpdateParams
        get = GetTask
        update = UpdateTask
        cancel = CancelTask
        result = call_result
        input_request = TypeAdapter(types.InputRequest)

    return Models


class TaskWatch:
    """The tasks extension for the calls of one list in one process: the calls waiting on tasks.

    A task's requests go out on the call's own session over stdio (the task lives in that process), and
    over HTTP each on a fresh session (`Session.sibling`). `elicits`: the list has an elicitation callback.
    """

    def __init__(self, timeouts: Timeouts, elicits: bool, server: str) -> None:
        self.timeouts = timeouts
        self.elicits = elicits
        self.server = server
        self._waiting: set[anyio.CancelScope] = set()
        self._idle: anyio.Event | None = None

    @staticmethod
    def result_type() -> Any:
        """The type adapter of a consenting ``tools/call``: a result, a request for input, or a task."""
        return _models().result

    async def finish(
        self,
        session: TaskSession,
        created: Any,
        on_update: UpdateCallback | None,
        call: anyio.CancelScope,
        hard: float,
        driver_type: type[Driver] | None = None,
    ) -> mcp_types.CallToolResult:
        """The final result of the task `created` (the answer to the call `session` just sent), driven by
        `driver_type` (the extension's `Driver` unless told: `_calls.core_tasks` gives the 2025-11-25 one).

        `call` is the call's cancel scope: from here the whole task is bounded by `hard` (`max_duration`),
        each request by the call `timeout`. When the call ends before the task does (the caller cancels,
        time runs out, a poll fails for good, the list closes) the task is cancelled on the server.
        """
        if not call.cancel_called:
            call.deadline = hard
        driver = (driver_type or Driver)(self, session, created, on_update)
        scope = anyio.CancelScope()
        self._waiting.add(scope)
        try:
            with scope:
                return await driver.run(created)
            tool = session.attempt.tool_name
            raise MCPError(
                f"calling tool {tool!r} on {self.server} stopped: the tool list was closed while the call "
                f"waited on task {driver.task_id!r} (cancelled on the server)",
                tool_name=tool,
                server=self.server,
            )
        finally:
            try:
                if not driver.ended:
                    await driver.cancel()
            finally:
                self._waiting.discard(scope)
                if not self._waiting and self._idle is not None:
                    self._idle.set()

    async def cancel_all(self) -> None:
        """Stop the calls waiting on tasks (each cancels its task on the server) and wait for them."""
        if not self._waiting:
            return
        self._idle = anyio.Event()
        for scope in list(self._waiting):
            scope.cancel()
        with anyio.move_on_after(CANCEL_LIMIT + 1):
            await self._idle.wait()


def poll_delay(poll_interval_ms: int | None) -> float:
    """Seconds to the next ``tasks/get``: the server's ``pollIntervalMs``, within `POLL_FLOOR`..`POLL_CAP`."""
    if poll_interval_ms is None or isinstance(poll_interval_ms, bool):
        return POLL_DEFAULT
    return min(max(poll_interval_ms / 1000, POLL_FLOOR), POLL_CAP)


class Driver:
    """Drives one task to its end: its requests go out on the call's session (stdio) or fresh ones (HTTP)."""

    def __init__(
        self, watch: TaskWatch, session: TaskSession, created: Any, on_update: UpdateCallback | None
    ) -> None:
        self.watch = watch
        self.session = session
        self.task_id: str = self.created_id(created)
        self.on_update = on_update
        self.ended = False
        self._status: tuple[str, str | None] | None = None

    @staticmethod
    def created_id(created: Any) -> str:
        """The id of the task the call's answer `created` names."""
        return created.task_id  # type: ignore[no-any-return]

    async def run(self, created: Any) -> mcp_types.CallToolResult:
        from mcp import types

        models = _models()
        state: Any = created
        while True:
            await self._report(state.status, state.status_message)
            if state.status in TERMINAL:
                self.ended = True
                return _final(state)
            if state.status == "input_required" and getattr(state, "input_requests", None):
                answered = await self._answer(state.input_requests)
                if isinstance(answered, types.CallToolResult):
                    return answered
            else:
                await anyio.sleep(poll_delay(state.poll_interval_ms))
            state = await self._send(models.get(params=models.params(task_id=self.task_id)), models.state)

    async def _report(self, status: str, message: str | None) -> None:
        if self.on_update is None or (status, message) == self._status:
            return
        self._status = (status, message)
        outcome = self.on_update(ToolUpdate(message=message or f"task {status}"))
        if inspect.isawaitable(outcome):
            await outcome

    async def _answer(self, requests: Mapping[str, Any]) -> mcp_types.CallToolResult | None:
        """Answer the task's input requests through the session's callbacks and send them with
        ``tasks/update``; an unanswerable request ends the call (as input-required calls do)."""
        from mcp import types
        from mcp.client.session import ClientRequestContext

        models = _models()
        client = self.session.client
        responses: dict[str, Any] = {}
        for key, payload in requests.items():
            request = models.input_request.validate_python(payload, by_name=False)
            context = ClientRequestContext(session=client, request_id=f"task-{key}")
            answer = await client.dispatch_input_request(context, request)
            if isinstance(answer, types.ErrorData):
                can_elicit = self.watch.elicits or lent_elicitation() is not None
                declined = request.method == "elicitation/create" and can_elicit
                hint = None if declined else missing_input_hint(_MISSING_CAPABILITY, request.method)
                text = f"the task asked for input the client did not give: {answer.message}"
                return error_result(text + (f" ({hint})" if hint else ""))
            responses[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        update = models.update(params=models.update_params(task_id=self.task_id, input_responses=responses))
        await self._send(update, types.Result)
        return None

    async def _send(self, request: Any, result_type: type[R]) -> R:
        """One request about the task, bounded by the call `timeout`. Over HTTP it goes out on a session of
        its own, and one that fails in transport (or hears nothing for that long) goes out again, until
        the server has been silent for `timeout` seconds."""
        limit = self.watch.timeouts.call
        idle = math.inf if limit is None else limit
        give_up = anyio.current_time() + idle
        pause = RETRY_PAUSE
        while True:
            try:
                with anyio.fail_after(idle):
                    async with self._client() as client:
                        return await client.send_request(request, result_type)  # type: ignore[no-any-return]
            except Exception as exc:
                if not self._retryable(exc) or anyio.current_time() + pause >= give_up:
                    reraise(root_cause(exc))  # the server's answer, not a task group
            await anyio.sleep(pause)
            pause = min(pause * 2, POLL_CAP)

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[Any]:
        sibling = self.session.sibling
        if sibling is None:
            yield self.session.client
            return
        async with sibling() as client:
            yield client

    def _retryable(self, exc: BaseException) -> bool:
        """A failure of the transport (worth sending again over HTTP), not an answer of the server."""
        import httpx2

        if self.session.sibling is None:
            return False
        cause = root_cause(exc)
        transport = (httpx2.TransportError, OSError, TimeoutError, anyio.BrokenResourceError)
        return isinstance(cause, transport) or is_transport_error(cause)

    async def cancel(self) -> None:
        """``tasks/cancel``, bounded by `CANCEL_LIMIT`, shielded from the cancellation that caused it: on
        the call's own session, else (HTTP) on a fresh one."""
        models = _models()
        request = models.cancel(params=models.params(task_id=self.task_id))
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_LIMIT):
            try:
                await self.session.client.send_request(request, _result_type())
            except Exception:
                sibling = self.session.sibling
                if sibling is not None:
                    with contextlib.suppress(Exception):
                        async with sibling() as client:
                            await client.send_request(request, _result_type())


def _result_type() -> Any:
    from mcp import types

    return types.Result


def _final(state: Any) -> mcp_types.CallToolResult:
    """The call's result from a task's terminal state."""
    from mcp import types

    if state.status == "completed":
        return types.CallToolResult.model_validate(getattr(state, "result", None) or {}, by_name=False)
    if state.status == "failed":
        error = getattr(state, "error", None) or {}
        message = error.get("message") if isinstance(error.get("message"), str) else None
        detail = message or state.status_message or "no error given"
        result = error_result(f"task {state.task_id} failed: {detail}")
        if error:
            result.meta = {"task_error": error}
        return result
    return error_result(f"task {state.task_id} was cancelled" + said(state.status_message))
