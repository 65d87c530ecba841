"""Task-only tools on handshake-era servers (2025-11-25 core tasks): server-everything's
``simulate-research-query`` and tests/servers/coretasks.py, over stdio and Streamable HTTP."""

from __future__ import annotations

import functools
import re
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import EVERYTHING, PYTHON, SERVERS, RunningServer, StartServer, Updates
from mcp import types

from cubepi.errors import MCPError, MCPTimeoutError
from cubepi.mcp import HttpServer, StdioServer, call_context, load_mcp_tools

CORE = SERVERS / "coretasks.py"
WAIT = 30.0


@pytest.fixture(scope="module")
def gates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("coregates")


@pytest.fixture(scope="module")
def core_http(http_server_factory: StartServer, gates: Path) -> RunningServer:
    env = {"GATES": str(gates), "CANCELLED": str(gates / "cancelled.log"), "GETS": str(gates / "gets.log")}
    return http_server_factory([PYTHON, str(CORE), "http"], "/mcp", env=env)


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest, gates: Path) -> StdioServer | HttpServer:
    env = {"GATES": str(gates), "CANCELLED": str(gates / "cancelled.log")}
    if request.param == "stdio":
        return StdioServer(PYTHON, [str(CORE)], env=env, protocol="legacy")
    running: RunningServer = request.getfixturevalue("core_http")
    return HttpServer(running.url, protocol="legacy")


async def cancelled(gates: Path, gate: str) -> None:
    """Until the server has recorded a ``tasks/cancel`` for the task waiting on `gate`."""
    log = anyio.Path(gates / "cancelled.log")
    with anyio.fail_after(WAIT):
        while not (await log.exists() and gate in (await log.read_text()).split()):  # noqa: ASYNC110
            await anyio.sleep(0.05)  # the server process writes the file: polled, bounded


async def test_a_task_only_tool_runs_to_its_result_with_its_status(
    server: StdioServer | HttpServer, gates: Path, request: pytest.FixtureRequest
) -> None:
    gate = f"research-{request.node.callspec.id}"
    updates = Updates()
    outcome: list[Any] = []
    async with await load_mcp_tools(server, include=["research"], timeout=WAIT) as tools:

        async def call() -> None:
            outcome.append(await tools[0].execute({"topic": "tides", "gate": gate}, on_update=updates))

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await updates.wait_for("step 1")
            (gates / f"{gate}.1").touch()
            await updates.wait_for("step 2")
            (gates / f"{gate}.2").touch()
    assert not outcome[0].is_error and outcome[0].text == "report on tides"
    assert [m for m in updates.messages if m and m.startswith("step")] == ["step 1", "step 2"]
    log = gates / "cancelled.log"
    assert not log.exists() or gate not in log.read_text().split()  # it ended: nothing to cancel


async def test_a_failed_task_is_an_error_result_the_model_can_read(
    server: StdioServer | HttpServer, gates: Path
) -> None:
    async with await load_mcp_tools(server, timeout=WAIT) as tools:
        by_name = {tool.name: tool for tool in tools}
        broken = await by_name["broken"].execute({"text": "disk"})
        refused = await by_name["refused"].execute({"text": "that"})
        stopped = await by_name["stopped"].execute({"text": "by operator"})
        spoiled = await by_name["spoiled"].execute({"text": "done"})
        lost = await by_name["lost"].execute({"text": "it"})
    assert broken.is_error and broken.text.endswith("failed: broke: disk"), broken.text
    assert refused.is_error and refused.text.endswith("refused that"), refused.text
    assert stopped.is_error and stopped.text.endswith("was cancelled: stopped: by operator"), stopped.text
    assert (spoiled.is_error, spoiled.text) == (True, "[tool error] half done")  # failed: never a success
    # completed, but the server has no result to give: its error as it is (the task did not fail; cubepi
    # drove it, so no advice on loading with tasks=True)
    assert re.fullmatch(r"\[tool error\] task \d+ has no result \(completed\)", lost.text), lost.text
    # a task that ended is not cancelled afterwards (the server records every tasks/cancel)
    log = gates / "cancelled.log"
    told = log.read_text().split() if log.exists() else []
    assert not {"disk", "that", "by operator", "operator", "done"} & set(told), told


