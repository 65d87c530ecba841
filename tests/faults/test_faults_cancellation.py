"""A caller cancels `execute` (or a load) in an anyio cancel scope at every phase.

The server records each message it gets, so the cancel comes exactly when the phase is under way. After the
scope: the caller got the backend's cancellation (not an MCPError, not a hang), promptly, and the server
process and its pipes are already gone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import HttpFaults

from cubepi import AgentTool
from cubepi.mcp import HttpServer, load_mcp_tools, load_mcp_tools_http, make_mcp_agent_tool
from cubepi.mcp._calls.ownership import IDLE_GRACE

from .conftest import Leaks, stdio_server

ECHO = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
}

SLEEP = {"name": "sleep", "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}}


def received(record: Path) -> list[dict[str, Any]]:
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line.strip()]


async def cancel_when(
    action: Callable[[], Awaitable[object]], ready: Callable[[], bool], *, settle: float = 0.1
) -> tuple[bool, float]:
    """Run `action`, cancel it once `ready()` (the phase is under way): (saw Cancelled, seconds it took)."""
    saw_cancelled = False
    cancelled_at = 0.0
    with anyio.CancelScope() as scope:

        async def watch() -> None:
            nonlocal cancelled_at
            deadline = time.monotonic() + 20
            while not ready():
                assert time.monotonic() < deadline, "the phase never started"
                await anyio.sleep(0.02)
            await anyio.sleep(settle)
            cancelled_at = time.monotonic()
            scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            try:
                await action()
            except anyio.get_cancelled_exc_class():
                saw_cancelled = True
                raise
            raise AssertionError("the action finished although it should hang")
    assert scope.cancelled_caught
    return saw_cancelled, time.monotonic() - cancelled_at


def saw(record: Path, method: str) -> Callable[[], bool]:
    return lambda: any(message.get("method") == method for message in received(record))


async def assert_cancelled_cleanly(
    action: Callable[[], Awaitable[object]],
    ready: Callable[[], bool],
    leaks: Leaks,
    *,
    within: float,
    idle: float = 0.0,
) -> None:
    """`action` cancelled once `ready`: quickly, and leaving nothing behind (`idle`: the time a shared HTTP
    client keeps an idle connection for the next call, `IDLE_GRACE`)."""
    cancelled, took = await cancel_when(action, ready)
    assert cancelled, "the caller did not get the cancellation"
    assert took < within, f"cancellation took {took:.2f} s"
    await leaks.check(wait=0.5 + idle)  # the process is gone by the time the caller gets control back


@pytest.mark.parametrize(
    ("mode", "method"),
    [
        ("hang_init", "initialize"),
        ("hang_list", "tools/list"),
    ],
)
async def test_cancel_while_loading(tmp_path: Path, mode: str, method: str) -> None:
    record = tmp_path / "received.jsonl"
    leaks = Leaks()
    server = stdio_server(mode, "--record", str(record))
    await assert_cancelled_cleanly(
        lambda: load_mcp_tools(server, timeout=5, startup_timeout=5), saw(record, method), leaks, within=1.5
    )


async def test_cancel_execute_while_the_process_starts(tmp_path: Path) -> None:
    leaks = Leaks()
    tool = make_mcp_agent_tool(ECHO, stdio_server("slow_start", "--size", "30"), timeout=5, startup_timeout=5)
    started = time.monotonic()
    await assert_cancelled_cleanly(
        lambda: tool.execute({"message": "hi"}), lambda: time.monotonic() - started > 0.3, leaks, within=3.5
    )


@pytest.mark.parametrize(
    ("mode", "method"),
    [
        ("hang_init", "initialize"),
        ("hang_call", "tools/call"),
    ],
)
async def test_cancel_execute_in_a_phase(tmp_path: Path, mode: str, method: str) -> None:
    record = tmp_path / "received.jsonl"
    leaks = Leaks()
    tool = make_mcp_agent_tool(
        ECHO, stdio_server(mode, "--record", str(record)), timeout=5, startup_timeout=5
    )
    await assert_cancelled_cleanly(
        lambda: tool.execute({"message": "hi"}), saw(record, method), leaks, within=1.5
    )
    # The caller keeps working.
    ok = make_mcp_agent_tool(ECHO, stdio_server("ok"), timeout=10)
    assert (await ok.execute({"message": "after"})).text == "after"


async def test_cancel_a_listed_tool_while_its_server_starts(tmp_path: Path) -> None:
    """A loaded list's call (its session owned by a task of the list) stops its start-up when cancelled."""
    record, stuck = tmp_path / "received.jsonl", tmp_path / "stuck"
    leaks = Leaks()
    server = stdio_server("ok", "--record", str(record), "--hang-init-if", str(stuck), protocol="legacy")
    async with await load_mcp_tools(server, timeout=5, startup_timeout=5) as tools:
        echo = next(item for item in tools if item.name == "echo")
        stuck.touch()

        def initializing_again() -> bool:
            return sum(message.get("method") == "initialize" for message in received(record)) == 2

        await assert_cancelled_cleanly(
            lambda: echo.execute({"message": "hi"}), initializing_again, leaks, within=1.5
        )


