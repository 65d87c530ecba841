"""What the calls of one list share (`_calls.shared_state.Shared`): the spare's warm-up, its limits, its
count, aclose across event loops, and what a pickled list's `Shared` becomes where it lands.

Real stdio servers (a small MCPServer script that logs every request it gets, per process); the only unit
tests are of `Shared`'s pickling, which needs no server.
"""

from __future__ import annotations

import asyncio
import gc
import json
import pickle
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from conftest import PYTHON, LeakChecker, wait_until

from cubepi import UserError
from cubepi.mcp import MCPTimeoutError, StdioServer, load_mcp_tools
from cubepi.mcp._calls.shared_state import WARM_UP_TOOL, Shared

# A server that logs, per process, its start and every request (method, and a call's tool name). It lists a
# tool named like the warm-up probe's first choice; `ON_PROBE` makes it refuse the probe with a protocol
# error, or exit on it. A process started after the first one (the list was loaded from that one) can be
# made slow to start (`LATER_START_DELAY`) or slow to list its tools (`LATER_LIST_DELAY`).
WARMING = '''
import json
import os
import time

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

LOG = os.environ["REQUEST_LOG"]


def record(*fields):
    with open(LOG, "a") as log:
        log.write(json.dumps([os.getpid(), *fields]) + "\\n")


def processes_before():
    try:
        with open(LOG) as log:
            return sum(1 for line in log if json.loads(line)[1] == "start")
    except FileNotFoundError:
        return 0


LATER = processes_before() > 0
record("start", None)
if LATER:
    time.sleep(float(os.environ.get("LATER_START_DELAY", "0")))


async def observe(ctx, call_next):
    if ctx.request_id is None:
        return await call_next(ctx)
    name = (ctx.params or {}).get("name") if ctx.method == "tools/call" else None
    record(ctx.method, name)
    if name is not None and name.startswith("cubepi-warm-up-") and name != "cubepi-warm-up-0":
        if os.environ.get("ON_PROBE") == "refuse":
            raise MCPError(code=-32602, message=f"Unknown tool: {name}")
        if os.environ.get("ON_PROBE") == "die":
            os._exit(3)
    if ctx.method == "tools/list" and LATER:
        await anyio.sleep(float(os.environ.get("LATER_LIST_DELAY", "0")))
    return await call_next(ctx)


server = MCPServer("warming", middleware=[observe])


@server.tool()
def whoami() -> str:
    """The pid of this process."""
    return str(os.getpid())


@server.tool()
async def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    await anyio.sleep(seconds)
    return "done"


@server.tool(name="cubepi-warm-up-0")
def taken() -> str:
    """A tool that has the warm-up probe's first name: the probe must never run it."""
    record("ran", "cubepi-warm-up-0")
    return "ran"


if __name__ == "__main__":
    server.run("stdio")
'''


@pytest.fixture(scope="module")
def warming_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("servers") / "warming.py"
    path.write_text(WARMING)
    return path


@pytest.fixture
def request_log(tmp_path: Path) -> Path:
    return tmp_path / "requests.jsonl"


def warming(script: Path, log: Path, protocol: str = "auto", **env: str) -> StdioServer:
    return StdioServer(PYTHON, [str(script)], env={"REQUEST_LOG": str(log), **env}, protocol=protocol)


def requests_of(log: Path, pid: int) -> list[list[Any]]:
    """What process `pid` logged, in order: [method, tool name] pairs ("start" first)."""
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return [entry[1:] for entry in entries if entry[0] == pid]


def started(log: Path) -> list[int]:
    """The pids of the server's processes, in the order they started (the list was loaded from the first)."""
    return [entry[0] for entry in map(json.loads, log.read_text().splitlines()) if entry[1] == "start"]


def ran_a_listed_tool_named_like_the_probe(log: Path) -> bool:
    return any(entry[1] == "ran" for entry in map(json.loads, log.read_text().splitlines()))


async def the_spare(leaks: LeakChecker) -> int:
    """The one server process left once the others have ended."""
    await wait_until(lambda: len(leaks.new_children()) == 1)
    (pid,) = leaks.new_children()
    return pid


# -- the warm-up ---------------------------------------------------------------------------------------------


