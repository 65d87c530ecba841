"""`timeout` bounds every phase, start-up included, unless `startup_timeout` is given for start-up.

The server (tests/servers/slow_init.py) starts at once and reads ``initialize``, but answers it only after
``SLOW_INIT_SECONDS`` (never when unset). Bounds on elapsed time are generous: the machine may be loaded, and
what matters is that nobody waits for the 60 s start-up limit cubepi used to apply regardless of `timeout`.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from conftest import KITCHEN, PYTHON, SERVERS, LeakChecker, RunningServer, StartServer

from cubepi import MCPError, MCPTimeoutError
from cubepi.mcp import (
    HttpServer,
    StdioServer,
    load_mcp_tools,
    load_mcp_tools_http,
    load_mcp_tools_stdio,
    make_mcp_agent_tool,
)

SLOW_INIT = SERVERS / "slow_init.py"
WELL_UNDER_60 = 20.0
ECHO = {"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}


def hanging() -> StdioServer:
    return StdioServer(PYTHON, [str(SLOW_INIT)])


def slow(seconds: float) -> StdioServer:
    return StdioServer(PYTHON, [str(SLOW_INIT)], env={"SLOW_INIT_SECONDS": str(seconds)})


@pytest.fixture(scope="module")
def hanging_http(http_server_factory: StartServer) -> RunningServer:
    return http_server_factory([PYTHON, str(SLOW_INIT), "streamable-http"], "/mcp")


@asynccontextmanager
async def times_out(keyword: str, limit: float) -> AsyncIterator[list[MCPTimeoutError]]:
    """Expect an `MCPTimeoutError` in initialize, soon, whose message names `keyword` as the limit."""
    caught: list[MCPTimeoutError] = []
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as info:
        yield caught
    elapsed = time.monotonic() - started
    error = info.value
    caught.append(error)
    assert isinstance(error, TimeoutError) and isinstance(error, MCPError)
    assert (error.phase, error.limit) == ("initialize", limit)
    assert f"timed out after {limit:g} s ({keyword}; phase: initialize)" in str(error), str(error)
    assert elapsed < WELL_UNDER_60, f"took {elapsed:.1f} s"


# -- only `timeout` ------------------------------------------------------------------------------------------


async def test_timeout_alone_bounds_a_hanging_initialize(leaks: LeakChecker) -> None:
    async with times_out("timeout", 2.0) as caught:
        await load_mcp_tools_stdio(PYTHON, [str(SLOW_INIT)], timeout=2)
    message = str(caught[0])
    assert "initializing stdio server" in message and "slow_init.py" in message
    # The way out: which keywords raise the limit.
    assert "raise it, or give startup_timeout" in message
    await leaks.assert_clean()


async def test_timeout_alone_bounds_a_hanging_initialize_over_http(hanging_http: RunningServer) -> None:
    async with times_out("timeout", 2.0):
        await load_mcp_tools_http(hanging_http.url, timeout=2)


async def test_timeout_alone_bounds_the_start_up_of_a_call(leaks: LeakChecker) -> None:
    echo = make_mcp_agent_tool(ECHO, hanging(), timeout=2)
    async with times_out("timeout", 2.0):
        await echo.execute({"message": "hi"})
    await leaks.assert_clean()


async def test_timeout_alone_bounds_connect(leaks: LeakChecker) -> None:
    async with times_out("timeout", 2.0), hanging().connect(timeout=2):
        pass
    await leaks.assert_clean()


async def test_timeout_alone_bounds_connect_over_http(hanging_http: RunningServer) -> None:
    async with times_out("timeout", 2.0), HttpServer(hanging_http.url).connect(timeout=2):
        pass


# -- both: `startup_timeout` governs start-up, `timeout` the rest ----------------------------------------


async def test_startup_timeout_bounds_start_up_when_given(leaks: LeakChecker) -> None:
    async with times_out("startup_timeout", 2.0) as caught:
        await load_mcp_tools(hanging(), timeout=30, startup_timeout=2)
    assert "raise startup_timeout" in str(caught[0])
    await leaks.assert_clean()


async def test_startup_timeout_bounds_connect_when_given(leaks: LeakChecker) -> None:
    async with times_out("startup_timeout", 2.0), hanging().connect(timeout=30, startup_timeout=2):
        pass
    await leaks.assert_clean()


async def test_a_start_slower_than_timeout_is_fine_within_startup_timeout(leaks: LeakChecker) -> None:
    # initialize takes 4 s, longer than `timeout`; `startup_timeout` lets it, for the listing and the call.
    tools = await load_mcp_tools(slow(4), timeout=2, startup_timeout=60)
    assert [t.name for t in tools] == ["echo"]
    assert (await tools[0].execute({"message": "hi"})).text == "hi"
    await leaks.assert_clean()


async def test_a_connection_slower_to_start_than_timeout_opens_within_startup_timeout() -> None:
    async with slow(4).connect(timeout=2, startup_timeout=60) as conn:
        tools = await load_mcp_tools(conn)
        assert (await tools[0].execute({"message": "hi"})).text == "hi"


async def test_no_startup_limit_with_none_still_leaves_timeout_for_the_rest() -> None:
    tools = await load_mcp_tools(slow(4), timeout=2, startup_timeout=None)
    assert [t.name for t in tools] == ["echo"]


# -- what help() shows ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "function",
    [
        load_mcp_tools,
        load_mcp_tools_stdio,
        load_mcp_tools_http,
        make_mcp_agent_tool,
        StdioServer.connect,
        HttpServer.connect,
    ],
)
def test_startup_timeout_defaults_to_timeout_in_every_signature(function: Callable[..., object]) -> None:
    parameters = inspect.signature(function).parameters
    assert parameters["timeout"].default == 30.0
    assert repr(parameters["startup_timeout"].default) == "SAME_AS_TIMEOUT"
    assert "startup_timeout" in (inspect.getdoc(function) or "") or function in (
        load_mcp_tools_stdio,
        load_mcp_tools_http,
    )


# -- a 2026-07-28 stdio call is the new process's first request: start-up is still bounded apart --------


async def test_a_stateless_stdio_call_to_a_server_that_never_starts_is_a_startup_timeout(
    leaks: LeakChecker,
) -> None:
    pinned = StdioServer(PYTHON, [str(SLOW_INIT)], protocol="2026-07-28")
    echo = make_mcp_agent_tool(ECHO, pinned, timeout=1, startup_timeout=3)
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        await echo.execute({"message": "hi"})
    assert time.monotonic() - started < 15
    assert (caught.value.phase, caught.value.limit) == ("startup", 3.0)
    assert "raise startup_timeout" in str(caught.value)


async def test_a_start_up_limit_shorter_than_timeout_ends_a_silent_new_process_at_it() -> None:
    """A new process that never answers ends the call at `startup_timeout` (2 s), not later at `timeout`
    (20 s) or the two added up."""
    pinned = StdioServer(PYTHON, [str(SLOW_INIT)], protocol="2026-07-28")
    echo = make_mcp_agent_tool(ECHO, pinned, timeout=20, startup_timeout=2)
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        await echo.execute({"message": "hi"})
    assert time.monotonic() - started < 12, "the call outlived its start-up limit"
    assert (caught.value.phase, caught.value.limit) == ("startup", 2.0)


async def test_a_stateless_stdio_call_gets_its_timeout_once_the_server_is_up() -> None:
    # The server takes 3 s to start, longer than `timeout`: the call waits for it within startup_timeout.
    pinned = StdioServer(PYTHON, [str(SLOW_INIT)], env={"SLOW_INIT_SECONDS": "3"}, protocol="2026-07-28")
    echo = make_mcp_agent_tool(ECHO, pinned, timeout=2, startup_timeout=60)
    assert (await echo.execute({"message": "hi"})).text == "hi"


async def test_a_call_answered_in_time_leaves_no_probe_due() -> None:
    """A new process that answers within `timeout` never gets a probe, not even once the call is over: the
    probe's timer goes with the call (a timer left behind would start a task in the call's ended task
    group, which the event loop reports as an error)."""
    import asyncio

    import anyio

    reported: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        pinned = StdioServer(PYTHON, [str(KITCHEN)], protocol="2026-07-28")
        echo = make_mcp_agent_tool(ECHO, pinned, timeout=3, startup_timeout=60)
        started = loop.time()
        assert (await echo.execute({"message": "hi"})).text == "hi"
        await anyio.sleep(max(0.0, started + 3 + 1 - loop.time()))  # past the probe's due time
    finally:
        loop.set_exception_handler(None)
    assert reported == []


async def test_a_start_up_probe_the_sdk_gave_up_on_is_asked_again(tmp_path: Path) -> None:
    """The first ``server/discover`` beside a new process's call goes unanswered past the SDK's own bound on
    one probe (10 s), within `startup_timeout`: it is asked again, and once its answer shows the server is
    up, the call gets `timeout` of silence from then on. The call hangs, so that is how it ends."""
    hold = tmp_path / "hold-first-discover"
    hold.touch()  # the answer to the process's first probe never gets through
    hang = [str(SERVERS.parent / "faults" / "servers" / "stdio_faults.py"), "hang_call"]
    relay = [str(SERVERS / "late_discover.py"), "--first-only", str(hold), PYTHON, *hang]
    echo = make_mcp_agent_tool(
        ECHO, StdioServer(PYTHON, relay, protocol="2026-07-28"), timeout=3, startup_timeout=40
    )
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        await echo.execute({"message": "hi"})
    assert (caught.value.phase, caught.value.limit) == ("call", 3.0)
    assert time.monotonic() - started < 40