async def test_cancel_execute_of_a_server_that_ignores_stdin(tmp_path: Path) -> None:
    """`deaf_call` stops reading: the SDK's 2 s grace, then SIGTERM of its process group. Still bounded."""
    record = tmp_path / "received.jsonl"
    leaks = Leaks()
    tool = make_mcp_agent_tool(
        ECHO, stdio_server("deaf_call", "--record", str(record)), timeout=5, startup_timeout=5
    )
    await assert_cancelled_cleanly(
        lambda: tool.execute({"message": "hi"}), saw(record, "tools/call"), leaks, within=3.5
    )


async def test_cancel_while_loading_over_http(http_faults: HttpFaults) -> None:
    leaks = Leaks()
    http_faults.clear()

    def initializing() -> bool:
        return any('"initialize"' in record["body"] for record in http_faults.records())

    await assert_cancelled_cleanly(
        lambda: load_mcp_tools_http(http_faults.url("/slow-init"), timeout=5, startup_timeout=5),
        initializing,
        leaks,
        within=1.5,
    )


async def test_cancel_execute_over_http(http_faults: HttpFaults) -> None:
    tools = await load_mcp_tools_http(http_faults.url("/mcp"), timeout=5, startup_timeout=5)
    sleep = next(item for item in tools if item.name == "sleep")
    leaks = Leaks()
    http_faults.clear()

    def calling() -> bool:
        return any("tools/call" in record["body"] for record in http_faults.records())

    await assert_cancelled_cleanly(lambda: sleep.execute({"seconds": 30}), calling, leaks, within=1.5)
    echo = next(item for item in tools if item.name == "echo")
    assert (await echo.execute({"message": "after"})).text == "after"


async def test_cancel_execute_still_ends_the_http_session(http_faults: HttpFaults) -> None:
    """A handshake-era session over HTTP is ended (its DELETE) before a cancelled caller gets control back."""
    leaks = Leaks()
    http_faults.clear()
    server = HttpServer(http_faults.url("/stateful"), transport="streamable-http", protocol="legacy")
    tool = make_mcp_agent_tool(SLEEP, server, timeout=5)

    def calling() -> bool:
        return any("tools/call" in record["body"] for record in http_faults.records())

    await assert_cancelled_cleanly(
        lambda: tool.execute({"seconds": 30}), calling, leaks, within=1.5, idle=IDLE_GRACE
    )
    deletes = [record for record in http_faults.records() if record["method"] == "DELETE"]
    assert [{k.lower(): v for k, v in r["headers"].items()}.get("mcp-session-id") for r in deletes] == [
        "stateful-session"
    ]


async def test_timeout_tells_the_server(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    server = stdio_server("hang_call", "--record", str(record))
    tool: AgentTool = make_mcp_agent_tool(ECHO, server, timeout=1, startup_timeout=30)
    with pytest.raises(TimeoutError):
        await tool.execute({"message": "hi"})
    assert_told(record)


async def test_cancel_tells_the_server(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    tool = make_mcp_agent_tool(ECHO, stdio_server("hang_call", "--record", str(record)), timeout=5)
    cancelled, _ = await cancel_when(lambda: tool.execute({"message": "hi"}), saw(record, "tools/call"))
    assert cancelled
    assert_told(record)


def assert_told(record: Path) -> None:
    """The server got `notifications/cancelled` for the in-flight `tools/call` before the session closed."""
    calls = [message for message in received(record) if message.get("method") == "tools/call"]
    notes = [message for message in received(record) if message.get("method") == "notifications/cancelled"]
    assert calls and notes
    assert notes[0]["params"]["requestId"] == calls[0]["id"]
