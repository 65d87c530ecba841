"""`MCPConnection` one behaviour at a time, against real stdio servers: a failed open leaves it closed,
what the server offers besides tools, the follower it starts (told of changes, and of those made while
the connection was down), a stateless session ignoring list_changed notifications, a timed-out call
sent once, a failed reopen tried again by the next call, and what a failed call's error says.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from conftest import PYTHON, SERVERS, LeakChecker, Recorder, kill

from cubepi import AgentTool, MCPError, MCPTimeoutError, UserError
from cubepi.mcp import StdioServer, ToolChanges, load_mcp_tools

ANNOTATED = SERVERS / "annotated.py"
BEHAVIOUR = SERVERS / "behaviour.py"
CHANGING = SERVERS / "changing.py"
CRASHER = SERVERS / "crasher.py"
OFFERS = SERVERS / "offers.py"


def named(tools: list[AgentTool], name: str) -> AgentTool:
    return next(tool for tool in tools if tool.name == name)


def changing(tmp_path: Path, protocol: str, **env: str) -> StdioServer:
    """changing.py over stdio; the tools it added live in a file, so a new process sees them."""
    return StdioServer(
        PYTHON, [str(CHANGING)], env={"STATE": str(tmp_path / "tools.json"), **env}, protocol=protocol
    )


async def test_a_connection_that_fails_to_open_is_closed(leaks: LeakChecker) -> None:
    conn = StdioServer(PYTHON, [str(CRASHER)]).connect()
    with pytest.raises(MCPError, match="FATAL missing configuration"):
        async with conn:
            raise AssertionError("not reached")
    assert conn.closed
    with pytest.raises(UserError, match="is closed"):
        await load_mcp_tools(conn)
    await leaks.assert_clean()


async def test_a_connection_asks_its_own_session_for_what_the_server_offers() -> None:
    conn = StdioServer(PYTHON, [str(OFFERS)]).connect()
    assert conn.instructions is None  # not open yet
    async with conn:
        assert conn.instructions is not None and conn.instructions.startswith("Offers: read offers://readme")
        assert "offers://readme" in [str(resource.uri) for resource in await conn.list_resources()]
    quiet = StdioServer(PYTHON, [str(OFFERS)], env={"OFFERS_NO_INSTRUCTIONS": "1"})
    async with quiet.connect() as conn:
        assert conn.instructions is None
        assert [prompt.name for prompt in await conn.list_prompts()] == ["review"]


async def test_the_callback_is_told_of_a_change_the_server_announces(tmp_path: Path) -> None:
    changed = Recorder()
    async with changing(tmp_path, "legacy").connect(on_tools_changed=changed) as conn:
        tools = await load_mcp_tools(conn)
        assert not (await named(tools, "add_tool").execute({"name": "extra", "description": "d"})).is_error
        assert await changed.next(30) == ToolChanges(added=("extra",))
        assert tools[-1].name == "extra"


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_a_change_made_while_the_connection_was_down_is_told_once_it_reopens(
    protocol: str, tmp_path: Path, leaks: LeakChecker
) -> None:
    """Nothing announced the change to the dead session: the reopened connection refreshes its lists."""
    server = changing(tmp_path, protocol)
    changed = Recorder()
    async with server.connect(on_tools_changed=changed, auto_reconnect=True) as conn:
        tools = await load_mcp_tools(conn)
        [pid] = leaks.new_children()
        await kill(pid)
        async with await load_mcp_tools(server) as elsewhere:  # another process, the same tools file
            await named(elsewhere, "add_tool").execute({"name": "extra", "description": "d"})
        assert (await named(tools, "stable").execute({"text": "again"})).text == "again"
        assert conn.reconnects == 1
        assert await changed.next(30) == ToolChanges(added=("extra",))
        assert tools[-1].name == "extra"
    await leaks.assert_clean()


async def test_a_stateless_session_takes_no_list_changed_notification_for_a_change(tmp_path: Path) -> None:
    """On 2026-07-28 only the listen stream tells of changes; this server offers none, so a
    notifications/tools/list_changed riding on a call's answer changes nothing."""
    notified = anyio.Event()

    async def handler(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            notified.set()

    changed = Recorder()
    server = changing(tmp_path, "auto", NO_LISTEN="1")
    async with server.connect(on_tools_changed=changed, message_handler=handler) as conn:
        add = named(await load_mcp_tools(conn), "add_tool")  # the list itself is gone: no refresh to wait
        gc.collect()
        assert not (await add.execute({"name": "extra", "description": "d"})).is_error
        with anyio.fail_after(30):
            await notified.wait()
        for _ in range(200):
            await anyio.lowlevel.checkpoint()
        with pytest.raises(anyio.WouldBlock):
            changed.receive.receive_nowait()


async def test_a_timed_out_call_is_sent_once_and_the_connection_goes_on(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    server = StdioServer(PYTHON, [str(BEHAVIOUR)], env={"BEHAVIOUR_RECORD": str(record)})
    async with server.connect(auto_reconnect=True) as conn:
        hang = named(await load_mcp_tools(conn, timeout=1), "hang")
        with pytest.raises(MCPTimeoutError) as caught:
            await hang.execute({})
        assert "the connection was lost" not in str(caught.value)
        context = named(await load_mcp_tools(conn), "context")
        assert not (await context.execute({"names": []})).is_error
        assert conn.reconnects == 0
    received = [json.loads(line) for line in record.read_text().splitlines()]
    calls = [message["params"]["name"] for message in received if message.get("method") == "tools/call"]
    assert calls == ["hang", "context"]


async def test_a_reopen_that_failed_is_tried_again_by_the_next_call(
    tmp_path: Path, leaks: LeakChecker
) -> None:
    """A handshake-era server that will not start: the reopen fails, and the next call opens anew."""
    broken = tmp_path / "broken"
    script = (
        f"import os, runpy, sys; os.path.exists({str(broken)!r}) and sys.exit(5); "
        f"runpy.run_path({str(ANNOTATED)!r}, run_name='__main__')"
    )
    server = StdioServer(PYTHON, ["-c", script], protocol="legacy")
    async with server.connect(auto_reconnect=True) as conn:
        pid = named(await load_mcp_tools(conn, include=["pid"]), "pid")
        first = (await pid.execute({})).text
        broken.touch()
        await kill(int(first))
        with pytest.raises(MCPError) as caught:
            await pid.execute({})
        assert isinstance(caught.value.__cause__, MCPError), "raised from the call that failed"
        assert conn.reconnects == 0
        broken.unlink()
        again = (await pid.execute({})).text
        assert again.isdigit() and again != first and conn.reconnects == 1
    await leaks.assert_clean()


async def test_a_call_on_a_dead_connection_says_it_was_lost(leaks: LeakChecker) -> None:
    async with StdioServer(PYTHON, [str(ANNOTATED)]).connect() as conn:
        pid = named(await load_mcp_tools(conn, include=["pid"]), "pid")
        await kill(int((await pid.execute({})).text))
        with pytest.raises(MCPError) as caught:
            await pid.execute({})
    message = str(caught.value)
    assert "the connection was lost; connect(auto_reconnect=True) reopens a dead connection" in message
    await leaks.assert_clean()
