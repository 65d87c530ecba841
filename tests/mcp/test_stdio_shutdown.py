"""A stdio load and a stateless stdio call return once their answer is in; the server's shutdown goes on
without the caller, owned by the list.

The server is tests/servers/slow_exit.py: once its stdin closes it writes ``<pid>.stdin-closed``, waits
(for the test's go file, or a delay), writes ``<pid>.exited`` and exits. A server that waits for its go
file cannot have exited before the test allows it, so "the call returned before its server's exit" is an
event, not a race. Where the test holds a server that way, the SDK's grace period is lengthened so that a
slow test never gets the server terminated; the default grace is kept where it is what is tested.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import mcp.client.stdio
import psutil
import pytest
from conftest import PYTHON, SERVERS, LeakChecker, wait_until

from cubepi.mcp import StdioServer, load_mcp_tools, make_mcp_agent_tool
from cubepi.mcp._calls.ownership import MAX_CLOSING

SLOW_EXIT = SERVERS / "slow_exit.py"
PID_TOOL = {"name": "pid", "inputSchema": {"type": "object", "properties": {}}}


@dataclass
class Exits:
    """The markers of slow_exit.py servers, and their go files."""

    markers: Path
    go: Path

    def server(self, *, held: bool = True, **env: str) -> StdioServer:
        """slow_exit.py; `held`: each process waits for its go file, else for `SLOW_EXIT_DELAY`."""
        env = {"SLOW_EXIT_MARKERS": str(self.markers), **env}
        if held:
            env["SLOW_EXIT_GO"] = str(self.go)
        return StdioServer(PYTHON, [str(SLOW_EXIT)], env=env)

    def quick(self) -> StdioServer:
        """slow_exit.py exiting 0.3 s after its stdin closes."""
        return self.server(held=False, SLOW_EXIT_DELAY="0.3")

    def closed_stdin(self, pid: int) -> bool:
        return (self.markers / f"{pid}.stdin-closed").exists()

    def exited(self, pid: int) -> bool:
        return (self.markers / f"{pid}.exited").exists()

    def exits(self) -> set[int]:
        return {int(path.name.split(".")[0]) for path in self.markers.glob("*.exited")}

    def let_go(self, *pids: int) -> None:
        for pid in pids:
            (self.go / str(pid)).touch()


@pytest.fixture
def exits(tmp_path: Path) -> Exits:
    found = Exits(tmp_path / "markers", tmp_path / "go")
    found.markers.mkdir()
    found.go.mkdir()
    return found


@pytest.fixture
def long_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's grace for a server to exit after its stdin closes, lengthened: a held server is ended by
    the test's go file, never by a grace that ran out on a slow machine."""
    monkeypatch.setattr(mcp.client.stdio, "PROCESS_TERMINATION_TIMEOUT", 60.0)


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.mark.usefixtures("long_grace")
async def test_a_load_and_a_call_return_before_their_servers_exit_and_aclose_waits_for_every_exit(
    exits: Exits, leaks: LeakChecker
) -> None:
    tools = await load_mcp_tools(exits.server())
    (listing,) = leaks.new_children()  # the listing's server: still shutting down, held by the test
    assert running(listing) and not exits.exited(listing)

    pid_tool = next(tool for tool in tools if tool.name == "pid")
    result = await pid_tool.execute({})
    called = int(result.text)
    assert called != listing and not result.is_error
    assert running(called) and not exits.exited(called), "the call returned before its server exited"

    exits.let_go(listing, called)
    await tools.aclose()
    assert exits.exits() >= {listing, called}, "every server got its graceful exit"
    assert not leaks.new_children()


async def test_settled_returns_once_every_server_whose_call_returned_has_exited(exits: Exits) -> None:
    async with await load_mcp_tools(exits.quick(), include=["pid"]) as tools:
        called = int((await tools[0].execute({})).text)
        await tools._shared.settled()
        assert exits.exited(called), "settled() waited for the shutdown the call left to the list"


@pytest.mark.usefixtures("long_grace")
async def test_a_call_whose_server_is_exiting_leaves_the_next_call_its_own_server(
    exits: Exits, leaks: LeakChecker
) -> None:
    async with await load_mcp_tools(exits.server(), include=["pid"]) as tools:
        first = int((await tools[0].execute({})).text)
        second = int((await tools[0].execute({})).text)
        assert first != second
        assert running(first) and running(second)
        exits.let_go(*leaks.new_children())
    assert exits.exits() >= {first, second}
    assert not leaks.new_children()


async def test_execute_sync_waits_for_its_servers_exit(exits: Exits) -> None:
    """``execute_sync`` runs a loop for one call: the call returns once its server has exited (the loop's
    end would otherwise kill it)."""
    async with await load_mcp_tools(exits.quick(), include=["pid"]) as tools:
        pid = int(await anyio.to_thread.run_sync(lambda: tools[0].execute_sync({}).text))
        assert exits.exited(pid), "execute_sync returned before its server had exited"
        assert not running(pid)


async def test_execute_sync_waits_for_the_exit_of_a_retried_calls_server(
    exits: Exits, tmp_path: Path
) -> None:
    """A call that retries makes two requests in its loop: the second still waits (the loop ends with the
    call), though a loop that has made a call before would otherwise let a shutdown run on."""
    server = exits.quick()
    server = StdioServer(
        server.command, server.args, env={**(server.env or {}), "SLOW_EXIT_FLAKY": str(tmp_path / "once")}
    )
    async with await load_mcp_tools(server, include=["flaky"], retries={"flaky": 1}) as tools:
        pid = int(await anyio.to_thread.run_sync(lambda: tools[0].execute_sync({}).text))
        assert (tmp_path / "once").exists(), "the first attempt died and the call was retried"
        assert exits.exited(pid), "execute_sync returned before its retried server had exited"


