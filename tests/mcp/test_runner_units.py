"""The runner of a loaded list (`Stateless`, mcp/_calls/runner.py): which session a call gets and what it
carries there (a lent or the list's own elicitation callback, per-call headers, the tasks extension, a
waiting spare, which holds no way back to its list), a 2026-07-28 server that refuses that revision after
load, the trio path without a keeper, and the error a failed call raises. Against tests/servers (kitchen,
annotated, offers, tasks) and tests/faults/servers/http_faults.py."""

from __future__ import annotations

import functools
import gc
import json
from typing import Any

import anyio
import pytest
from conftest import KITCHEN, PYTHON, SERVERS, HttpFaults, LeakChecker, RunningServer
from mcp import types

from cubepi._calling import lending_elicitation
from cubepi.errors import MCPError
from cubepi.mcp import HttpServer, StdioServer, call_context, load_mcp_tools
from cubepi.mcp._calls.limits import Timeouts
from cubepi.mcp._calls.listings import list_tools
from cubepi.mcp._calls.protocol import Learned, Protocol
from cubepi.mcp._calls.runner import Stateless

ANNOTATED = SERVERS / "annotated.py"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


def kitchen() -> StdioServer:
    return StdioServer(PYTHON, [str(KITCHEN)])


def annotated() -> StdioServer:
    return StdioServer(PYTHON, [str(ANNOTATED)])


async def say_yes(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"confirm": True})


async def say_no(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


# -- what a call carries ---------------------------------------------------------------------------------


async def test_a_lent_callback_answers_its_call_and_no_later_one() -> None:
    """The callback lent to one call answers it; the call after it, lent nothing, is not answered."""
    async with await load_mcp_tools(annotated(), include=["confirm"], timeout=30) as tools:
        with lending_elicitation(say_yes):
            lent = await tools[0].execute({"action": "drop"})
        after = await tools[0].execute({"action": "drop"})
    assert (lent.is_error, lent.text) == (False, "drop: confirmed=True")
    assert after.is_error and "elicitation_callback" in after.text


async def test_the_lists_own_callback_wins_over_a_lent_one() -> None:
    async with await load_mcp_tools(
        annotated(), include=["confirm"], elicitation_callback=say_yes, timeout=30
    ) as tools:
        with lending_elicitation(say_no):
            result = await tools[0].execute({"action": "drop"})
    assert (result.is_error, result.text) == (False, "drop: confirmed=True")


async def test_per_call_headers_reach_their_call_only(kitchen_http: RunningServer) -> None:
    async with await load_mcp_tools(HttpServer(kitchen_http.url), include=["header"], timeout=30) as tools:
        header = tools[0]
        with call_context(headers={"X-User": "ada"}):
            mine = await header.execute({"name": "x-user"})
        after = await header.execute({"name": "x-user"})
    assert (mine.text, after.text) == ("ada", "<none>")


async def test_a_server_offering_tasks_is_asked_for_them() -> None:
    """The discover result lists the tasks extension: the calls offer it, and a task-only tool runs."""
    pytest.importorskip("fastmcp_tasks")
    server = StdioServer(PYTHON, [str(SERVERS / "tasks.py")])
    async with await load_mcp_tools(server, include=["double"], timeout=30) as tools:
        result = await tools[0].execute({"n": 21})
    assert (result.is_error, result.text) == (False, "42")


async def test_the_instructions_are_the_ones_the_load_found() -> None:
    async with await load_mcp_tools(StdioServer(PYTHON, [str(SERVERS / "offers.py")]), timeout=30) as tools:
        assert tools.instructions is not None and tools.instructions.startswith(
            "Offers: read offers://readme"
        )


# -- prespawn --------------------------------------------------------------------------------------------


async def test_a_call_takes_the_spare_waiting_for_it(leaks: LeakChecker) -> None:
    async with await load_mcp_tools(kitchen(), include=["pid"], prespawn=True, timeout=30) as tools:
        assert tools._shared is not None and await tools._shared.wait_spare()
        waiting = leaks.new_children()
        pid = int((await tools[0].execute({})).text)
    assert waiting == {pid}


# -- failures --------------------------------------------------------------------------------------------


async def test_a_call_whose_server_dies_raises_what_broke_it() -> None:
    """The lost connection is reported by its cause: the exit code and the server's last words."""
    async with await load_mcp_tools(kitchen(), include=["crash"], timeout=30) as tools:
        with pytest.raises(MCPError) as caught:
            await tools[0].execute({})
    message = str(caught.value)
    assert "calling tool 'crash'" in message and "exited with code 3" in message
    assert "fatal: the kitchen is on fire" in message


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_under_trio_a_call_owns_its_session(anyio_backend: str) -> None:
    """No keeper under trio: the call opens and closes its session itself, and returns or raises as under
    asyncio."""
    async with await load_mcp_tools(kitchen(), include=["echo", "crash"], timeout=30) as tools:
        echo, crash = sorted(tools, key=lambda tool: tool.name != "echo")
        assert (await echo.execute({"message": "hi"})).text == "hi"
        with pytest.raises(MCPError, match="exited with code 3"):
            await crash.execute({})


# -- a server past 2026-07-28 since load ----------------------------------------------------------------


def stateless_2026() -> Learned:
    discover = types.DiscoverResult.model_validate(
        {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "s", "version": "1"},
        }
    )
    return Learned(protocol=Protocol("2026-07-28", discover), transport="streamable-http")


