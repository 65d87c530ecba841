"""A FastMCP server with the tasks extension (`fastmcp-tasks`, memory backend): long-running tools.

Run: ``python tasks.py`` (stdio) or ``python tasks.py http`` (Streamable HTTP on ``PORT``, at ``/mcp``).

Tools wait for events, never for a guessed time: ``GATES`` names a directory where the test creates files.

- ``double(n)`` (task only) returns ``2 * n``; ``triple(n)`` (task optional) returns ``3 * n``;
  ``plain(n)`` is never a task.
- ``explode(text)`` (task only) raises: the task ends ``failed``.
- ``steps(gate)`` (task only) reports ``step 1`` as its status, waits for ``<gate>.1``, reports ``step 2``,
  waits for ``<gate>.2``, then returns ``done``.
- ``gated(gate)`` (task only) reports ``waiting for <gate>`` as its status, waits for the file ``<gate>``,
  then returns ``opened <gate>``.

Every ``tasks/cancel`` the server gets appends the task's ``gate`` argument to the file ``CANCELLED`` (when
set), so that a test sees what the server saw.
- ``ask(question)`` (task only) asks the client for a ``name`` (elicitation, mid-task), then greets it.
"""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from fastmcp_tasks.context import get_task_scope
from fastmcp_tasks.input_store import load_task_args
from mcp import types
from mcp.shared.exceptions import MCPError as McpError

GATES = Path(os.environ.get("GATES", "."))
CANCELLED = os.environ.get("CANCELLED")
POLL = timedelta(milliseconds=int(os.environ.get("POLL_MS", "50")))
REQUIRED = TaskConfig(mode="required", poll_interval=POLL)


class RecordingTasks(TasksExtension):
    """The tasks extension, recording the ``gate`` argument of every task it gets a ``tasks/cancel`` for."""

    async def _handle_cancel(self, ctx: Any, params: Any) -> Any:
        result = await super()._handle_cancel(ctx, params)
        if CANCELLED and self.server._docket is not None:
            arguments = await load_task_args(self.server._docket, get_task_scope(), params.task_id)
            async with await anyio.open_file(CANCELLED, "a") as log:
                await log.write(f"{arguments.get('gate')}\n")
        return result


server = FastMCP("tasks")
server.add_extension(RecordingTasks(url="memory://"))


async def _wait_for(path: Path) -> None:
    """Until the test creates `path` (the test's event reaches this process as a file)."""
    while not await anyio.Path(path).exists():  # noqa: ASYNC110 (a file from another process: polled)
        await asyncio.sleep(0.02)


@server.tool(task=REQUIRED)
async def double(n: int) -> int:
    """Twice n, as a task."""
    return 2 * n


@server.tool(task=TaskConfig(mode="optional", poll_interval=POLL))
async def triple(n: int) -> int:
    """Three times n, as a task when the client consents."""
    return 3 * n


@server.tool
async def plain(n: int) -> int:
    """n, never a task."""
    return n


@server.tool(task=REQUIRED)
async def explode(text: str) -> str:
    """Fails: a protocol error ends the task `failed` (a tool error would be an is_error result)."""
    raise McpError(code=types.INTERNAL_ERROR, message=f"exploded: {text}")


@server.tool(task=REQUIRED)
async def steps(gate: str, ctx: Context) -> str:
    """Two steps, each reported as the task's status and released by a file."""
    for step in (1, 2):
        await ctx.report_progress(step, 2, f"step {step}")
        await _wait_for(GATES / f"{gate}.{step}")
    return "done"


@server.tool(task=REQUIRED)
async def gated(gate: str, ctx: Context) -> str:
    """Waits for the file `gate` (its status says so once it runs)."""
    await ctx.report_progress(0, 1, f"waiting for {gate}")
    await _wait_for(GATES / gate)
    return f"opened {gate}"


@server.tool(task=REQUIRED)
async def ask(question: str, ctx: Context) -> str | types.InputRequiredResult:
    """Asks the client for a name mid-task."""
    answer = (ctx.input_responses or {}).get("name")
    if answer is None:
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=question,
                requested_schema={"type": "object", "properties": {"name": {"type": "string"}}},
            )
        )
        return types.InputRequiredResult(input_requests={"name": request})
    content = getattr(answer, "content", None) or {}
    action = getattr(answer, "action", "?")
    return f"hello {content.get('name')} ({action})"


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), path="/mcp")
    else:
        server.run("stdio", show_banner=False)
