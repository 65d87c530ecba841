"""Long-running calls as tasks (the ``io.modelcontextprotocol/tasks`` extension) against a real
fastmcp-tasks server (memory backend), over stdio and Streamable HTTP."""

from __future__ import annotations

import contextlib
import functools
import pickle
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from conftest import EVERYTHING, PYTHON, SERVERS, LeakChecker, RunningServer, StartServer, Updates
from mcp import types

from cubepi.cli import main
from cubepi.errors import MCPError, MCPTimeoutError, UserError
from cubepi.mcp import HttpServer, StdioServer, load_mcp_tools
from cubepi.mcp._calls.tasks import CANCEL_LIMIT, POLL_CAP, POLL_DEFAULT, POLL_FLOOR, RETRY_PAUSE, poll_delay
from cubepi.mcp._lists.toollist import MCPToolList
from cubepi.tools import ToolUpdate

pytest.importorskip("fastmcp_tasks")

TASKS = SERVERS / "tasks.py"
WAIT = 30.0  # the bound on waiting for an event


@pytest.fixture(scope="module")
def gates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gates")


@pytest.fixture(scope="module")
def tasks_http(http_server_factory: StartServer, gates: Path) -> RunningServer:
    env = {"GATES": str(gates), "CANCELLED": str(gates / "cancelled.log")}
    return http_server_factory([PYTHON, str(TASKS), "http"], "/mcp", env=env)


@pytest.fixture
def http(tasks_http: RunningServer) -> HttpServer:
    return HttpServer(tasks_http.url)


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest, gates: Path) -> StdioServer | HttpServer:
    if request.param == "stdio":
        return StdioServer(PYTHON, [str(TASKS)], env={"GATES": str(gates)})
    running: RunningServer = request.getfixturevalue("tasks_http")
    return HttpServer(running.url)


def by_name(tools: MCPToolList) -> dict[str, Any]:
    return {tool.name: tool for tool in tools}


async def cancelled_gates(gates: Path, gate: str) -> None:
    """Until the server has recorded that the task waiting on `gate` was cancelled."""
    log = anyio.Path(gates / "cancelled.log")
    with anyio.fail_after(WAIT):
        while not (await log.exists() and gate in (await log.read_text()).split()):  # noqa: ASYNC110
            await anyio.sleep(0.05)  # the server process writes the file: polled, bounded