async def test_a_plain_tool_is_called_plainly_and_a_task_answered_at_once_is_its_result(
    server: StdioServer | HttpServer,
) -> None:
    async with await load_mcp_tools(server, include=["plain", "quick"], timeout=WAIT) as tools:
        by_name = {tool.name: tool for tool in tools}
        plain = await by_name["plain"].execute({"text": "a"})
        updates = Updates()
        quick = await by_name["quick"].execute({"text": "b"}, on_update=updates)
    assert (plain.is_error, plain.text) == (False, "plain a")
    assert (quick.is_error, quick.text) == (False, "quick b")
    assert updates.messages == ["quick start"]  # its progress reached the caller


async def test_a_call_contexts_meta_goes_with_a_task_call(server: StdioServer | HttpServer) -> None:
    async with await load_mcp_tools(server, include=["quick"], timeout=WAIT) as tools:
        with call_context(meta={"user": "ada"}):
            for_ada = await tools[0].execute({"text": "c"})
        plain = await tools[0].execute({"text": "d"})
    assert (for_ada.is_error, for_ada.text) == (False, "quick c for ada")
    assert plain.text == "quick d"


async def test_a_caller_that_cancels_sends_tasks_cancel(
    server: StdioServer | HttpServer, gates: Path
) -> None:
    gate = f"abandoned-{server.kind}"
    updates = Updates()
    tools = await load_mcp_tools(server, include=["research"], timeout=WAIT)
    async with tools, anyio.create_task_group() as group:
        group.start_soon(functools.partial(tools[0].execute, {"topic": "x", "gate": gate}, on_update=updates))
        await updates.wait_for("step 1")
        group.cancel_scope.cancel()
    await cancelled(gates, gate)


async def test_max_duration_bounds_the_task_and_cancels_it(core_http: RunningServer, gates: Path) -> None:
    server = HttpServer(core_http.url, protocol="legacy")
    async with await load_mcp_tools(server, include=["research"], max_duration=1.0) as tools:
        with pytest.raises(MCPTimeoutError, match="max_duration"):
            await tools[0].execute({"topic": "x", "gate": "bounded"})
    await cancelled(gates, "bounded")


async def test_a_closing_list_cancels_the_task_it_waits_on(core_http: RunningServer, gates: Path) -> None:
    updates = Updates()
    failures: list[BaseException] = []
    tools = await load_mcp_tools(HttpServer(core_http.url, protocol="legacy"), include=["research"])

    async def call() -> None:
        try:
            await tools[0].execute({"topic": "x", "gate": "closed"}, on_update=updates)
        except MCPError as exc:
            failures.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await updates.wait_for("step 1")
        await tools.aclose()
    assert len(failures) == 1 and "tool list was closed" in str(failures[0])
    await cancelled(gates, "closed")


async def test_a_held_result_is_watched_at_the_servers_poll_interval(
    core_http: RunningServer, gates: Path
) -> None:
    """A task that asks for input: its ``tasks/result`` is held until it ends, and its status is followed
    beside it, at the server's ``pollInterval`` (50 ms), not in a loop."""
    updates = Updates()
    outcome: list[Any] = []
    server = HttpServer(core_http.url, protocol="legacy")
    async with await load_mcp_tools(server, include=["held"], timeout=WAIT) as tools:

        async def call() -> None:
            outcome.append(await tools[0].execute({"gate": "held"}, on_update=updates))

        started = time.monotonic()
        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await updates.wait_for("waiting for input")
            (gates / "held.1").touch()
            await updates.wait_for("after input")  # the status it took while its result was held
            (gates / "held.2").touch()
        took = time.monotonic() - started
    assert (outcome[0].is_error, outcome[0].text) == (False, "held held")
    gets = (gates / "gets.log").read_text().split().count("held")
    assert gets <= took / 0.05 + 3, (gets, took)


