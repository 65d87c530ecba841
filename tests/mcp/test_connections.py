"""Persistent connections against real servers: lifetime, 50 concurrent calls, servers killed mid-session
(auto_reconnect on and off, at-least-once delivery), per-list policies, and the SDK client callbacks.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import (
    KITCHEN,
    PYTHON,
    SERVERS,
    LeakChecker,
    RunningServer,
    StartServer,
    _wait_for_port,
    free_port,
    kill,
)

from cubepi import AgentTool, MCPError, MCPTimeoutError, UserError
from cubepi.mcp import HttpServer, StdioServer, load_mcp_tools
from cubepi.mcp._connection import MCPConnection

ANNOTATED = SERVERS / "annotated.py"


def stdio() -> StdioServer:
    return StdioServer(PYTHON, [str(ANNOTATED)])


def by_name(tools: list[AgentTool]) -> dict[str, AgentTool]:
    return {t.name: t for t in tools}


@pytest.fixture(scope="module")
def annotated_http(http_server_factory: StartServer) -> RunningServer:
    return http_server_factory([PYTHON, str(ANNOTATED), "streamable-http"], "/mcp")


async def test_stdio_connection_lifetime(leaks: LeakChecker) -> None:
    server = stdio()
    conn = server.connect()
    assert isinstance(conn, MCPConnection) and not conn.closed
    async with conn:
        tools = by_name(await load_mcp_tools(conn, prefix="a", include=["pid", "peek"]))
        assert set(tools) == {"a__pid", "a__peek"}
        assert tools["a__pid"].origin == server.describe()
        first = (await tools["a__pid"].execute({})).text
        assert (await tools["a__pid"].execute({})).text == first, "one process for the whole block"
        assert len(leaks.new_children()) == 1
        # Closing the list does not close the connection the tools ride on.
        listed = await load_mcp_tools(conn, include=["peek"])
        await listed.aclose()
        assert (await listed[0].execute({"name": "x"})).text == "peeked at x"
    assert conn.closed
    with pytest.raises(UserError, match="closed: its tools work only inside its `async with` block"):
        await tools["a__peek"].execute({"name": "x"})
    with pytest.raises(UserError, match="closed"):
        await load_mcp_tools(conn)
    with pytest.raises(UserError, match="opened once"):
        async with conn:
            pass


async def test_unopened_connection_is_a_user_error() -> None:
    conn = stdio().connect()
    with pytest.raises(UserError, match="not open"):
        await load_mcp_tools(conn)
    with pytest.raises(UserError, match="prespawn"):
        await load_mcp_tools(conn, prespawn=True)


async def test_a_connections_callbacks_and_sizes_are_refused_by_the_loader(leaks: LeakChecker) -> None:
    """What belongs to the connection (callbacks, log level, response size) is an error when given to
    `load_mcp_tools` with a live connection, never silently dropped."""

    async def callback(*args: Any) -> None:
        return None

    async with stdio().connect() as conn:
        for option in (
            {"log_level": "info"},
            {"elicitation_callback": callback},
            {"sampling_callback": callback},
            {"list_roots_callback": callback},
        ):
            with pytest.raises(UserError, match=r"go to server\.connect\(elicitation_callback=\.\.\."):
                await load_mcp_tools(conn, **option)  # type: ignore[arg-type]
        with pytest.raises(UserError, match="a connection's max_response_bytes goes to its server config"):
            await load_mcp_tools(conn, max_response_bytes=1_000_000)
        assert [tool.name for tool in await load_mcp_tools(conn, include=["pid"])] == ["pid"]
    await leaks.assert_clean()


async def test_fifty_concurrent_calls_over_one_stdio_connection(leaks: LeakChecker) -> None:
    async with stdio().connect() as conn:
        tools = by_name(await load_mcp_tools(conn, include=["hold", "peak", "pid"]))
        pids: list[str] = []

        async def one() -> None:
            result = await tools["hold"].execute({"seconds": 0.5})
            assert result.text == "held"
            pids.append((await tools["pid"].execute({})).text)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for _ in range(50):
                    group.start_soon(one)
        assert len(pids) == 50 and len(set(pids)) == 1
        assert (await tools["peak"].execute({})).text == "50", "all 50 were in flight at once"
        assert len(leaks.new_children()) == 1


async def test_fifty_concurrent_calls_over_one_http_connection(
    annotated_http: RunningServer, leaks: LeakChecker
) -> None:
    async with HttpServer(annotated_http.url).connect() as conn:
        tools = by_name(await load_mcp_tools(conn, include=["hold", "peak"]))
        await tools["peak"].execute({})
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for _ in range(50):
                    group.start_soon(tools["hold"].execute, {"seconds": 3})
        assert (await tools["peak"].execute({})).text == "50"
        # An explicit max_concurrency limits a connection's calls too.
        limited = by_name(await load_mcp_tools(conn, include=["hold", "peak"], max_concurrency=3))
        async with anyio.create_task_group() as group:
            for _ in range(9):
                group.start_soon(limited["hold"].execute, {"seconds": 0.2})
        assert (await limited["peak"].execute({})).text == "3"


async def test_killed_server_without_auto_reconnect(tmp_path: Path, leaks: LeakChecker) -> None:
    async with stdio().connect() as conn:
        tools = by_name(await load_mcp_tools(conn, include=["pid", "flaky_write"]))
        await kill(int((await tools["pid"].execute({})).text))
        with pytest.raises(MCPError) as caught:
            await tools["pid"].execute({})
        message = str(caught.value)
        assert "calling tool 'pid'" in message and "auto_reconnect=True" in message
        assert caught.value.tool_name == "pid"
        with pytest.raises(MCPError):
            await tools["pid"].execute({})
        assert conn.reconnects == 0
    assert not leaks.new_children()


async def test_killed_server_with_auto_reconnect(leaks: LeakChecker) -> None:
    async with stdio().connect(auto_reconnect=True) as conn:
        tools = by_name(await load_mcp_tools(conn, include=["pid"]))
        before = (await tools["pid"].execute({})).text
        await kill(int(before))
        after = (await tools["pid"].execute({})).text
        assert after != before and conn.reconnects == 1
        assert (await tools["pid"].execute({})).text == after, "the new connection is kept"
        assert len(leaks.new_children()) == 1
    assert not leaks.new_children()


async def test_a_reopened_2026_stdio_connection_waits_for_a_slow_start_within_startup_timeout(
    tmp_path: Path, leaks: LeakChecker
) -> None:
    # Reopened, the connection knows the server speaks 2026-07-28 and sends nothing at open: the retried
    # call is the new process's first request, and waits for its 3 s start within startup_timeout (not
    # the 2 s `timeout`).
    slow = tmp_path / "slow-from-now-on"
    env = {"SLOW_INIT_SECONDS": "3", "SLOW_INIT_IF": str(slow)}
    pinned = StdioServer(PYTHON, [str(SERVERS / "slow_init.py")], env=env, protocol="2026-07-28")
    async with pinned.connect(timeout=2, startup_timeout=60, auto_reconnect=True) as conn:
        [echo] = await load_mcp_tools(conn, timeout=2, startup_timeout=60)
        assert (await echo.execute({"message": "first"})).text == "first"
        [pid] = leaks.new_children()
        slow.touch()
        await kill(pid)
        assert (await echo.execute({"message": "again"})).text == "again"
        assert conn.reconnects == 1
    assert not leaks.new_children()


async def test_the_block_ending_during_a_reopen_stops_its_start_up(
    tmp_path: Path, leaks: LeakChecker
) -> None:
    """A call reopens the connection, and its new server is stuck starting, when the block ends: the
    start-up is interrupted (the block's end does not wait for `startup_timeout`), the call fails as closed,
    and no process is left."""
    stuck = tmp_path / "stuck"
    faults = SERVERS.parent / "faults" / "servers" / "stdio_faults.py"
    server = StdioServer(PYTHON, [str(faults), "ok", "--hang-init-if", str(stuck)], protocol="legacy")
    failures: list[BaseException] = []

    async def call(echo: AgentTool) -> None:
        with pytest.raises(UserError) as caught:
            await echo.execute({"message": "again"})
        failures.append(caught.value)

    async with anyio.create_task_group() as group:
        async with server.connect(timeout=60, startup_timeout=60, auto_reconnect=True) as conn:
            echo = by_name(await load_mcp_tools(conn))["echo"]
            assert (await echo.execute({"message": "first"})).text == "first"
            [first] = leaks.new_children()
            stuck.touch()
            await kill(first)
            group.start_soon(call, echo)
            deadline = time.monotonic() + 30
            while not leaks.new_children() - {first}:
                assert time.monotonic() < deadline, "the reopen started no server"
                await anyio.sleep(0.01)
            ending = time.monotonic()
        assert time.monotonic() - ending < 30, "the block's end waited for the stuck start-up"
    [error] = failures
    assert "closed" in str(error)
    await leaks.assert_clean()


async def test_concurrent_failures_reconnect_once(leaks: LeakChecker) -> None:
    async with stdio().connect(auto_reconnect=True) as conn:
        tools = by_name(await load_mcp_tools(conn, include=["pid", "hold"]))
        await kill(int((await tools["pid"].execute({})).text))
        results: list[str] = []

        async def one() -> None:
            results.append((await tools["pid"].execute({})).text)

        async with anyio.create_task_group() as group:
            for _ in range(10):
                group.start_soon(one)
        assert len(set(results)) == 1 and conn.reconnects == 1


async def test_auto_reconnect_is_at_least_once(tmp_path: Path, leaks: LeakChecker) -> None:
    counter = tmp_path / "count"
    async with stdio().connect(auto_reconnect=True) as conn:
        tools = by_name(await load_mcp_tools(conn, include=["flaky_write"]))
        # The server counts the call, then dies before answering: the retry on the new connection runs it
        # again. That is what at-least-once means; mutating tools should not use auto_reconnect.
        result = await tools["flaky_write"].execute({"path": str(counter), "failures": 1})
        assert result.text == "call 2" and counter.read_text() == "2"
    async with stdio().connect() as conn:
        tools = by_name(await load_mcp_tools(conn, include=["flaky_write"]))
        counter.unlink()
        with pytest.raises(MCPError):
            await tools["flaky_write"].execute({"path": str(counter), "failures": 1})
        assert counter.read_text() == "1", "without auto_reconnect the call ran once"


async def test_reconnect_that_fails_raises(tmp_path: Path, leaks: LeakChecker) -> None:
    flag = tmp_path / "broken"
    # The server refuses to start once the flag file exists.
    script = (
        f"import os, runpy, sys; os.path.exists({str(flag)!r}) and sys.exit(5); "
        f"runpy.run_path({str(ANNOTATED)!r}, run_name='__main__')"
    )
    async with StdioServer(PYTHON, ["-c", script]).connect(auto_reconnect=True) as conn:
        tools = by_name(await load_mcp_tools(conn, include=["pid"]))
        flag.write_text("")
        await kill(int((await tools["pid"].execute({})).text))
        with pytest.raises(MCPError) as caught:
            await tools["pid"].execute({})
        assert isinstance(caught.value.__cause__, MCPError) or caught.value.__cause__ is not None
        flag.unlink()
        assert (await tools["pid"].execute({})).text.isdigit(), "the next call tries again"
    assert not leaks.new_children()


@contextlib.contextmanager
def http_on(port: int) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [PYTHON, str(ANNOTATED), "streamable-http"],
        env={**os.environ, "PORT": str(port)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process)
        yield process
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("auto", [False, True])
async def test_http_server_restarted_mid_session(auto: bool) -> None:
    """Handshake era: the session dies with the server; only auto_reconnect opens a new one."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with contextlib.ExitStack() as servers:
        first = servers.enter_context(http_on(port))
        async with HttpServer(url, protocol="legacy").connect(auto_reconnect=auto) as conn:
            tools = by_name(await load_mcp_tools(conn, include=["pid"]))
            before = (await tools["pid"].execute({})).text
            first.kill()
            first.wait()
            servers.enter_context(http_on(port))  # a new process: it does not know the old session
            if auto:
                after = (await tools["pid"].execute({})).text
                assert after != before and conn.reconnects == 1
            else:
                with pytest.raises(MCPError, match="calling tool 'pid'"):
                    await tools["pid"].execute({})


async def test_http_server_restarted_under_a_stateless_connection() -> None:
    """2026-07-28: there is no session to lose; the next call reaches the new process, nothing reopens."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with contextlib.ExitStack() as servers:
        first = servers.enter_context(http_on(port))
        async with HttpServer(url).connect() as conn:
            tools = by_name(await load_mcp_tools(conn, include=["pid"]))
            before = (await tools["pid"].execute({})).text
            first.kill()
            first.wait()
            servers.enter_context(http_on(port))
            after = (await tools["pid"].execute({})).text
            assert after != before and conn.reconnects == 0


async def test_per_list_timeout_on_a_connection(annotated_http: RunningServer) -> None:
    async with HttpServer(annotated_http.url).connect() as conn:
        quick = by_name(await load_mcp_tools(conn, include=["hold"], timeout=0.3))
        patient = by_name(await load_mcp_tools(conn, include=["hold"]))
        with pytest.raises(MCPTimeoutError) as caught:
            await quick["hold"].execute({"seconds": 2})
        assert caught.value.phase == "call" and caught.value.tool_name == "hold"
        assert (await patient["hold"].execute({"seconds": 0.1})).text == "held", "the connection survived"


async def test_policies_apply_to_connection_tools(annotated_http: RunningServer) -> None:
    async with HttpServer(annotated_http.url).connect() as conn:
        tools = by_name(
            await load_mcp_tools(conn, prefix="x", max_output_chars=5, needs_approval="destructive")
        )
        big = await tools["x__big"].execute({"size": 50})
        assert big.text.startswith("aaaaa\n[truncated: 45 of 50")
        delete = tools["x__delete"]
        assert delete.requires_approval(delete.validate({"name": "a"}))


async def test_connect_failure_is_an_mcp_error(leaks: LeakChecker) -> None:
    with pytest.raises(MCPError) as caught:
        async with StdioServer(PYTHON, [str(SERVERS / "crasher.py")]).connect():
            raise AssertionError("not reached")
    assert "FATAL missing configuration" in str(caught.value)
    assert not leaks.new_children()


async def test_cancelled_block_closes_the_connection(leaks: LeakChecker) -> None:
    with anyio.move_on_after(1.5) as scope:
        async with stdio().connect() as conn:
            tools = by_name(await load_mcp_tools(conn, include=["hold"]))
            await tools["hold"].execute({"seconds": 30})
    assert scope.cancelled_caught and conn.closed
    await leaks.assert_clean(wait=8)


async def test_execute_sync_from_inside_the_loop_is_refused() -> None:
    async with stdio().connect() as conn:
        tools = by_name(await load_mcp_tools(conn, include=["peek"]))
        with pytest.raises(UserError, match="event loop that opened it"):
            tools["peek"].execute_sync({"name": "x"})


async def test_a_connections_tools_refuse_another_threads_event_loop() -> None:
    async with stdio().connect() as conn:
        tools = by_name(await load_mcp_tools(conn, include=["peek"]))
        with pytest.raises(UserError, match="belongs to the event loop that opened it"):
            await anyio.to_thread.run_sync(tools["peek"].execute_sync, {"name": "x"})
        assert (await tools["peek"].execute({"name": "x"})).text, "the connection still serves its own loop"


async def test_include_naming_a_tool_the_connection_does_not_offer_is_refused() -> None:
    async with stdio().connect() as conn:
        with pytest.raises(UserError, match=r"include names tool\(s\) 'no_such_tool'"):
            await load_mcp_tools(conn, include=["pid", "no_such_tool"])
        assert [tool.name for tool in await load_mcp_tools(conn, include=["pid"])] == ["pid"]


async def test_client_callbacks(tmp_path: Path) -> None:
    from mcp import types

    logged: list[tuple[str, Any]] = []
    messages: list[Any] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append((params.level, params.data))

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        question = params.messages[0].content
        assert isinstance(question, types.TextContent)
        return types.CreateMessageResult(
            role="assistant",
            model="fake",
            content=types.TextContent(type="text", text=f"42 ({question.text})"),
        )

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"confirm": True})

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=tmp_path.as_uri())])  # type: ignore[arg-type]

    async def handler(message: Any) -> None:
        messages.append(message)

    connection = stdio().connect(
        logging_callback=on_log,
        sampling_callback=sample,
        elicitation_callback=elicit,
        list_roots_callback=roots,
        message_handler=handler,
    )
    async with connection as conn:
        tools = by_name(await load_mcp_tools(conn, include=["chatty", "ask", "confirm", "roots"]))
        assert (await tools["chatty"].execute({})).text == "chatted"
        assert ("info", "starting the chat") in logged and ("warning", "almost done") in logged
        assert (await tools["ask"].execute({"question": "meaning?"})).text == "42 (meaning?)"
        assert (await tools["confirm"].execute({"action": "drop"})).text == "drop: confirmed=True"
        listed = await tools["roots"].execute({})
        assert tmp_path.as_uri() in listed.text
    assert messages, "the message handler saw the server's notifications"


async def test_kitchen_tools_over_a_connection(leaks: LeakChecker) -> None:
    async with StdioServer(PYTHON, [str(KITCHEN)]).connect() as conn:
        tools = by_name(await load_mcp_tools(conn))
        updates: list[Any] = []
        result = await tools["progress"].execute({"steps": 3}, on_update=updates.append)
        assert result.text == "done after 3 steps" and len(updates) == 3
        failed = await tools["fail"].execute({"reason": "nope"})
        assert failed.is_error and "nope" in failed.text
        assert (await tools["echo"].execute({"message": "still here"})).text == "still here"


async def test_an_error_in_the_block_propagates_unchanged(leaks: LeakChecker) -> None:
    with pytest.raises(KeyError):
        async with stdio().connect() as conn:
            await load_mcp_tools(conn, include=["pid"])
            raise KeyError("mine")
    await leaks.assert_clean(wait=8)
