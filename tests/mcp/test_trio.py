"""Under trio, anyio's other backend, lists load and call over stdio and HTTP in both protocol eras. No keeper
runs there (it lives in an asyncio loop), so each call owns its session in its own task group and returns once
that session has closed: a call that times out or is cancelled leaves nothing running."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from conftest import KITCHEN, PYTHON, LeakChecker, RunningServer

from cubepi import AgentTool, MCPTimeoutError
from cubepi.mcp import HttpServer, StdioServer, load_mcp_tools

ERAS = ["auto", "legacy"]  # kitchen answers server/discover (2026-07-28); "legacy" forces the handshake


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "trio"


def by_name(tools: list[AgentTool]) -> dict[str, AgentTool]:
    return {tool.name: tool for tool in tools}


async def exercise(server: Any) -> None:
    """Load `server`'s tools and call them: a result, an error result, a call cancelled in flight, and one
    cut off by its `max_duration`."""
    import trio

    assert trio.lowlevel.current_task() is not None  # this really runs under trio
    async with await load_mcp_tools(server, timeout=30) as tools:
        named = by_name(tools)
        assert (await named["echo"].execute({"message": "hi"})).text == "hi"
        failed = await named["fail"].execute({"reason": "no"})
        assert failed.is_error and "no" in failed.text
        with anyio.CancelScope() as scope:
            await named["slow"].execute({"seconds": 60}, on_update=lambda _: scope.cancel())
        assert scope.cancelled_caught
        async with anyio.create_task_group() as group:
            for i in range(3):
                group.start_soon(named["echo"].execute, {"message": str(i)})
    bounded = by_name(await load_mcp_tools(server, timeout=30, max_duration=1))
    with pytest.raises(MCPTimeoutError) as caught:
        await bounded["slow"].execute({"seconds": 60})
    assert caught.value.phase == "call" and caught.value.limit == 1


@pytest.mark.parametrize("protocol", ERAS)
async def test_stdio_under_trio(protocol: str, leaks: LeakChecker) -> None:
    await exercise(StdioServer(PYTHON, [str(KITCHEN)], protocol=protocol))
    await leaks.assert_clean()


@pytest.mark.parametrize("protocol", ERAS)
async def test_http_under_trio(protocol: str, kitchen_http: RunningServer, leaks: LeakChecker) -> None:
    await exercise(HttpServer(kitchen_http.url, transport="streamable-http", protocol=protocol))
    await leaks.assert_clean()


async def test_a_silent_new_stdio_process_ends_at_its_start_up_limit_under_trio(leaks: LeakChecker) -> None:
    """A 2026-07-28 process that never answers is probed after its start-up limit's wait (under trio a
    sleeping task, not a loop timer) and the call ends at `startup_timeout`, not at `timeout`."""
    from conftest import SERVERS

    from cubepi.mcp import make_mcp_agent_tool

    echo = {"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}
    silent = StdioServer(PYTHON, [str(SERVERS / "slow_init.py")], protocol="2026-07-28")
    tool = make_mcp_agent_tool(echo, silent, timeout=60, startup_timeout=2)
    with anyio.fail_after(30), pytest.raises(MCPTimeoutError) as caught:
        await tool.execute({"message": "hi"})
    assert (caught.value.phase, caught.value.limit) == ("startup", 2.0)
    await leaks.assert_clean()
