"""Stdio servers for real (tests/servers/*.py): loading, calling, errors, timeouts, cancellation, leaks.

Every stdio call starts a Python server (about a second on a busy machine), so each test makes few calls;
the content types are covered over HTTP in test_http.py, where the server stays up.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from conftest import KITCHEN, PYTHON, SERVERS, LeakChecker

from cubepi import MCPError, MCPTimeoutError, ToolUpdate
from cubepi.mcp import StdioServer, load_mcp_tools, load_mcp_tools_stdio, make_mcp_agent_tool

KITCHEN_TOOLS = {
    "echo",
    "add",
    "image",
    "audio",
    "resources",
    "weather",
    "fail",
    "progress",
    "slow",
    "crash",
    "context",
    "header",
    "pid",
}


def kitchen(**env: str) -> StdioServer:
    return StdioServer(PYTHON, [str(KITCHEN)], env=env or None)


def spec(name: str, /, **properties: object) -> dict[str, object]:
    """A tool definition as tools/list gives it, for `make_mcp_agent_tool` (skips a listing round trip)."""
    return {"name": name, "inputSchema": {"type": "object", "properties": properties}}


async def test_load_then_call(leaks: LeakChecker) -> None:
    tools = await load_mcp_tools_stdio(PYTHON, [str(KITCHEN)], timeout=30)
    assert {t.name for t in tools} == KITCHEN_TOOLS
    echo = next(t for t in tools if t.name == "echo")
    assert echo.description == "Echo the message back."
    assert echo.input_schema is not None and echo.input_schema["required"] == ["message"]
    assert echo.origin is not None and "kitchen.py" in echo.origin
    assert list(echo.parameters.model_fields) == ["message"]
    result = await echo.execute({"message": "héllo"})
    assert result.text == "héllo" and not result.is_error
    assert result.details["structuredContent"] == {"result": "héllo"}
    await tools.aclose()
    assert not leaks.new_children(), "aclose() waits for the servers of the listing and of the call"


async def test_invalid_arguments_never_reach_the_server(leaks: LeakChecker) -> None:
    add = make_mcp_agent_tool(
        {
            "name": "add",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
        StdioServer("/nonexistent/server"),  # would fail loudly if it were started
    )
    result = await add.execute({"a": "one"})
    assert result.is_error
    assert "a" in result.text and "b" in result.text


async def test_env_is_the_safe_default_plus_env_and_cwd_is_honoured(
    tmp_path: Path, leaks: LeakChecker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUBEPI_PARENT_SECRET", "do-not-leak")
    server = StdioServer(PYTHON, [str(KITCHEN)], env={"KITCHEN_GIVEN": "given"}, cwd=tmp_path)
    tool = make_mcp_agent_tool(spec("context", names={"type": "array", "items": {"type": "string"}}), server)
    result = await tool.execute({"names": ["KITCHEN_GIVEN", "CUBEPI_PARENT_SECRET", "PATH"]})
    seen = result.details["structuredContent"]
    assert seen["cwd"] == str(tmp_path)  # pytest gives a resolved tmp_path
    assert seen["env"]["KITCHEN_GIVEN"] == "given"
    assert seen["env"]["CUBEPI_PARENT_SECRET"] is None
    assert seen["env"]["PATH"] == os.environ["PATH"]


async def test_progress_reaches_on_update(leaks: LeakChecker) -> None:
    tool = make_mcp_agent_tool(spec("progress", steps={"type": "integer"}), kitchen())
    sync_updates: list[ToolUpdate] = []
    result = await tool.execute({"steps": 3}, on_update=sync_updates.append)
    assert result.text == "done after 3 steps"
    assert [(u.progress, u.total, u.message) for u in sync_updates] == [
        (1, 3, "step 1"),
        (2, 3, "step 2"),
        (3, 3, "step 3"),
    ]


async def test_server_crash_mid_call_is_an_mcp_error_with_stderr(leaks: LeakChecker) -> None:
    tool = make_mcp_agent_tool(spec("crash", message={"type": "string"}), kitchen())
    with pytest.raises(MCPError) as caught:
        await tool.execute({"message": "fatal: out of soup"})
    error = caught.value
    assert not isinstance(error, MCPTimeoutError)
    assert error.tool_name == "crash"
    assert error.server is not None and "kitchen.py" in error.server
    assert error.stderr is not None and "fatal: out of soup" in error.stderr
    assert "fatal: out of soup" in str(error)
    assert "TaskGroup" not in str(error) and "ExceptionGroup" not in repr(error)
    assert error.__cause__ is not None and "Group" not in type(error.__cause__).__name__


async def test_server_dying_at_startup_shows_its_stderr(leaks: LeakChecker) -> None:
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools_stdio(PYTHON, [str(SERVERS / "crasher.py")], timeout=30)
    assert "initializing" in str(caught.value)
    assert caught.value.stderr is not None and "FATAL missing configuration" in caught.value.stderr


async def test_missing_command() -> None:
    with pytest.raises(MCPError, match="command not found"):
        await load_mcp_tools_stdio("/nonexistent/cubepi-test-server")


async def test_pagination_is_followed_to_the_end(leaks: LeakChecker) -> None:
    tools = await load_mcp_tools(StdioServer(PYTHON, [str(SERVERS / "paged.py")]))
    assert [t.name for t in tools] == [f"tool_{i}" for i in range(7)]


async def test_a_repeated_cursor_ends_the_listing_with_an_error(leaks: LeakChecker) -> None:
    server = StdioServer(PYTHON, [str(SERVERS / "paged.py")], env={"PAGED_MODE": "loop"})
    with pytest.raises(MCPError, match="repeated the pagination cursor"):
        await load_mcp_tools(server)


async def test_initialize_timeout_names_the_phase_and_leaves_no_process(leaks: LeakChecker) -> None:
    with pytest.raises(MCPTimeoutError) as caught:
        await load_mcp_tools(kitchen(KITCHEN_START_DELAY="30"), startup_timeout=1)
    error = caught.value
    assert isinstance(error, TimeoutError)
    assert (error.phase, error.limit) == ("initialize", 1.0)
    assert "kitchen.py" in str(error) and "1 s" in str(error)
    assert not leaks.new_children()


async def test_list_timeout(leaks: LeakChecker) -> None:
    server = StdioServer(PYTHON, [str(SERVERS / "paged.py")], env={"PAGED_LIST_DELAY": "30"})
    with pytest.raises(MCPTimeoutError) as caught:
        await load_mcp_tools(server, timeout=2.5, startup_timeout=30)
    assert caught.value.phase == "list"
    assert not leaks.new_children()


async def test_call_timeout_kills_the_process(leaks: LeakChecker) -> None:
    tool = make_mcp_agent_tool(
        spec("slow", seconds={"type": "number"}), kitchen(), timeout=2.5, startup_timeout=30
    )
    with pytest.raises(MCPTimeoutError) as caught:
        await tool.execute({"seconds": 60})
    assert caught.value.phase == "call" and caught.value.tool_name == "slow"
    assert "'slow'" in str(caught.value)
    assert not leaks.new_children()


async def test_cancelling_the_caller_closes_the_process(leaks: LeakChecker) -> None:
    tool = make_mcp_agent_tool(spec("slow", seconds={"type": "number"}), kitchen())
    sleeping = anyio.Event()

    async def call() -> None:
        await tool.execute({"seconds": 60}, on_update=lambda update: sleeping.set())

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await sleeping.wait()  # the server is inside the tool now
            assert leaks.new_children()
            tg.cancel_scope.cancel()
    assert not leaks.new_children(), "cancellation must close the server process"


async def test_the_sdks_own_stdio_client_still_works_beside_cubepi(leaks: LeakChecker) -> None:
    # cubepi records the processes it spawns by wrapping the SDK's process factory; a program that also
    # uses the SDK's stdio client directly is not affected.
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    tools = await load_mcp_tools_stdio(PYTHON, [str(KITCHEN)], timeout=30)  # the factory is wrapped now
    assert (await next(t for t in tools if t.name == "echo").execute({"message": "ours"})).text == "ours"
    with anyio.fail_after(30):
        async with (
            stdio_client(StdioServerParameters(command=PYTHON, args=[str(KITCHEN)])) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
    assert "echo" in {tool.name for tool in listed.tools}
    await leaks.assert_clean()