async def test_a_list_that_refuses_tasks_says_so(core_http: RunningServer) -> None:
    server = HttpServer(core_http.url, protocol="legacy")
    async with await load_mcp_tools(server, include=["broken"], tasks=False) as tools:
        result = await tools[0].execute({"text": "x"})
    assert result.is_error and "runs only as a task" in result.text and "tasks=False" in result.text
    # The JSON-RPC error the server sent, whole, for a program that wants its code.
    assert result.details["meta"]["jsonrpc_error"] == {
        "code": -32602,
        "message": "broken runs only as a task",
    }


@pytest.fixture(params=["stdio", "streamable-http"])
def everything(request: pytest.FixtureRequest) -> StdioServer | HttpServer:
    if request.param == "stdio":
        if not EVERYTHING.exists():
            pytest.skip("test servers not installed: npm ci --prefix tests")
        return StdioServer(str(EVERYTHING), ["stdio"])
    running: RunningServer = request.getfixturevalue("everything_http")
    return HttpServer(running.url, transport="auto")


async def test_server_everything_s_research_query_runs_to_its_report(
    everything: StdioServer | HttpServer,
) -> None:
    updates = Updates()
    async with await load_mcp_tools(everything, include=["simulate-research-query"], timeout=WAIT) as tools:
        result = await tools[0].execute({"topic": "tides"}, on_update=updates)
    assert not result.is_error, result.text
    assert result.text.startswith("# Research Report: tides")
    assert "Gathering sources..." in updates.messages


async def test_a_task_that_asks_for_input_is_answered_and_its_status_followed(
    everything_http: RunningServer,
) -> None:
    """server-everything's research query, ambiguous: the task turns ``input_required``, its question comes
    on the held ``tasks/result`` and is answered by the callback; the status it takes while the result is
    held still reaches the caller."""
    questions: list[str] = []

    async def clarify(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        questions.append(params.message)
        return types.ElicitResult(action="accept", content={"interpretation": "oceanography"})

    updates = Updates()
    server = HttpServer(everything_http.url, transport="auto")
    async with await load_mcp_tools(
        server, include=["simulate-research-query"], timeout=WAIT, elicitation_callback=clarify
    ) as tools:
        result = await tools[0].execute({"topic": "tides", "ambiguous": True}, on_update=updates)
    assert not result.is_error, result.text
    assert result.text.startswith("# Research Report: tides (oceanography)")
    assert len(questions) == 1 and "tides" in questions[0]
    asked = next(i for i, m in enumerate(updates.messages) if m and m.startswith("Found multiple"))
    later = {'Continuing with interpretation: "oceanography"...', "Generating report..."}  # 2 s of status
    assert later & set(updates.messages[asked + 1 :]), updates.messages  # followed while the result is held


async def test_a_running_task_is_polled_at_the_servers_poll_interval(gates: Path, tmp_path: Path) -> None:
    """A server whose ``pollInterval`` is 300 ms gets ``tasks/get`` no more often than that."""
    interval = 0.3
    gets = anyio.Path(tmp_path / "gets.log")
    env = {"GATES": str(gates), "GETS": str(gets), "POLL_MS": str(int(interval * 1000))}
    server = StdioServer(PYTHON, [str(CORE)], env=env, protocol="legacy")
    gate = "slow-polls"
    seen: list[float] = []  # when the count of polls grew (read every 10 ms)

    async def polls() -> int:
        return (await gets.read_text()).split().count(gate) if await gets.exists() else 0

    async with await load_mcp_tools(server, include=["research"], timeout=WAIT) as tools:

        async def call() -> None:
            await tools[0].execute({"topic": "x", "gate": gate})

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            with anyio.fail_after(WAIT):
                while len(seen) < 4:
                    count = await polls()
                    seen += [anyio.current_time()] * (count - len(seen))
                    await anyio.sleep(0.01)  # the server process writes the file: polled, bounded
            group.cancel_scope.cancel()
    # three intervals between the first poll and the fourth (less the 10 ms reading steps)
    assert seen[3] - seen[0] >= 3 * interval - 0.05, seen