def test_cubepi_call_shows_the_task_status(
    tasks_http: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["call", "double", '{"n": 4}', "--url", tasks_http.url]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == "8"
    assert "... task working" in captured.err.splitlines() and "... task completed" in captured.err


def test_poll_delay_honours_the_server_within_bounds() -> None:
    assert poll_delay(200) == 0.2
    assert poll_delay(0) == POLL_FLOOR
    assert poll_delay(10**9) == POLL_CAP
    assert poll_delay(None) == POLL_DEFAULT


async def test_task_only_and_optional_tools_give_their_results(server: StdioServer | HttpServer) -> None:
    # A spare stdio server (prespawn) consents as a fresh one does.
    async with await load_mcp_tools(server, prespawn=isinstance(server, StdioServer)) as tools:
        tool = by_name(tools)
        updates = Updates()
        double = await tool["double"].execute({"n": 21}, on_update=updates)
        assert (double.is_error, double.text) == (False, "42")
        assert updates.messages[0] == "task working" and updates.messages[-1] == "task completed"
        optional = Updates()

        async def report(update: ToolUpdate) -> None:  # an async on_update is awaited
            optional(update)

        triple = await tool["triple"].execute({"n": 2}, on_update=report)
        assert (triple.is_error, triple.text, optional.messages[-1]) == (False, "6", "task completed")


async def test_a_list_that_travels_still_runs_tasks(http: HttpServer) -> None:
    async with await load_mcp_tools(http, include=["double"]) as tools:
        copy: MCPToolList = pickle.loads(pickle.dumps(tools))
        async with copy:
            assert (await copy[0].execute({"n": 5})).text == "10"


async def test_a_tool_that_never_runs_as_a_task_reports_no_task(http: HttpServer) -> None:
    async with await load_mcp_tools(http, include=["plain"]) as tools:
        updates = Updates()
        assert (await tools[0].execute({"n": 5}, on_update=updates)).text == "5"
        assert updates.messages == []


async def test_a_list_can_refuse_tasks(http: HttpServer) -> None:
    async with await load_mcp_tools(http, tasks=False) as tools:
        tool = by_name(tools)
        updates = Updates()
        triple = await tool["triple"].execute({"n": 2}, on_update=updates)
        assert (triple.text, updates.messages) == ("6", [])
        double = await tool["double"].execute({"n": 1})
        assert double.is_error and "tasks extension" in double.text
    with pytest.raises(UserError, match="tasks must be True or False"):
        await load_mcp_tools(http, tasks="yes")  # type: ignore[arg-type]


async def test_a_failed_task_is_an_error_result(http: HttpServer) -> None:
    async with await load_mcp_tools(http, include=["explode"]) as tools:
        result = await tools[0].execute({"text": "boom"})
    assert result.is_error
    assert "failed" in result.text and "exploded: boom" in result.text
    assert result.details["meta"]["task_error"]["message"] == "exploded: boom"


async def test_status_messages_reach_on_update(http: HttpServer, gates: Path) -> None:
    gate = f"steps-{id(http)}"
    updates = Updates()

    async def open_gates() -> None:
        for step in (1, 2):
            await updates.wait_for(f"step {step}")
            (gates / f"{gate}.{step}").touch()

    async with await load_mcp_tools(http, include=["steps"]) as tools, anyio.create_task_group() as group:
        group.start_soon(open_gates)
        result = await tools[0].execute({"gate": gate}, on_update=updates)
    assert (result.is_error, result.text) == (False, "done")
    assert [m for m in updates.messages if m and m.startswith("step")] == ["step 1", "step 2"]


async def test_input_asked_mid_task_is_answered_by_the_callback(server: StdioServer | HttpServer) -> None:
    questions: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        questions.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with await load_mcp_tools(server, include=["ask"], elicitation_callback=answer) as tools:
        result = await tools[0].execute({"question": "Who are you?"})
    assert (result.is_error, result.text, questions) == (False, "hello Ada (accept)", ["Who are you?"])


async def test_input_a_callback_refuses_ends_the_call_with_its_reason(http: HttpServer) -> None:
    async def refuse(context: Any, params: types.ElicitRequestParams) -> types.ErrorData:
        return types.ErrorData(code=types.INVALID_REQUEST, message="not today")

    async with await load_mcp_tools(http, include=["ask"], elicitation_callback=refuse) as tools:
        result = await tools[0].execute({"question": "Who are you?"})
    assert result.is_error  # with no advice to pass a callback: there is one
    assert result.text == "[tool error] the task asked for input the client did not give: not today"


async def test_closing_a_list_whose_tasks_have_ended_waits_for_none(http: HttpServer) -> None:
    tools = await load_mcp_tools(http, include=["double"])
    assert (await tools[0].execute({"n": 3})).text == "6"
    with anyio.fail_after(CANCEL_LIMIT):  # the longest a close waits on a task still running
        await tools.aclose()


async def test_input_asked_mid_task_without_a_callback_says_how(http: HttpServer) -> None:
    async with await load_mcp_tools(http, include=["ask"]) as tools:
        result = await tools[0].execute({"question": "Who are you?"})
    assert result.is_error and "elicitation_callback" in result.text


async def test_max_duration_bounds_the_task_and_cancels_it(tasks_http: RunningServer, gates: Path) -> None:
    async with await load_mcp_tools(HttpServer(tasks_http.url), include=["gated"], max_duration=1.0) as tools:
        with pytest.raises(MCPTimeoutError, match="max_duration"):
            await tools[0].execute({"gate": "bounded"})
    await cancelled_gates(gates, "bounded")


async def test_a_caller_that_cancels_cancels_the_task(tasks_http: RunningServer, gates: Path) -> None:
    updates = Updates()
    tools = await load_mcp_tools(HttpServer(tasks_http.url), include=["gated"])
    async with tools, anyio.create_task_group() as group:
        group.start_soon(functools.partial(tools[0].execute, {"gate": "abandoned"}, on_update=updates))
        await updates.wait_for("waiting for abandoned")
        group.cancel_scope.cancel()
    await cancelled_gates(gates, "abandoned")


async def test_a_closing_list_cancels_the_tasks_it_waits_on(tasks_http: RunningServer, gates: Path) -> None:
    updates = Updates()
    failures: list[BaseException] = []
    tools = await load_mcp_tools(HttpServer(tasks_http.url), include=["gated"])

    async def call() -> None:
        try:
            await tools[0].execute({"gate": "closed"}, on_update=updates)
        except MCPError as exc:
            failures.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await updates.wait_for("waiting for closed")
        await tools.aclose()
    assert len(failures) == 1 and "tool list was closed" in str(failures[0])
    await cancelled_gates(gates, "closed")


async def test_a_list_closed_by_a_cancelled_caller_still_stops_its_tasks_first(
    tasks_http: RunningServer, gates: Path
) -> None:
    """`aclose()` is shielded: a caller already cancelled still gets the list closed, and it returns once
    the waiting call has cancelled its task on the server."""
    updates = Updates()
    failures: list[BaseException] = []
    tools = await load_mcp_tools(HttpServer(tasks_http.url), include=["gated"])

    async def call() -> None:
        try:
            await tools[0].execute({"gate": "closed-cancelled"}, on_update=updates)
        except MCPError as exc:
            failures.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await updates.wait_for("waiting for closed-cancelled")
        with anyio.CancelScope() as scope:
            scope.cancel()
            await tools.aclose()
        assert tools.closed
        log = anyio.Path(gates / "cancelled.log")
        assert "closed-cancelled" in (await log.read_text()).split()  # already: aclose waited for it
    assert len(failures) == 1 and "tool list was closed" in str(failures[0])


async def test_a_stdio_task_ends_with_its_call() -> None:
    """Over stdio the task lives in the call's own process: cancelling the call ends both."""
    updates = Updates()
    async with await load_mcp_tools(StdioServer(PYTHON, [str(TASKS)]), include=["gated"]) as tools:
        with anyio.move_on_after(WAIT) as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(functools.partial(tools[0].execute, {"gate": "never"}, on_update=updates))
                await updates.wait_for("waiting for never")
                group.cancel_scope.cancel()
        assert not scope.cancelled_caught


class DroppingProxy:
    """A TCP proxy to an HTTP server that can drop every connection (as a restarted proxy would)."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.dropping = False
        self.dropped = 0
        self.enough = anyio.Event()
        self.refused: list[float] = []  # when each connection was dropped at once
        self.sent = bytearray()  # what the client sent through the proxy
        self.polls: list[float] = []  # when each tasks/get went through
        self.polled = anyio.Event()  # set at the third tasks/get
        self._live: set[anyio.abc.SocketStream] = set()

    @contextlib.asynccontextmanager
    async def serve(self) -> AsyncIterator[int]:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with listener, anyio.create_task_group() as group:
            group.start_soon(listener.serve, self._handle)
            yield port
            group.cancel_scope.cancel()

    async def drop_all(self) -> None:
        self.dropping = True
        for stream in list(self._live):
            await stream.aclose()

    async def _handle(self, client: anyio.abc.SocketStream) -> None:
        if self.dropping:
            self.dropped += 1
            self.refused.append(anyio.current_time())
            if self.dropped >= 3:
                self.enough.set()
            await client.aclose()
            return
        async with client, await anyio.connect_tcp("127.0.0.1", self.upstream) as server:
            self._live.update((client, server))
            try:
                async with anyio.create_task_group() as group:
                    group.start_soon(self._pump, client, server, group.cancel_scope, self.sent)
                    await self._pump(server, client, group.cancel_scope, bytearray())
            finally:
                self._live.difference_update((client, server))

    async def _pump(
        self,
        source: anyio.abc.SocketStream,
        sink: anyio.abc.SocketStream,
        scope: anyio.CancelScope,
        seen: bytearray,
    ) -> None:
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            async for chunk in source:
                if seen is self.sent and b"mcp-method: tasks/get" in chunk.lower():
                    self.polls.append(anyio.current_time())
                    if len(self.polls) >= 3:
                        self.polled.set()
                seen.extend(chunk)
                await sink.send(chunk)
        scope.cancel()


def headers_of(sent: bytes, method: str) -> list[dict[str, str]]:
    """The headers (lower-cased) of each HTTP request in `sent` that is an MCP `method` request."""
    found = []
    for block in bytes(sent).lower().split(b"\r\n\r\n"):
        lines = block.decode(errors="replace").split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines if ": " in line)
        if headers.get("mcp-method") == method:
            found.append(headers)
    return found


async def test_a_dropped_connection_mid_polling_still_gives_the_result(
    tasks_http: RunningServer, gates: Path
) -> None:
    proxy = DroppingProxy(tasks_http.port)
    updates = Updates()
    outcome: list[str] = []
    async with proxy.serve() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        tools = await load_mcp_tools(HttpServer(url), include=["gated"], timeout=WAIT)
        async with tools:

            async def call() -> None:
                outcome.append((await tools[0].execute({"gate": "dropped"}, on_update=updates)).text)

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                await updates.wait_for("waiting for dropped")
                await proxy.drop_all()
                with anyio.fail_after(WAIT):
                    await proxy.enough.wait()  # the call kept asking while the proxy was down
                proxy.dropping = False
                (gates / "dropped").touch()
    assert outcome == ["opened dropped"]
    # Every poll names its task (Mcp-Name, for routing): one task id, not the tool's name.
    names = {headers.get("mcp-name") for headers in headers_of(proxy.sent, "tasks/get")}
    assert len(names) == 1 and None not in names and "gated" not in names, names
    # A poll that failed in transport is sent again after a pause that doubles: no tight loop.
    first, second, third = proxy.refused[:3]
    assert second - first >= 0.9 * RETRY_PAUSE and third - second >= 0.9 * 2 * RETRY_PAUSE, proxy.refused


async def test_polling_honours_the_server_s_poll_interval(
    http_server_factory: StartServer, gates: Path
) -> None:
    """A server that asks for ``pollIntervalMs`` 300 is asked ``tasks/get`` no more often than that."""
    interval = 0.3
    env = {"GATES": str(gates), "POLL_MS": str(int(interval * 1000))}
    running = http_server_factory([PYTHON, str(TASKS), "http"], "/mcp", env=env)
    proxy = DroppingProxy(running.port)
    outcome: list[str] = []
    async with proxy.serve() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with await load_mcp_tools(HttpServer(url), include=["gated"], timeout=WAIT) as tools:

            async def call() -> None:
                outcome.append((await tools[0].execute({"gate": "slow-polls"})).text)

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                with anyio.fail_after(WAIT):
                    await proxy.polled.wait()
                (gates / "slow-polls").touch()
    assert outcome == ["opened slow-polls"]
    gaps = [later - earlier for earlier, later in zip(proxy.polls, proxy.polls[1:], strict=False)]
    assert len(gaps) >= 2 and min(gaps) >= 0.9 * interval, gaps


async def test_a_2025_11_25_task_tool_on_a_list_refusing_tasks_says_why() -> None:
    if not EVERYTHING.exists():
        pytest.skip("test servers not installed: npm ci --prefix tests")
    everything = StdioServer(str(EVERYTHING))
    async with await load_mcp_tools(everything, include=["simulate-research-query"], tasks=False) as tools:
        result = await tools[0].execute({"topic": "tides"})
    assert result.is_error and "2025-11-25" in result.text, result.text
    assert "tasks=False" in result.text


def _state(**wire: Any) -> Any:
    from cubepi.mcp._calls.tasks import _models

    return _models().state.model_validate({"taskId": "t1", **wire}, by_name=False)


def test_a_task_s_end_becomes_the_call_s_result() -> None:
    from cubepi.mcp._calls.tasks import _final

    done = _final(_state(status="completed", result={"content": [{"type": "text", "text": "ok"}]}))
    assert (done.is_error, done.content[0].text) == (False, "ok")
    failed = _final(_state(status="failed", error={"code": -1, "message": "disk full"}))
    assert failed.is_error and failed.content[0].text == "task t1 failed: disk full"
    assert failed.meta == {"task_error": {"code": -1, "message": "disk full"}}
    said = _final(_state(status="failed", statusMessage="out of time"))
    assert said.content[0].text == "task t1 failed: out of time" and said.meta is None
    assert _final(_state(status="failed")).content[0].text == "task t1 failed: no error given"
    cancelled = _final(_state(status="cancelled", statusMessage="by an operator"))
    assert cancelled.is_error and cancelled.content[0].text == "task t1 was cancelled: by an operator"
    assert _final(_state(status="cancelled")).content[0].text == "task t1 was cancelled"


def test_only_a_handshake_era_task_only_tool_gets_the_tasks_hint() -> None:
    from cubepi.mcp._calls.core_tasks import task_hint as legacy_task_hint
    from cubepi.mcp._calls.core_tasks import with_task_hint as with_legacy_task_hint
    from cubepi.mcp._calls.protocol import Protocol

    def tool(support: str | None) -> types.Tool:
        execution = types.ToolExecution(task_support=support) if support else None
        return types.Tool(name="t", input_schema={"type": "object"}, execution=execution)

    legacy = Protocol("2025-11-25")
    modern = Protocol(
        "2026-07-28",
        types.DiscoverResult(
            supported_versions=["2026-07-28"],
            capabilities=types.ServerCapabilities(extensions={"io.modelcontextprotocol/tasks": {}}),
            result_type="complete",
            ttl_ms=0,
            cache_scope="public",
        ),
    )
    assert legacy_task_hint(tool("required"), legacy) is not None
    assert legacy_task_hint(tool("optional"), legacy) is None
    assert legacy_task_hint(tool(None), legacy) is None
    assert legacy_task_hint(tool("required"), modern) is None
    error = types.CallToolResult(content=[types.TextContent(type="text", text="no")], is_error=True)
    assert len(with_legacy_task_hint(error, tool("required"), legacy).content) == 2
    fine = types.CallToolResult(content=[types.TextContent(type="text", text="yes")])
    assert with_legacy_task_hint(fine, tool("required"), legacy) is fine
    assert modern.offers_tasks and not legacy.offers_tasks


async def test_a_server_that_lost_the_task_ends_the_call_with_its_error(
    http_server_factory: StartServer, gates: Path
) -> None:
    """A memory backend loses its tasks when the server restarts: the next poll's error is the result."""
    command = [PYTHON, str(TASKS), "http"]
    start = functools.partial(http_server_factory, command, "/mcp", env={"GATES": str(gates)})
    first = start()
    proxy = DroppingProxy(first.port)
    updates = Updates()
    outcome: list[Any] = []
    async with proxy.serve() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with await load_mcp_tools(HttpServer(url), include=["gated"], timeout=WAIT) as tools:

            async def call() -> None:
                outcome.append(await tools[0].execute({"gate": "restarted"}, on_update=updates))

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                await updates.wait_for("waiting for restarted")
                await proxy.drop_all()  # while the server restarts
                first.process.terminate()
                await anyio.to_thread.run_sync(first.process.wait)
                proxy.upstream = (await anyio.to_thread.run_sync(start)).port
                proxy.sent.clear()
                proxy.dropping = False
    [result] = outcome
    assert result.is_error and "not found" in result.text.lower(), result.text
    assert bytes(proxy.sent).lower().count(b"mcp-method: tasks/get") == 1  # an answer is not asked again


async def test_a_late_start_up_probe_does_not_bound_a_stdio_task_by_timeout(
    gates: Path, leaks: LeakChecker
) -> None:
    """The first call to a new stdio process has a ``server/discover`` probe beside it (start-up is bounded
    apart). A server that answers the call with a task before it answers the probe is up: the probe's late
    answer must not bound the task by `timeout` again (only `max_duration` bounds a task)."""
    timeout = 2.0  # each poll's bound too: room for a loaded machine
    hold = gates / "hold-discover"
    relay = [str(SERVERS / "late_discover.py"), str(hold), PYTHON, str(TASKS)]
    updates = Updates()
    outcome: list[str] = []
    server = StdioServer(PYTHON, relay, env={"GATES": str(gates)})
    async with await load_mcp_tools(
        server, include=["gated"], timeout=timeout, startup_timeout=WAIT, max_duration=WAIT
    ) as tools:
        hold.touch()

        async def call() -> None:
            outcome.append((await tools[0].execute({"gate": "late-probe"}, on_update=updates)).text)

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await updates.wait_for("waiting for late-probe")
            hold.unlink()  # the probe is answered now, after the task started
            await anyio.sleep(1.5 * timeout)  # the task outlasts `timeout`
            (gates / "late-probe").touch()
    assert outcome == ["opened late-probe"]
