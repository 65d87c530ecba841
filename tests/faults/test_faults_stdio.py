"""Misbehaving stdio servers (servers/stdio_faults.py): what the user sees, and nothing left over.

Each test asserts the error a user gets (type and message), that the caller keeps working afterwards, and
that no child process, file descriptor or socket is left behind.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
from pathlib import Path

import anyio
import psutil
import pytest
from mcp.client.stdio import PROCESS_TERMINATION_TIMEOUT

from cubepi import MCPError, MCPTimeoutError
from cubepi.mcp import load_mcp_tools, load_mcp_tools_stdio

from .conftest import PYTHON, STDIO_FAULTS, Leaks, assert_timeout_message, stdio_server


async def still_works() -> None:
    """A well-behaved server still loads and answers: one failure leaves nothing broken in the caller."""
    tools = await load_mcp_tools(stdio_server("ok"), timeout=10)
    echo = next(item for item in tools if item.name == "echo")
    result = await echo.execute({"message": "still here"})
    assert result.text == "still here" and not result.is_error


async def test_command_not_found() -> None:
    leaks = Leaks()
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools_stdio("cubepi-no-such-command-7f3a", ["--flag"], timeout=5)
    message = str(caught.value)
    assert "command not found" in message
    assert "cubepi-no-such-command-7f3a" in message
    assert not isinstance(caught.value, MCPTimeoutError)
    await still_works()
    await leaks.check()


async def test_server_exits_at_once_with_exit_code_and_stderr_tail() -> None:
    leaks = Leaks()
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools(stdio_server("exit"), timeout=10)
    message = str(caught.value)
    assert "FATAL cannot open config" in message  # the stderr tail
    assert caught.value.stderr is not None and "FATAL cannot open config" in caught.value.stderr
    assert "exited with code 3" in message
    await still_works()
    await leaks.check()


async def test_server_crashes_mid_call() -> None:
    leaks = Leaks()
    tools = await load_mcp_tools(stdio_server("crash_call"), timeout=10)
    echo = next(item for item in tools if item.name == "echo")
    with pytest.raises(MCPError) as caught:
        await echo.execute({"message": "hi"})
    error = caught.value
    assert not isinstance(error, MCPTimeoutError)
    assert error.tool_name == "echo"
    assert "calling tool 'echo'" in str(error)
    assert "stdio_faults.py crash_call" in (error.server or "")
    assert "segfault-ish failure while calling" in str(error)
    await still_works()
    await leaks.check()


async def test_server_crashes_while_listing_names_the_listing() -> None:
    leaks = Leaks()
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools(stdio_server("crash_list"), timeout=10)
    error = caught.value
    assert not isinstance(error, MCPTimeoutError)
    assert "listing the tools of" in str(error)
    assert "failure while listing" in (error.stderr or "")
    await still_works()
    await leaks.check()


@pytest.mark.parametrize(
    ("mode", "phase", "where"),
    [("hang_init", "initialize", "initializing"), ("hang_list", "list", "listing the tools of")],
)
async def test_server_hangs_while_loading_times_out_naming_the_phase(
    mode: str, phase: str, where: str
) -> None:
    leaks = Leaks()
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        await load_mcp_tools(stdio_server(mode), timeout=1.0, startup_timeout=1.0)
    elapsed = time.monotonic() - started
    error = caught.value
    assert isinstance(error, TimeoutError) and isinstance(error, MCPError)
    assert error.phase == phase and error.limit == 1.0
    assert f"{where} stdio server" in str(error)
    assert_timeout_message(error, phase, 1)
    assert elapsed < 5, f"took {elapsed:.1f} s"
    await still_works()
    await leaks.check()


@pytest.mark.parametrize(
    ("mode", "protocol"), [("hang_call", "auto"), ("hang_call", "legacy"), ("deaf_call", "legacy")]
)
async def test_server_hangs_in_call_times_out_naming_the_phase(mode: str, protocol: str) -> None:
    """`deaf_call` also stops reading stdin, so only SIGTERM ends it: the process is still gone. On a
    2026-07-28 server (``"auto"``) the call is the new process's first request: after `timeout` of silence
    ``server/discover`` is asked, and its answer shows the server is up."""
    leaks = Leaks()
    tools = await load_mcp_tools(stdio_server(mode, protocol=protocol), timeout=1.0, startup_timeout=30)
    echo = next(item for item in tools if item.name == "echo")
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        await echo.execute({"message": "hi"})
    elapsed = time.monotonic() - started
    error = caught.value
    assert error.phase == "call" and error.tool_name == "echo"
    assert "calling tool 'echo' on stdio server" in str(error)
    assert_timeout_message(error, "call", 1)
    assert elapsed < 6, f"took {elapsed:.1f} s"
    await still_works()
    await leaks.check()


async def test_a_new_process_deaf_from_its_first_request_is_a_startup_timeout() -> None:
    """A 2026-07-28 process that reads the call, then nothing more, never shows it is up (the probe goes
    unanswered): the call ends at `startup_timeout`, which it names, not at the deaf server's shutdown."""
    leaks = Leaks()
    tools = await load_mcp_tools(stdio_server("deaf_call"), timeout=1.0, startup_timeout=3)
    echo = next(item for item in tools if item.name == "echo")
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        await echo.execute({"message": "hi"})
    elapsed = time.monotonic() - started
    assert (caught.value.phase, caught.value.limit) == ("startup", 3.0)
    assert_timeout_message(caught.value, "startup", 3)
    assert "raise startup_timeout" in str(caught.value)
    assert 3 <= elapsed < 6, f"took {elapsed:.1f} s"
    await tools.aclose()
    await leaks.check()


