"""Task-only tools on handshake-era servers: the 2025-11-25 protocol's core tasks.

A tool whose definition says ``execution.taskSupport: "required"`` runs only as a task on a 2025-11-25
server. `call_as_task` sends its ``tools/call`` with ``task`` and takes the ``CreateTaskResult``; then
`CoreDriver` (driven by the list's `TaskWatch`, like the 2026-07-28 extension's tasks, so that closing the
list stops it) polls ``tasks/get`` at the server's ``pollInterval``, reports ``statusMessage`` changes as
updates, and once the task asks for input or ends, asks ``tasks/result``, which the server holds until the
task ends and on which it sends the requests for input the task has (answered by the session's callbacks,
as any request). Every request goes out on the call's own session: a handshake-era task belongs to the
session (and, over stdio, the process) that made it. A call that is cancelled, runs out of time or whose
list closes sends ``tasks/cancel``.

The SDK 2.3 has no client API for a task-augmented ``tools/call``, and its ``send_request`` checks the
answer against the 2025-11-25 ``CallToolResult``, which a ``CreateTaskResult`` is not: `_sdk.send_raw`
sends it as the SDK would and returns the raw answer (pinned by tests/mcp/test_sdk_wording.py).
``tasks/*`` are outside the SDK's checked methods: they go out through the public ``send_request``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import anyio

from .._errors import error_result, said
from .._sdk import send_raw
from .tasks import CANCEL_LIMIT, TERMINAL, Driver, poll_delay

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp import types as mcp_types
    from mcp.shared.dispatcher import ProgressFnT

    from .protocol import Protocol

__all__ = ["CoreDriver", "call_as_task", "runs_as_core_task", "task_hint", "with_task_hint"]


def runs_as_core_task(tool: mcp_types.Tool | None, protocol: Protocol) -> bool:
    """Whether a call of `tool` must be a 2025-11-25 core task: the server runs it only as one."""
    required = getattr(getattr(tool, "execution", None), "task_support", None) == "required"
    return required and not protocol.stateless


@functools.cache
def _answer() -> Any:
    """A task-augmented ``tools/call``'s answer: the task, or (a server that ran it at once) the result."""
    from typing import Annotated

    from mcp import types
    from pydantic import Discriminator, Tag, TypeAdapter

    def route(value: Any) -> str:
        return "task" if isinstance(value, Mapping) and "task" in value else "result"

    return TypeAdapter(
        Annotated[
            Annotated[types.CreateTaskResult, Tag("task")] | Annotated[types.CallToolResult, Tag("result")],
            Discriminator(route),
        ]
    )


async def call_as_task(
    client: ClientSession,
    name: str,
    arguments: Mapping[str, Any],
    progress: ProgressFnT | None,
    meta: Mapping[str, Any] | None = None,
) -> mcp_types.CreateTaskResult | mcp_types.CallToolResult:
    """``tools/call`` with ``task``: the task the server made (or the result, when it ran the call);
    `meta` (a call context's) is its ``_meta``."""
    from mcp import types

    params = types.CallToolRequestParams(name=name, arguments=dict(arguments), task=types.TaskMetadata())
    if meta:
        params.meta = dict(meta)  # type: ignore[assignment]
    raw = await send_raw(client, types.CallToolRequest(params=params), progress)
    return _answer().validate_python(raw, by_name=False)  # type: ignore[no-any-return]


class CoreDriver(Driver):
    """Drives one 2025-11-25 task to its end, on the call's own session."""

    @staticmethod
    def created_id(created: Any) -> str:
        return created.task.task_id  # type: ignore[no-any-return]

    async def run(self, created: Any) -> mcp_types.CallToolResult:

        task: Any = created.task
        while True:
            await self._report(task.status, task.status_message)
            if task.status in TERMINAL or task.status == "input_required":
                break
            await anyio.sleep(poll_delay(task.poll_interval))
            task = await self._get()
        if task.status == "cancelled":
            self.ended = True
            return error_result(f"task {self.task_id} was cancelled" + said(task.status_message))
        try:
            result = await self._result(waits=task.status not in TERMINAL)
        except Exception as exc:
            from mcp.shared.exceptions import MCPError as SdkError

            if task.status != "failed" or not isinstance(exc, SdkError):
                raise
            self.ended = True
            detail = task.status_message or exc.error.message or "no error given"
            return error_result(f"task {self.task_id} failed: {detail}")
        self.ended = True
        if task.status == "failed" and not result.is_error:
            return result.model_copy(update={"is_error": True})
        return result

    async def _get(self) -> Any:
        from mcp import types

        request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=self.task_id))
        return await self._send(request, types.GetTaskResult)

    async def _result(self, waits: bool) -> mcp_types.CallToolResult:
        """``tasks/result``. For a task still running (it asked for input) the server holds the answer
        until the task ends: the wait is bounded by the call's `max_duration` alone, and the task's status
        is watched beside it."""
        from mcp import types

        request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=self.task_id))
        if not waits:
            return await self._send(request, types.CallToolResult)
        async with anyio.create_task_group() as group:
            group.start_soon(self._watch)
            result = await self.session.client.send_request(request, types.CallToolResult)
            group.cancel_scope.cancel()
        return result

    async def _watch(self) -> None:
        """Report the status of a task whose result is awaited, until it ends (best effort)."""
        try:
            while True:
                task = await self._get()
                await self._report(task.status, task.status_message)
                if task.status in TERMINAL:
                    return
                await anyio.sleep(poll_delay(task.poll_interval))
        except Exception:
            return

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[Any]:
        yield self.session.client

    def _retryable(self, exc: BaseException) -> bool:
        return False

    async def cancel(self) -> None:
        """``tasks/cancel`` on the call's session, bounded by `CANCEL_LIMIT`, shielded from the
        cancellation that caused it (best effort)."""
        from mcp import types

        request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=self.task_id))
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_LIMIT):
            try:
                await self.session.client.send_request(request, types.Result)
            except Exception:
                return


def task_hint(tool: mcp_types.Tool | None, protocol: Protocol) -> str | None:
    """The sentence added to the error of a tool a handshake-era server runs only as a task."""
    required = getattr(getattr(tool, "execution", None), "task_support", None) == "required"
    if not required or protocol.stateless:
        return None
    return (
        "the server runs this tool only as a task (the 2025-11-25 protocol's core tasks); cubepi drives "
        "tasks for the tools of a list loaded with tasks=True (the default), not with tasks=False, from a "
        "connection or made with make_mcp_agent_tool"
    )


def with_task_hint(result: Any, tool: mcp_types.Tool | None, protocol: Protocol) -> mcp_types.CallToolResult:
    """`result`, with `task_hint` added to an error's content."""
    hint = task_hint(tool, protocol) if result.is_error else None
    if hint is None:
        return result  # type: ignore[no-any-return]
    from mcp import types

    return result.model_copy(update={"content": [*result.content, types.TextContent(type="text", text=hint)]})  # type: ignore[no-any-return]