async def test_a_one_request_call_the_server_refuses_is_sent_again_in_the_handshake_era(
    http_faults: HttpFaults,
) -> None:
    """Known as a 2026-07-28 server, it serves a later revision now (-32022): the request is sent once more on
    a session that finds the protocol again, and answered; the next one goes straight to the handshake."""
    server = HttpServer(http_faults.url("/upgraded"))
    runner = Stateless(server, Timeouts.from_options(20), learned=stateless_2026())

    async def names() -> tuple[list[str], list[tuple[str, bool]]]:
        http_faults.clear()
        with anyio.fail_after(60):  # a request sent again and again would never end
            listed, _ = await runner.request(list_tools)
        bodies = [json.loads(r["body"]) for r in http_faults.records() if r["body"]]
        sent = [
            (m["method"], VERSION_KEY in m.get("params", {}).get("_meta", {})) for m in bodies if "id" in m
        ]
        return [tool.name for tool in listed], sent

    try:
        first, refused = await names()
        second, after = await names()
    finally:
        await runner.shared.aclose()
    assert "echo" in first and first == second
    assert refused == [
        ("tools/list", True),
        ("server/discover", True),
        ("initialize", False),
        ("tools/list", False),
    ]
    assert after == [("initialize", False), ("tools/list", False)]


def test_a_spare_started_in_a_later_loop_lets_the_list_go() -> None:
    """A loop that called twice starts a spare; dropping the list there still ends that spare (it holds
    no way back to the list), while the loop runs on."""
    holder = [
        anyio.run(functools.partial(load_mcp_tools, kitchen(), include=["pid"], prespawn=True, timeout=30))
    ]

    async def later() -> None:
        processes = LeakChecker()
        for _ in range(2):
            assert int((await holder[0][0].execute({})).text) > 0
        shared = holder[0]._shared
        assert shared is not None and await shared.wait_spare()
        spares = processes.new_children()
        assert spares
        del shared
        holder.clear()
        gc.collect()
        with anyio.fail_after(30):
            while processes.children() & spares:  # noqa: ASYNC110 - a process ending: polled, bounded
                await anyio.sleep(0.05)

    anyio.run(later)


async def test_an_opening_is_made_once_per_keeper_and_again_for_another() -> None:
    """`Stateless.opening` is on every call: the last one made for a keeper is reused while nothing changes;
    another loop's keeper gets its own (its HTTP client is that loop's)."""
    runner = Stateless(HttpServer("http://127.0.0.1:9/mcp"), Timeouts.from_options(5.0))
    keeper = await runner.shared.keeper()
    first = runner.opening(keeper)
    assert runner.opening(keeper) is first and first.keeper is keeper
    other = runner.opening(None)
    assert other is not first and other.keeper is None
    assert runner.opening(keeper) is not first  # the last one made was for another keeper
    await runner.shared.aclose()