async def test_non_json_lines_on_stdout_are_skipped() -> None:
    leaks = Leaks()
    tools = await load_mcp_tools(stdio_server("noise"), timeout=10)
    assert {item.name for item in tools} == {"echo", "strict", "env", "sleep"}
    echo = next(item for item in tools if item.name == "echo")
    for _ in range(3):
        result = await echo.execute({"message": "through the noise"})
        assert result.text == "through the noise" and not result.is_error
    await still_works()
    await leaks.check()


async def test_megabytes_on_stderr_do_not_block_or_flood_the_error() -> None:
    leaks = Leaks()
    tools = await load_mcp_tools(stdio_server("ok", "--flood", "4"), timeout=20)
    echo = next(item for item in tools if item.name == "echo")
    result = await echo.execute({"message": "after 4 MB of stderr"})
    assert result.text == "after 4 MB of stderr"
    # A server that floods stderr and then dies: the error carries a bounded tail, ending with its last words.
    tools = await load_mcp_tools(stdio_server("crash_call", "--flood", "4"), timeout=20)
    with pytest.raises(MCPError) as caught:
        await tools[0].execute({"message": "hi"})
    stderr = caught.value.stderr or ""
    assert "segfault-ish failure while calling" in stderr
    assert len(stderr) <= 16 * 1024
    assert len(str(caught.value)) < 20 * 1024
    await still_works()
    await leaks.check()