async def test_a_spare_is_warmed_up_with_a_listing_and_a_call_of_a_tool_no_one_listed(
    warming_script: Path, request_log: Path, leaks: LeakChecker
) -> None:
    async with await load_mcp_tools(warming(warming_script, request_log), prespawn=True) as tools:
        assert await tools._shared.wait_spare()
        spare = await the_spare(leaks)
        # The server lists "cubepi-warm-up-0": the probe takes the next free name, and no tool ran.
        assert requests_of(request_log, spare) == [
            ["start", None],
            ["tools/list", None],
            ["tools/call", f"{WARM_UP_TOOL}-1"],
        ]
        whoami = next(tool for tool in tools if tool.name == "whoami")
        assert (await whoami.execute({})).text == str(spare)  # the call took the warmed-up spare
        assert requests_of(request_log, spare)[3:] == [["tools/call", "whoami"]]
    assert not ran_a_listed_tool_named_like_the_probe(request_log)


async def test_a_spare_whose_server_refuses_the_probe_is_still_used(
    warming_script: Path, request_log: Path, leaks: LeakChecker
) -> None:
    # "no such tool" as a JSON-RPC error (what a server may answer instead of an error result) is what
    # the warm-up asked for: the spare is ready.
    server = warming(warming_script, request_log, ON_PROBE="refuse")
    async with await load_mcp_tools(server, prespawn=True, include=["whoami"]) as tools:
        assert await tools._shared.wait_spare()
        spare = await the_spare(leaks)
        assert (await tools[0].execute({})).text == str(spare)


async def test_a_spare_whose_server_dies_on_the_probe_is_never_given_a_call(
    warming_script: Path, request_log: Path, leaks: LeakChecker
) -> None:
    server = warming(warming_script, request_log, ON_PROBE="die")
    async with await load_mcp_tools(server, prespawn=True, include=["whoami"]) as tools:
        assert await tools._shared.wait_spare() is False, "a spare whose connection broke is not ready"
        result = await tools[0].execute({})
        assert not result.is_error, result.text
        loaded, spare = started(request_log)[:2]
        assert requests_of(request_log, spare)[-1] == ["tools/call", f"{WARM_UP_TOOL}-1"]
        assert result.text not in (str(loaded), str(spare))  # the call ran on a fresh process


@pytest.mark.parametrize(("list_delay", "ready"), [("0", True), ("60", False)])
async def test_a_handshake_era_spare_has_the_timeout_alone_for_its_listing(
    list_delay: str, ready: bool, warming_script: Path, request_log: Path, leaks: LeakChecker
) -> None:
    # The warm-up's listing gets `timeout` (2 s) once a handshake-era server is up, not the start-up limit
    # (60 s): a spare whose server lists at once is used; one that takes a minute is given up before it
    # gets to the probe.
    server = warming(warming_script, request_log, protocol="legacy", LATER_LIST_DELAY=list_delay)
    tools = await load_mcp_tools(server, prespawn=True, include=["whoami"], timeout=2, startup_timeout=60)
    async with tools:
        with anyio.fail_after(15):
            assert await tools._shared.wait_spare() is ready
        spare = started(request_log)[1]
        if ready:
            assert (await tools[0].execute({})).text == str(spare)
        else:
            assert requests_of(request_log, spare)[-1] == ["tools/list", None]  # it never got to the probe


async def test_a_2026_spare_gets_its_start_up_limit_for_the_listing_but_the_call_only_the_timeout(
    warming_script: Path, request_log: Path, leaks: LeakChecker
) -> None:
    # A new 2026-07-28 process has not spoken before the warm-up's listing: that listing may take the
    # start-up limit on top of `timeout` (the spare's server is silent for 2 s, past the 1 s timeout).
    # Once it has answered, the call on that spare gets `timeout` alone.
    server = warming(warming_script, request_log, LATER_START_DELAY="2")
    tools = await load_mcp_tools(server, prespawn=True, include=["slow"], timeout=1, startup_timeout=30)
    async with tools:
        assert await tools._shared.wait_spare(), "the slow-starting spare was given its start-up limit"
        spare = started(request_log)[1]
        with anyio.fail_after(10), pytest.raises(MCPTimeoutError) as caught:
            await tools[0].execute({"seconds": 4})
        assert caught.value.phase == "call" and caught.value.limit == 1
        assert requests_of(request_log, spare)[-1] == ["tools/call", "slow"]  # on the spare


