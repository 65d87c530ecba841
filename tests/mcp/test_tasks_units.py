"""Tasks (the ``io.modelcontextprotocol/tasks`` extension) seen on the wire: a recording proxy between
cubepi and the fastmcp-tasks server of tests/servers/tasks.py counts the polls, keeps what cubepi sends,
and can leave a ``tasks/cancel`` unanswered. The end-to-end behaviour is in test_tasks.py."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from conftest import PYTHON, SERVERS, RunningServer, StartServer, Updates
from mcp import types

from cubepi.errors import MCPError
from cubepi.mcp import HttpServer, load_mcp_tools
from cubepi.mcp._calls.tasks import CANCEL_LIMIT

pytest.importorskip("fastmcp_tasks")

TASKS = SERVERS / "tasks.py"
WAIT = 30.0  # the bound on waiting for an event


@pytest.fixture(scope="module")
def gates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gates")


@pytest.fixture(scope="module")
def tasks_http(http_server_factory: StartServer, gates: Path) -> RunningServer:
    return http_server_factory([PYTHON, str(TASKS), "http"], "/mcp", env={"GATES": str(gates)})


class Proxy:
    """A TCP proxy to an HTTP server: it keeps what the client sends, counts the ``tasks/get`` requests, and
    with `hold_cancels` never passes a ``tasks/cancel`` on (the server then never answers it)."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.sent = bytearray()
        self.polls = 0
        self.hold_cancels = False
        self.cancels_held = 0
        self._polled: list[tuple[int, anyio.Event]] = []

    @contextlib.asynccontextmanager
    async def serve(self) -> AsyncIterator[str]:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with listener, anyio.create_task_group() as group:
            group.start_soon(listener.serve, self._handle)
            yield f"http://127.0.0.1:{port}/mcp"
            group.cancel_scope.cancel()

    async def polled(self, count: int) -> None:
        """Until `count` polls in all have gone through."""
        if self.polls < count:
            event = anyio.Event()
            self._polled.append((count, event))
            with anyio.fail_after(WAIT):
                await event.wait()

    async def _handle(self, client: anyio.abc.SocketStream) -> None:
        upstream = await anyio.connect_tcp("127.0.0.1", self.upstream)
        async with client, upstream, anyio.create_task_group() as group:
            group.start_soon(self._forward, client, upstream, group.cancel_scope)
            await self._back(upstream, client, group.cancel_scope)

    async def _forward(
        self, source: anyio.abc.SocketStream, sink: anyio.abc.SocketStream, scope: anyio.CancelScope
    ) -> None:
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            async for chunk in source:
                lowered = chunk.lower()
                if self.hold_cancels and b"mcp-method: tasks/cancel" in lowered:
                    self.cancels_held += 1
                    await anyio.sleep_forever()  # the request is never passed on
                if b"mcp-method: tasks/get" in lowered:
                    self.polls += 1
                    for count, event in self._polled:
                        if self.polls >= count:
                            event.set()
                self.sent.extend(chunk)
                await sink.send(chunk)
        scope.cancel()

    async def _back(
        self, source: anyio.abc.SocketStream, sink: anyio.abc.SocketStream, scope: anyio.CancelScope
    ) -> None:
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            async for chunk in source:
                await sink.send(chunk)
        scope.cancel()

    def bodies(self, method: str) -> list[Any]:
        """The JSON bodies of the MCP `method` requests the client sent."""
        found = []
        rest = bytes(self.sent)
        while b"\r\n\r\n" in rest:
            head, rest = rest.split(b"\r\n\r\n", 1)
            lines = head.decode(errors="replace").split("\r\n")
            headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:] if ": " in line)}
            length = int(headers.get("content-length", "0"))
            body, rest = rest[:length], rest[length:]
            if headers.get("mcp-method") == method:
                found.append(json.loads(body))
        return found


async def test_a_status_is_reported_once_however_often_it_is_polled(
    tasks_http: RunningServer, gates: Path
) -> None:
    gate = "polled-often"
    proxy = Proxy(tasks_http.port)
    updates = Updates()
    outcome: list[str] = []
    async with proxy.serve() as url:
        tools = await load_mcp_tools(HttpServer(url), include=["gated"], timeout=WAIT)

        async def call() -> None:
            outcome.append((await tools[0].execute({"gate": gate}, on_update=updates)).text)

        async with tools, anyio.create_task_group() as group:
            group.start_soon(call)
            await updates.wait_for(f"waiting for {gate}")
            await proxy.polled(proxy.polls + 3)  # the same status, polled three more times
            (gates / gate).touch()
    assert outcome == [f"opened {gate}"]
    assert updates.messages.count(f"waiting for {gate}") == 1, updates.messages
    assert updates.messages[-1] == "task completed" and len(set(updates.messages)) == len(updates.messages)


async def test_the_answer_to_a_task_s_question_is_sent_as_the_callback_gave_it(
    tasks_http: RunningServer,
) -> None:
    """The elicitation answer goes back with ``tasks/update`` as the callback gave it: no empty (null)
    fields, which a strict server would refuse."""

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    proxy = Proxy(tasks_http.port)
    async with (
        proxy.serve() as url,
        await load_mcp_tools(
            HttpServer(url), include=["ask"], elicitation_callback=answer, timeout=WAIT
        ) as tools,
    ):
        result = await tools[0].execute({"question": "Who are you?"})
    assert (result.is_error, result.text) == (False, "hello Ada (accept)")
    [update] = proxy.bodies("tasks/update")
    responses = update["params"]["inputResponses"]
    assert list(responses.values()) == [{"action": "accept", "content": {"name": "Ada"}}]


async def test_closing_a_list_whose_server_never_answers_the_cancel(tasks_http: RunningServer) -> None:
    """A server that never answers ``tasks/cancel``: closing the list waits `CANCEL_LIMIT` for it (the
    server's time to take the cancel), then gives up, and the call waiting on the task ends."""
    gate = "never-cancelled"
    proxy = Proxy(tasks_http.port)
    updates = Updates()
    failures: list[BaseException] = []
    async with proxy.serve() as url:
        tools = await load_mcp_tools(HttpServer(url), include=["gated"], timeout=WAIT)

        async def call() -> None:
            try:
                await tools[0].execute({"gate": gate}, on_update=updates)
            except MCPError as exc:
                failures.append(exc)

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await updates.wait_for(f"waiting for {gate}")
            proxy.hold_cancels = True
            started = anyio.current_time()
            with anyio.fail_after(WAIT):
                await tools.aclose()
            waited = anyio.current_time() - started
    assert proxy.cancels_held >= 1  # the cancel went out (on the call's session or a fresh one), unanswered
    assert waited >= CANCEL_LIMIT - 0.1  # the server had all of CANCEL_LIMIT to take it
    assert len(failures) == 1 and "tool list was closed" in str(failures[0])