async def test_a_stderr_line_past_64_kib_reaches_on_stderr_in_64_kib_pieces_in_the_event_loop() -> None:
    """`on_stderr` gets each line, in the event loop's thread; a line longer than 64 KiB (a server dumping
    a blob) comes in pieces of 64 KiB (the last one: the rest), in order, nothing lost. The line is over
    twice the size of one read of the pipe, so at least one piece is cut whatever the reads' sizes."""
    leaks = Leaks()
    size, piece = 200_000, 64 * 1024
    lines: list[str] = []
    threads: set[int] = set()
    whole = anyio.Event()

    def on_stderr(line: str) -> None:
        lines.append(line)
        threads.add(threading.get_ident())
        if sum(map(len, lines)) >= size:
            whole.set()

    server = stdio_server("ok", "--stderr-line", str(size), on_stderr=on_stderr)
    async with await load_mcp_tools(server, timeout=20) as tools:
        assert "echo" in [item.name for item in tools]
    with anyio.fail_after(20):
        await whole.wait()
    assert "".join(lines) == ("0123456789" * (size // 10))[:size]
    assert len(lines) >= 2 and all(len(line) == piece for line in lines[:-1]), [len(line) for line in lines]
    assert threads == {threading.get_ident()}
    await leaks.check()


@pytest.mark.timeout(60)
async def test_a_50_mb_result_completes() -> None:
    leaks = Leaks()
    tools = await load_mcp_tools(stdio_server("big", "--size", "50"), timeout=30)
    echo = next(item for item in tools if item.name == "echo")
    started = time.monotonic()
    result = await echo.execute({"message": "x"})
    assert time.monotonic() - started < 20
    assert len(result.text) == 50 * 1024 * 1024
    await leaks.check()


async def test_a_5_mb_result_arrives_whole() -> None:
    leaks = Leaks()
    tools = await load_mcp_tools(stdio_server("big", "--size", "5"), timeout=30)
    result = await tools[0].execute({"message": "x"})
    assert len(result.text) == 5 * 1024 * 1024 and not result.is_error
    await leaks.check()


async def test_max_output_chars_cuts_a_big_result_for_the_model() -> None:
    leaks = Leaks()
    tools = await load_mcp_tools(stdio_server("big", "--size", "5"), timeout=30, max_output_chars=10_000)
    result = await tools[0].execute({"message": "x"})
    assert not result.is_error
    assert len(result.text) < 10_200
    assert "[truncated: 5,232,880 of 5,242,880 characters cut (max_output_chars=10,000)]" in result.text
    await leaks.check()


async def test_a_result_of_the_wrong_shape_is_an_mcp_error() -> None:
    leaks = Leaks()
    tools = await load_mcp_tools(stdio_server("wrong_shape"), timeout=10)
    echo = next(item for item in tools if item.name == "echo")
    with pytest.raises(MCPError) as caught:
        await echo.execute({"message": "hi"})
    error = caught.value
    assert not isinstance(error, MCPTimeoutError)
    assert error.tool_name == "echo"
    assert "calling tool 'echo'" in str(error)
    assert "CallToolResult" in str(error)
    await still_works()
    await leaks.check()


async def test_unknown_notifications_are_ignored(caplog: pytest.LogCaptureFixture) -> None:
    leaks = Leaks()
    with caplog.at_level(logging.WARNING):
        tools = await load_mcp_tools(stdio_server("notify"), timeout=10)
        echo = next(item for item in tools if item.name == "echo")
        result = await echo.execute({"message": "hi"})
    assert result.text == "hi" and not result.is_error
    await leaks.check()


async def test_a_cursor_that_never_advances_ends_the_listing() -> None:
    leaks = Leaks()
    started = time.monotonic()
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools(stdio_server("cursor_same"), timeout=10)
    assert time.monotonic() - started < 5
    assert not isinstance(caught.value, MCPTimeoutError)
    assert "repeated the pagination cursor 'page-2'" in str(caught.value)
    await still_works()
    await leaks.check()


async def test_duplicate_empty_and_spaced_tool_names(caplog: pytest.LogCaptureFixture) -> None:
    leaks = Leaks()
    with caplog.at_level(logging.WARNING, logger="cubepi"):
        tools = await load_mcp_tools(stdio_server("names"), timeout=10)
    names = [item.name for item in tools]
    # The nameless tool is skipped; of two tools with one name the first is kept; names are never rewritten.
    assert names == ["dup", "has space", "echo"]
    assert next(item for item in tools if item.name == "dup").description == "first dup"
    spaced = next(item for item in tools if item.name == "has space")
    assert spaced.api_name == "has_space"
    warnings = " ".join(record.getMessage() for record in caplog.records)
    assert "without a name" in warnings and "'dup'" in warnings
    await still_works()
    await leaks.check()


async def test_startup_timeout_is_separate_from_the_call_timeout() -> None:
    leaks = Leaks()
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        await load_mcp_tools_stdio(
            PYTHON,
            [str(STDIO_FAULTS), "hang_init"],
            timeout=30,
            startup_timeout=1.0,
        )
    assert time.monotonic() - started < 5
    assert caught.value.phase in ("startup", "initialize") and caught.value.limit == 1.0
    await leaks.check()


async def test_a_call_whose_server_hangs_in_initialize_times_out_at_its_limit_not_at_the_servers_end(
    tmp_path: Path,
) -> None:
    """A call's fresh session that never finishes start-up ends at `startup_timeout`, named as such, while
    the list's keeper goes on closing the server: one that ignores its closed stdin takes the SDK's grace
    (PROCESS_TERMINATION_TIMEOUT) and a SIGTERM to go, and the caller does not wait for that."""
    leaks = Leaks()
    stuck = tmp_path / "stuck"
    server = stdio_server("ok", "--hang-init-if", str(stuck), "--deaf-when-stuck", protocol="legacy")
    async with await load_mcp_tools(server, timeout=30, startup_timeout=1.0) as tools:
        echo = next(item for item in tools if item.name == "echo")
        assert (await echo.execute({"message": "before"})).text == "before"
        stuck.touch()
        started = time.monotonic()
        with pytest.raises(MCPTimeoutError) as caught:
            await echo.execute({"message": "hi"})
        elapsed = time.monotonic() - started
        assert (caught.value.phase, caught.value.limit) == ("initialize", 1.0)
        assert_timeout_message(caught.value, "initialize", 1)
        assert caught.value.tool_name == "echo"
        assert elapsed < 1.0 + PROCESS_TERMINATION_TIMEOUT, f"took {elapsed:.1f} s"
    await leaks.check()


async def test_a_server_stuck_in_initialize_is_heard_on_stderr_while_it_is_closed(tmp_path: Path) -> None:
    """A call's fresh session that never finishes start-up fails at `startup_timeout`, while the server is
    still being closed: what the server prints after that (here as it is terminated, since it ignores its
    closed stdin) still reaches `on_stderr`."""
    leaks = Leaks()
    stuck = tmp_path / "stuck"
    terminated = anyio.Event()

    def on_stderr(line: str) -> None:
        if line == "stdio_faults: terminated":
            terminated.set()

    options = ["--hang-init-if", str(stuck), "--deaf-when-stuck", "--say-on-term"]
    server = stdio_server("ok", *options, protocol="legacy", on_stderr=on_stderr)
    async with await load_mcp_tools(server, timeout=30, startup_timeout=1.0) as tools:
        echo = next(item for item in tools if item.name == "echo")
        assert (await echo.execute({"message": "before"})).text == "before"
        assert not terminated.is_set()  # a server that exits on its closed stdin is not terminated
        stuck.touch()
        with pytest.raises(MCPTimeoutError) as caught:
            await echo.execute({"message": "hi"})
        assert caught.value.phase == "initialize"
        with anyio.fail_after(20):
            await terminated.wait()
    await leaks.check()


def test_the_loop_ending_while_a_spare_is_spawned_leaves_no_process() -> None:
    """`prespawn=True` and a loop that ends right after loading, while the spare is being spawned: CPython's
    asyncio would wait forever for that spawn (gh-103847). The program ends, and no server outlives it."""
    marker = f"cubepi-test-{os.getpid()}-{time.monotonic_ns()}"
    script = f"""
import asyncio
from cubepi.mcp import StdioServer, load_mcp_tools

async def main():
    server = StdioServer({PYTHON!r}, [{str(STDIO_FAULTS)!r}, "ok"], env={{"MARKER": {marker!r}}})
    await load_mcp_tools(server, prespawn=True)
    await asyncio.sleep(0)

for _ in range(3):
    asyncio.run(main())
"""
    started = time.monotonic()
    done = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert time.monotonic() - started < 45
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _marked(marker):
        time.sleep(0.05)
    assert not _marked(marker)


def _marked(marker: str) -> list[int]:
    """Running processes whose environment carries `marker`."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("MARKER") == marker and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process.pid)
        except psutil.Error:
            pass
    return found


def test_the_loop_ending_mid_call_kills_a_server_deaf_to_its_closed_stdin_at_once(tmp_path: Path) -> None:
    """`asyncio.run` ends while a call waits on a server that stopped reading stdin: no graceful shutdown
    can finish then, so the server is killed at once. The program does not wait out the SDK's grace
    (PROCESS_TERMINATION_TIMEOUT) for a server that will never exit on its own, and leaves nothing running."""
    marker = f"cubepi-test-{os.getpid()}-{time.monotonic_ns()}"
    record = tmp_path / "record"
    script = f"""
import asyncio, pathlib, time
from cubepi.mcp import StdioServer, load_mcp_tools

ended = []

async def main():
    server = StdioServer({PYTHON!r}, [{str(STDIO_FAULTS)!r}, "deaf_call", "--record", {str(record)!r}],
                         env={{"MARKER": {marker!r}}})
    tools = await load_mcp_tools(server, timeout=30)
    asyncio.get_running_loop().create_task(tools[0].execute({{"message": "hi"}}))
    record = pathlib.Path({str(record)!r})
    while '"tools/call"' not in (record.read_text() if record.exists() else ""):
        await asyncio.sleep(0.02)
    ended.append(time.monotonic())

asyncio.run(main())
print("shutdown took", time.monotonic() - ended[0])
"""
    done = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    took = float(done.stdout.split("shutdown took", 1)[1])
    assert took < PROCESS_TERMINATION_TIMEOUT, f"the loop's end took {took:.1f} s"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _marked(marker):
        time.sleep(0.05)
    assert not _marked(marker)