# -- how many spares -----------------------------------------------------------------------------------------


async def test_concurrent_calls_leave_a_single_spare_waiting(
    warming_script: Path, request_log: Path, leaks: LeakChecker
) -> None:
    async with await load_mcp_tools(warming(warming_script, request_log), prespawn=True) as tools:
        whoami = next(tool for tool in tools if tool.name == "whoami")
        assert await tools._shared.wait_spare()
        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(whoami.execute, {})
        assert await tools._shared.wait_spare()
        # Each call that ends starts a spare only if none waits: one process is left, not one per call.
        await wait_until(lambda: len(leaks.new_children()) == 1)
        assert tools._shared.spawned == 2 and len(leaks.new_children()) == 1


# -- aclose across event loops -----------------------------------------------------------------------------


@pytest.fixture
def other_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An asyncio loop running in a thread of its own until the test ends."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


async def in_loop(loop: asyncio.AbstractEventLoop, coroutine: Any) -> Any:
    return await anyio.to_thread.run_sync(asyncio.run_coroutine_threadsafe(coroutine, loop).result, 30)


async def test_aclose_stops_the_spare_of_another_running_loop(
    warming_script: Path, request_log: Path, leaks: LeakChecker, other_loop: asyncio.AbstractEventLoop
) -> None:
    tools = await load_mcp_tools(warming(warming_script, request_log), prespawn=True, include=["whoami"])
    assert await tools._shared.wait_spare()
    here = await the_spare(leaks)
    for _ in range(2):  # a loop that has called twice keeps a spare of its own
        await in_loop(other_loop, tools[0].execute({}))
    assert await in_loop(other_loop, tools._shared.wait_spare())
    await wait_until(lambda: len(leaks.new_children()) == 2)
    (there,) = leaks.new_children() - {here}
    await tools.aclose()
    assert here not in leaks.new_children()  # this loop's spare: aclose waited for it
    await wait_until(lambda: there not in leaks.new_children())  # the other loop's keeper was told to stop


# -- a pickled Shared ---------------------------------------------------------------------------------------


def test_each_list_unpickles_to_its_own_shared_in_this_process() -> None:
    first, second = Shared("server one"), Shared("server two")
    assert pickle.loads(pickle.dumps(first)) is first
    assert pickle.loads(pickle.dumps(second)) is second


async def test_a_shared_landing_where_it_is_unknown_comes_back_empty_and_keeps_only_closed() -> None:
    shared = Shared("the closed server")
    await shared.aclose()
    closed = pickle.dumps(shared)
    opened = pickle.dumps(Shared("the open server"))
    del shared
    gc.collect()

    landed = pickle.loads(closed)
    assert (landed.describe, landed.closed) == ("the closed server", True)
    with pytest.raises(UserError, match="the tool list of the closed server was closed"):
        landed.check_open()
    assert pickle.loads(closed) is landed  # made once per process

    fresh = pickle.loads(opened)
    assert (fresh.describe, fresh.closed) == ("the open server", False)
    fresh.check_open()
    assert fresh is not landed and fresh.token != landed.token


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_aclose_closes_the_list_under_either_backend(anyio_backend: str) -> None:
    shared = Shared("the server")
    keeper = await shared.keeper()
    assert (keeper is None) == (anyio_backend == "trio")  # under trio each call owns its session
    assert await shared.wait_spare() is False  # no spare was asked for
    await shared.aclose()
    assert shared.closed
    with pytest.raises(UserError, match="the tool list of the server was closed"):
        shared.check_open()
    await shared.aclose()  # a second aclose is harmless
    assert shared.closed


def test_a_list_used_under_asyncio_closes_under_trio(warming_script: Path, request_log: Path) -> None:
    tools = anyio.run(lambda: load_mcp_tools(warming(warming_script, request_log), include=["whoami"]))
    pid = tools[0].execute_sync({}).text  # each call in a loop of its own, which has a keeper
    assert pid == str(started(request_log)[-1])
    anyio.run(tools.aclose, backend="trio")
    assert tools.closed
    with pytest.raises(UserError, match="was closed"):
        tools[0].execute_sync({})