def test_execute_sync_with_no_running_loop_waits_for_its_servers_exit(exits: Exits) -> None:
    tools = anyio.run(load_mcp_tools, exits.quick())
    pid_tool = next(tool for tool in tools if tool.name == "pid")
    for _ in range(2):  # the second call too: each execute_sync runs a loop of its own
        pid = int(pid_tool.execute_sync({}).text)
        assert exits.exited(pid) and not running(pid)


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_under_trio_a_call_returns_once_its_server_has_exited(exits: Exits, anyio_backend: str) -> None:
    async with await load_mcp_tools(exits.quick(), include=["pid"]) as tools:
        pid = int((await tools[0].execute({})).text)
        assert exits.exited(pid) and not running(pid)


async def test_a_tool_without_a_list_waits_for_its_servers_exit(exits: Exits) -> None:
    """A tool made with `make_mcp_agent_tool` has no list to own the shutdown: its call waits for it."""
    tool = make_mcp_agent_tool(PID_TOOL, exits.quick())
    for _ in range(2):  # the second too, in a loop that made a call before
        pid = int((await tool.execute({})).text)
        assert exits.exited(pid) and not running(pid)


@pytest.mark.usefixtures("long_grace")
def test_the_loop_ending_with_the_list_never_closed_kills_every_server(exits: Exits) -> None:
    leaks = LeakChecker()
    seen: list[int] = []

    async def main() -> None:
        tools = await load_mcp_tools(exits.server())
        seen.extend(leaks.new_children())
        pid_tool = next(tool for tool in tools if tool.name == "pid")
        seen.append(int((await pid_tool.execute({})).text))
        assert all(map(running, seen))  # held by the test: only the loop's end can stop them now

    started = time.monotonic()
    asyncio.run(main())
    assert len(seen) == 2
    assert not any(map(running, seen)), "the loop's end left a server running"
    assert not leaks.new_children()
    assert not exits.exits(), "killed at the loop's end, not left to finish"
    assert time.monotonic() - started < 60  # not the SDK's grace: nothing waited for the held servers


@pytest.mark.usefixtures("long_grace")
async def test_a_list_dropped_while_its_servers_exit_lets_them_finish(
    exits: Exits, leaks: LeakChecker
) -> None:
    tools = await load_mcp_tools(exits.server(), include=["pid"])
    pid = int((await tools[0].execute({})).text)
    pids = leaks.new_children()
    assert pid in pids and len(pids) == 2
    del tools
    gc.collect()
    exits.let_go(*pids)
    await wait_until(lambda: exits.exits() >= pids and not leaks.new_children(), limit=60)


@pytest.mark.parametrize(("mode", "signal_name"), [("deaf", "SIGTERM"), ("stubborn", "SIGKILL")])
async def test_a_server_that_ignores_its_stdin_closing_is_ended_and_logged_never_reported_to_a_call(
    exits: Exits, leaks: LeakChecker, caplog: pytest.LogCaptureFixture, mode: str, signal_name: str
) -> None:
    caplog.set_level(logging.WARNING, logger="cubepi.mcp")
    tools = await load_mcp_tools(exits.server(SLOW_EXIT_MODE=mode), include=["add"])
    first = await tools[0].execute({"a": 1, "b": 2})
    second = await tools[0].execute({"a": 2, "b": 3})  # while the first call's server is being ended
    assert (first.text, second.text) == ("3", "5") and not first.is_error and not second.is_error
    await tools.aclose()
    assert not leaks.new_children(), "the grace period and the kills ended every server"
    forced = [r.getMessage() for r in caplog.records if "did not exit within" in r.getMessage()]
    assert len(forced) == 3, forced  # the listing's server and both calls'
    assert all(signal_name in message and "slow_exit.py" in message for message in forced)


@pytest.mark.usefixtures("long_grace")
async def test_past_max_closing_a_call_waits_for_its_own_servers_exit(
    exits: Exits, leaks: LeakChecker
) -> None:
    """At most `MAX_CLOSING` servers of a list shut down beside the calls; the next call waits for its
    own."""
    tools = await load_mcp_tools(exits.server(), include=["pid"])  # the listing's server: one closing
    pid_tool = tools[0]
    for _ in range(MAX_CLOSING - 1):
        await pid_tool.execute({})
    closing = leaks.new_children()
    assert len(closing) == MAX_CLOSING and not exits.exits()

    async with anyio.create_task_group() as group:
        done = anyio.Event()
        answered: list[int] = []

        async def call() -> None:
            answered.append(int((await pid_tool.execute({})).text))
            done.set()

        group.start_soon(call)
        await wait_until(lambda: len(leaks.new_children() - closing) == 1, limit=60)
        (waiting,) = leaks.new_children() - closing
        await wait_until(lambda: exits.closed_stdin(waiting), limit=60)
        assert not done.is_set(), "the call past MAX_CLOSING returned before its server exited"
        exits.let_go(waiting)
        await done.wait()
    assert answered == [waiting] and exits.exited(waiting)

    exits.let_go(*closing)
    await tools.aclose()
    assert exits.exits() == closing | {waiting}
    assert not leaks.new_children()
