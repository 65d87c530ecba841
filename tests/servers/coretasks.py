"""A handshake-era MCPServer whose tools run only as 2025-11-25 core tasks.

Run: ``python coretasks.py`` (stdio) or ``python coretasks.py http`` (Streamable HTTP on ``PORT``,
at ``/mcp``).

The SDK's server has no core tasks, so a middleware serves them: a ``tools/call`` with ``task`` starts the
tool in the background and answers a ``CreateTaskResult``; ``tasks/get``, ``tasks/result`` (held until the
task ends) and ``tasks/cancel`` answer from a dict of tasks; ``tools/list`` marks every tool
``execution.taskSupport: "required"`` (but ``plain``), and a ``tools/call`` without ``task`` is refused, as
a server that runs the tool only as a task does. Tools wait for events, never for a guessed time: ``GATES``
names a directory where the test creates files.

- ``research(topic, gate)``: status ``step 1``, waits for ``<gate>.1``; ``step 2``, waits for
  ``<gate>.2``; then returns ``report on <topic>``.
- ``broken(text)``: the task ends ``failed`` with the status message ``broke: <text>``, no result.
- ``refused(text)``: the task ends ``failed`` with an ``isError`` result ``refused <text>``.
- ``stopped(text)``: the server cancels its own task, status message ``stopped: <text>``.
- ``spoiled(text)``: the task ends ``failed`` with a result not marked ``isError``: ``half <text>``.
- ``held(gate)``: status ``input_required`` (``waiting for input``) until ``<gate>.1``, then ``working``
  (``after input``) until ``<gate>.2``; then returns ``held <gate>``.
- ``lost(text)``: the task ends ``completed``, but ``tasks/result`` answers an error: it has no result.
- ``quick(text)``: task-only, but the server answers the call at once with its result ``quick <text>``,
  after a progress notification ``quick start`` (`` for <user>`` added when the call's ``_meta`` has a
  ``user``).
- ``plain(text)``: not a task tool: answers ``plain <text>``; a ``tools/call`` with ``task`` is refused.

Every ``tasks/cancel`` appends the task's ``gate`` argument to the file ``CANCELLED`` (when set), every
``tasks/get`` to the file ``GETS`` (when set).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import types
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

GATES = Path(os.environ.get("GATES", "."))
CANCELLED = os.environ.get("CANCELLED")
GETS = os.environ.get("GETS")
POLL_MS = int(os.environ.get("POLL_MS", "50"))
NOW = "2026-01-01T00:00:00Z"


@dataclass
class Task:
    id: str
    arguments: dict[str, Any]
    status: str = "working"
    message: str | None = None
    result: dict[str, Any] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    runner: asyncio.Task[None] | None = None

    def wire(self) -> dict[str, Any]:
        state = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": NOW,
            "lastUpdatedAt": NOW,
            "ttl": 60000,
            "pollInterval": POLL_MS,
        }
        return state | ({"statusMessage": self.message} if self.message is not None else {})

    def end(self, status: str, message: str | None = None, result: dict[str, Any] | None = None) -> None:
        if self.status in ("completed", "failed", "cancelled"):
            return
        self.status, self.message, self.result = status, message, result
        self.done.set()


TASKS: dict[str, Task] = {}
IDS = itertools.count(1)


async def _wait_for(path: Path) -> None:
    while not path.exists():  # noqa: ASYNC110, ASYNC240 (a file from another process: polled)
        await asyncio.sleep(0.02)


def _text(text: str, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


async def research(task: Task, topic: str, gate: str) -> None:
    for step in (1, 2):
        task.message = f"step {step}"
        await _wait_for(GATES / f"{gate}.{step}")
    task.end("completed", "done", _text(f"report on {topic}"))


async def broken(task: Task, text: str) -> None:
    task.end("failed", f"broke: {text}")


async def refused(task: Task, text: str) -> None:
    task.end("failed", None, _text(f"refused {text}", error=True))


async def stopped(task: Task, text: str) -> None:
    task.end("cancelled", f"stopped: {text}")


async def held(task: Task, gate: str) -> None:
    task.status, task.message = "input_required", "waiting for input"
    await _wait_for(GATES / f"{gate}.1")
    task.status, task.message = "working", "after input"
    await _wait_for(GATES / f"{gate}.2")
    task.end("completed", "done", _text(f"held {gate}"))


async def lost(task: Task, text: str) -> None:
    task.end("completed", f"lost {text}")


async def spoiled(task: Task, text: str) -> None:
    task.end("failed", None, _text(f"half {text}"))


RUNS: dict[str, Callable[..., Awaitable[None]]] = {
    "research": research,
    "broken": broken,
    "refused": refused,
    "stopped": stopped,
    "spoiled": spoiled,
    "lost": lost,
    "held": held,
}


def _listed() -> list[dict[str, Any]]:
    descriptions = {
        "research": ("Researches a topic in two steps, as a task.", {"topic": "string", "gate": "string"}),
        "broken": ("Fails, as a task.", {"text": "string"}),
        "refused": ("Answers an error result, as a task.", {"text": "string"}),
        "stopped": ("Cancelled by the server, as a task.", {"text": "string"}),
        "spoiled": ("Fails with a result not marked as an error, as a task.", {"text": "string"}),
        "lost": ("Completes without a result, as a task.", {"text": "string"}),
        "held": ("Asks for input, then works, as a task.", {"gate": "string"}),
        "quick": ("Task-only, answered at once.", {"text": "string"}),
        "plain": ("Not a task tool.", {"text": "string"}),
    }
    return [
        {
            "name": name,
            "description": description,
            "inputSchema": {
                "type": "object",
                "properties": {key: {"type": kind} for key, kind in fields.items()},
                "required": list(fields),
            },
        }
        | ({} if name == "plain" else {"execution": {"taskSupport": "required"}})
        for name, (description, fields) in descriptions.items()
    ]


async def _cancel(task: Task) -> None:
    if CANCELLED:
        with open(CANCELLED, "a") as log:  # noqa: ASYNC230 (one short line)
            log.write(f"{task.arguments.get('gate', task.arguments.get('text'))}\n")
    if task.runner is not None:
        task.runner.cancel()
    task.end("cancelled", "cancelled by the client")


async def core_tasks(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
    """Serves the 2025-11-25 core tasks the SDK's server does not."""
    params = dict(ctx.params or {})
    if ctx.method == "tools/list":
        listed = await call_next(ctx)
        return {**listed, "tools": _listed()}
    if ctx.method == "tools/call" and params.get("name") == "plain":
        if "task" in params:
            raise MCPError(code=types.METHOD_NOT_FOUND, message="plain does not run as a task")
        return _text(f"plain {(params.get('arguments') or {}).get('text')}")
    if ctx.method == "tools/call" and params.get("name") == "quick" and "task" in params:
        token = (params.get("_meta") or {}).get("progressToken")
        if token is not None:
            await ctx.session.send_progress_notification(
                token, 1, 2, "quick start", related_request_id=ctx.request_id
            )
        user = (params.get("_meta") or {}).get("user")
        text = f"quick {(params.get('arguments') or {}).get('text')}"
        return _text(text + (f" for {user}" if user else ""))
    if ctx.method == "tools/call":
        if "task" not in params:
            raise MCPError(code=types.INVALID_PARAMS, message=f"{params.get('name')} runs only as a task")
        run = RUNS.get(params.get("name", ""))
        if run is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool {params.get('name')}")
        task = Task(str(next(IDS)), dict(params.get("arguments") or {}))
        TASKS[task.id] = task
        task.runner = asyncio.create_task(run(task, **task.arguments))
        return {"task": task.wire()}
    if ctx.method in ("tasks/get", "tasks/result", "tasks/cancel"):
        task = TASKS.get(params.get("taskId", ""))
        if task is None:
            raise MCPError(code=types.INVALID_PARAMS, message="no such task")
        if ctx.method == "tasks/get":
            if GETS:
                with open(GETS, "a") as log:  # noqa: ASYNC230 (one short line)
                    log.write(f"{task.arguments.get('gate', task.arguments.get('text'))}\n")
            return task.wire()
        if ctx.method == "tasks/cancel":
            await _cancel(task)
            return task.wire()
        await task.done.wait()
        if task.result is None:
            raise MCPError(code=types.INTERNAL_ERROR, message=f"task {task.id} has no result ({task.status})")
        return task.result
    return await call_next(ctx)


server = MCPServer("coretasks", middleware=[core_tasks])


@server.tool(name="research")
def listed(topic: str, gate: str) -> str:  # listed for the tools capability; the middleware runs tasks
    """Researches a topic in two steps, as a task."""
    raise NotImplementedError


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        server.settings.log_level = "WARNING"
        server.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]))  # type: ignore[call-overload]
    else:
        server.run("stdio")
