"""Session behaviour against real servers: cancellation notices, startup vs call timeouts, progress
extending deadlines, output schemas, the stdio environment, command resolution, cwd, stderr, headers.

Most tests use tests/servers/behaviour.py (a low-level server that records what it receives).
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pydantic
import pytest
from conftest import KITCHEN, PYTHON, SERVERS, LeakChecker, RunningServer

from cubepi import AgentTool, MCPError, MCPTimeoutError, ToolUpdate
from cubepi.mcp import (
    ENV_PASSTHROUGH,
    HttpServer,
    StdioServer,
    load_mcp_tools,
    load_mcp_tools_http,
    load_mcp_tools_stdio,
    make_mcp_agent_tool,
    output_model,
)
from cubepi.mcp._calls.limits import SAME_AS_TIMEOUT
from cubepi.mcp._transports.stdio import StdioProcess

BEHAVIOUR = SERVERS / "behaviour.py"
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"count": {"type": "integer"}, "label": {"type": "string"}},
    "required": ["count"],
}


def behaviour(**kwargs: Any) -> StdioServer:
    return StdioServer(PYTHON, [str(BEHAVIOUR)], **kwargs)


def spec(name: str, /, **properties: object) -> dict[str, object]:
    return {"name": name, "inputSchema": {"type": "object", "properties": properties}}


def received(record: Path) -> list[dict[str, Any]]:
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line.strip()]


def cancel_notices(record: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    messages = received(record)
    calls = [m for m in messages if m.get("method") == "tools/call"]
    notes = [m for m in messages if m.get("method") == "notifications/cancelled"]
    return calls, notes


# -- notifications/cancelled ---------------------------------------------------------------------------------


async def test_a_timed_out_call_tells_the_server(tmp_path: Path, leaks: LeakChecker) -> None:
    record = tmp_path / "received.jsonl"
    hang = make_mcp_agent_tool(
        spec("hang"), behaviour(env={"BEHAVIOUR_RECORD": str(record)}), timeout=1, startup_timeout=30
    )
    with pytest.raises(MCPTimeoutError) as caught:
        await hang.execute({})
    assert (caught.value.phase, caught.value.limit) == ("call", 1.0)
    calls, notes = cancel_notices(record)
    assert len(calls) == 1 and len(notes) == 1
    assert notes[0]["params"]["requestId"] == calls[0]["id"]
    assert notes[0]["params"]["reason"]  # the SDK words it ("caller cancelled")
    await leaks.assert_clean()


async def test_a_cancelled_call_tells_the_server(tmp_path: Path, leaks: LeakChecker) -> None:
    record = tmp_path / "received.jsonl"
    hang = make_mcp_agent_tool(spec("hang"), behaviour(env={"BEHAVIOUR_RECORD": str(record)}))
    with anyio.fail_after(20):
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(hang.execute, {})
                for _ in range(400):  # until the server has the call
                    if cancel_notices(record)[0]:
                        break
                    await anyio.sleep(0.05)
                scope.cancel()
    calls, notes = cancel_notices(record)
    assert len(notes) == 1 and notes[0]["params"]["requestId"] == calls[0]["id"]
    assert "cancelled" in notes[0]["params"]["reason"]
    await leaks.assert_clean()


async def test_a_timed_out_call_over_http_tells_the_server(kitchen_http: RunningServer) -> None:
    # The kitchen server cannot record notices; this checks the timeout path works over HTTP too.
    slow = make_mcp_agent_tool(
        spec("slow", seconds={"type": "number"}), HttpServer(kitchen_http.url), timeout=1, startup_timeout=30
    )
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError):
        await slow.execute({"seconds": 30})
    assert time.monotonic() - started < 8


# -- startup_timeout vs timeout ------------------------------------------------------------------------------


def test_timeouts_are_documented_kwargs_with_defaults() -> None:
    for loader in (load_mcp_tools, load_mcp_tools_stdio, load_mcp_tools_http, make_mcp_agent_tool):
        params = inspect.signature(loader).parameters
        assert params["timeout"].default == 30.0, loader
        assert params["startup_timeout"].default is SAME_AS_TIMEOUT, loader  # the value of `timeout`
        assert params["max_duration"].default == 600, loader  # finite: no server holds a caller for ever
        doc = inspect.getdoc(loader) or ""
        assert "startup_timeout" in doc or "load_mcp_tools" in doc


async def test_bad_timeout_values_are_user_errors() -> None:
    from cubepi import UserError

    for bad in ({"startup_timeout": 0}, {"max_duration": -1}, {"timeout": "1"}):
        with pytest.raises(UserError):
            await load_mcp_tools(behaviour(), **bad)  # type: ignore[arg-type]


async def test_startup_timeout_is_separate_from_the_call_timeout(leaks: LeakChecker) -> None:
    slow_start = StdioServer(PYTHON, [str(KITCHEN)], env={"KITCHEN_START_DELAY": "30"})
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        await load_mcp_tools(slow_start, timeout=30, startup_timeout=1)
    assert time.monotonic() - started < 6
    error = caught.value
    assert (error.phase, error.limit) == ("initialize", 1.0)
    assert "startup_timeout" in str(error)
    await leaks.assert_clean()


async def test_a_slow_start_within_startup_timeout_is_fine_with_a_short_call_timeout() -> None:
    tools = await load_mcp_tools(
        StdioServer(PYTHON, [str(KITCHEN)], env={"KITCHEN_START_DELAY": "1.5"}), timeout=1, startup_timeout=30
    )
    assert "echo" in {t.name for t in tools}


# -- progress extends the call's deadline --------------------------------------------------------------------


async def test_progress_keeps_a_long_call_alive(leaks: LeakChecker) -> None:
    ticking = make_mcp_agent_tool(
        spec("ticking", seconds={"type": "number"}, interval={"type": "number"}),
        behaviour(),
        timeout=1.0,
        startup_timeout=30,
    )
    updates: list[ToolUpdate] = []
    started = time.monotonic()
    result = await ticking.execute({"seconds": 3, "interval": 0.3}, on_update=updates.append)
    assert time.monotonic() - started > 2.5  # ran well past `timeout`
    assert result.text.startswith("ticked") and not result.is_error
    assert len(updates) >= 5 and updates[0].message == "tick 1"


async def test_progress_extends_the_deadline_even_without_on_update() -> None:
    ticking = make_mcp_agent_tool(
        spec("ticking", seconds={"type": "number"}, interval={"type": "number"}),
        behaviour(),
        timeout=1.0,
        startup_timeout=30,
    )
    result = await ticking.execute({"seconds": 2.5, "interval": 0.25})
    assert result.text.startswith("ticked")


async def test_max_duration_bounds_a_call_that_keeps_sending_progress(
    tmp_path: Path, leaks: LeakChecker
) -> None:
    record = tmp_path / "received.jsonl"
    ticking = make_mcp_agent_tool(
        spec("ticking", seconds={"type": "number"}, interval={"type": "number"}),
        behaviour(env={"BEHAVIOUR_RECORD": str(record)}),
        timeout=1.0,
        startup_timeout=30,
        max_duration=2.0,
    )
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        await ticking.execute({"seconds": 30, "interval": 0.2})
    took = time.monotonic() - started
    assert 2.0 <= took < 20  # the tool would tick for 30 s; the margin is for a slow start under load
    assert (caught.value.phase, caught.value.limit) == ("call", 2.0)
    assert "max_duration" in str(caught.value)
    calls, notes = cancel_notices(record)
    assert len(notes) == 1 and notes[0]["params"]["requestId"] == calls[0]["id"]
    await leaks.assert_clean()


async def test_without_progress_timeout_applies(leaks: LeakChecker) -> None:
    hang = make_mcp_agent_tool(spec("hang"), behaviour(), timeout=1.0, startup_timeout=30, max_duration=30)
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        await hang.execute({})
    assert time.monotonic() - started < 20  # well before max_duration (30 s), start-up included
    assert caught.value.limit == 1.0 and "no result or progress" in str(caught.value)


async def test_a_silent_call_ends_at_its_timeout_even_just_under_max_duration() -> None:
    """`timeout` (1 s) runs out before `max_duration` (1.5 s): the error is the timeout's, not
    max_duration's."""
    hang = make_mcp_agent_tool(spec("hang"), behaviour(), timeout=1.0, startup_timeout=30, max_duration=1.5)
    with pytest.raises(MCPTimeoutError) as caught:
        await hang.execute({})
    assert (caught.value.phase, caught.value.limit) == ("call", 1.0)
    assert "no result or progress for 1 s" in str(caught.value) and "max_duration" not in str(caught.value)


# -- output schemas ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shaped_tools() -> dict[str, AgentTool]:
    tools = anyio.run(lambda: load_mcp_tools(behaviour()))
    return {t.name: t for t in tools}


def test_output_schema_from_a_later_page_is_exposed_with_a_model(shaped_tools: dict[str, AgentTool]) -> None:
    assert set(shaped_tools) == {"hang", "ticking", "context", "shaped", "noisy"}  # two pages
    shaped = shaped_tools["shaped"]
    assert shaped.output_schema == OUTPUT_SCHEMA
    model = output_model(shaped)
    assert model is not None and output_model(shaped) is model  # built once
    assert model.model_validate({"count": 3}).model_dump(exclude_unset=True) == {"count": 3}
    with pytest.raises(pydantic.ValidationError):
        model.model_validate({"label": "no count"})
    assert output_model(shaped_tools["hang"]) is None


async def test_mismatching_structured_content_keeps_the_result(
    shaped_tools: dict[str, AgentTool], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="cubepi.mcp"):
        result = await shaped_tools["shaped"].execute({"mode": "bad"})
    assert result.text == "three things" and not result.is_error
    assert result.details["structuredContent"] == {"count": "three", "label": 3}
    error = result.details["structuredContentError"]
    assert "count" in error or "label" in error
    warnings = [r for r in caplog.records if r.name == "cubepi.mcp" and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert "'shaped'" in message and "outputSchema" in message
    assert "three" not in message  # values stay out of the log


async def test_missing_structured_content_is_noted(shaped_tools: dict[str, AgentTool]) -> None:
    result = await shaped_tools["shaped"].execute({"mode": "none"})
    assert result.text == "three things (no structure)" and not result.is_error
    assert "no structuredContent" in result.details["structuredContentError"]


async def test_matching_structured_content_has_no_error(shaped_tools: dict[str, AgentTool]) -> None:
    result = await shaped_tools["shaped"].execute({"mode": "good"})
    assert result.details["structuredContent"] == {"count": 3, "label": "things"}
    assert "structuredContentError" not in result.details
    model = output_model(shaped_tools["shaped"])
    assert model is not None
    assert model.model_validate(result.details["structuredContent"]).model_dump()["count"] == 3


# -- pagination guard ----------------------------------------------------------------------------------------


async def test_a_cursor_that_never_advances_ends_the_listing(leaks: LeakChecker) -> None:
    server = StdioServer(PYTHON, [str(SERVERS / "paged.py")], env={"PAGED_MODE": "loop"})
    with anyio.fail_after(20):
        with pytest.raises(MCPError, match="repeated the pagination cursor 'again' after 6 tools"):
            await load_mcp_tools(server)


async def test_a_cursor_cycle_ends_the_listing(leaks: LeakChecker) -> None:
    with anyio.fail_after(20):
        with pytest.raises(MCPError, match="repeated the pagination cursor '1'") as caught:
            await load_mcp_tools(behaviour(env={"BEHAVIOUR_PAGES": "cycle"}))
    assert not isinstance(caught.value, MCPTimeoutError)


# -- environment ---------------------------------------------------------------------------------------------

CANARY = "CUBEPI_CANARY_SECRET"
PASSED = {
    "HTTPS_PROXY": "http://proxy.example:3128",
    "no_proxy": "localhost",
    "SSL_CERT_FILE": "/etc/ssl/cert.pem",
    "NODE_EXTRA_CA_CERTS": "/etc/ssl/extra.pem",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TMPDIR": "/tmp",
}


async def context_of(server: StdioServer, names: list[str]) -> dict[str, Any]:
    tool = make_mcp_agent_tool(spec("context", names={"type": "array"}), server)
    result = await tool.execute({"names": names})
    seen: dict[str, Any] = result.details["structuredContent"]
    return seen


async def test_env_allowlist_passes_proxies_and_locale_but_never_secrets(
    monkeypatch: pytest.MonkeyPatch, leaks: LeakChecker
) -> None:
    monkeypatch.setenv(CANARY, "do-not-leak")
    for key, value in PASSED.items():
        monkeypatch.setenv(key, value)
    seen = await context_of(
        behaviour(env={"GIVEN": "given", "LANG": "fr_FR.UTF-8"}), [CANARY, "GIVEN", *PASSED]
    )
    env = seen["env"]
    assert env[CANARY] is None
    assert env["GIVEN"] == "given"
    assert env["LANG"] == "fr_FR.UTF-8"  # env wins over the pass-through
    for key, value in PASSED.items():
        if key != "LANG":
            assert env[key] == value, key


async def test_inherit_env_passes_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CANARY, "inherited")
    seen = await context_of(behaviour(inherit_env=True, env={"GIVEN": "given"}), [CANARY, "GIVEN"])
    assert seen["env"] == {CANARY: "inherited", "GIVEN": "given"}


async def test_load_mcp_tools_stdio_keeps_the_parent_environment_unless_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CANARY, "do-not-leak")
    for inherit, want in ((None, None), (True, "do-not-leak")):
        options = {} if inherit is None else {"inherit_env": inherit}
        tools = {t.name: t for t in await load_mcp_tools_stdio(PYTHON, [str(BEHAVIOUR)], **options)}
        result = await tools["context"].execute({"names": [CANARY]})
        assert result.details["structuredContent"]["env"] == {CANARY: want}


def test_env_allowlist_is_documented_and_holds_no_secrets() -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"):
        assert name in ENV_PASSTHROUGH
    for name in ("REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "LANG", "LC_*", "TMPDIR"):
        assert name in ENV_PASSTHROUGH
    assert not any("KEY" in n or "TOKEN" in n or "SECRET" in n for n in ENV_PASSTHROUGH)
    assert "inherit_env" in (StdioServer.__doc__ or "") and "ENV_PASSTHROUGH" in (StdioServer.__doc__ or "")
    server = behaviour(env={"API_KEY": "sk-1234"}, inherit_env=True)
    assert "sk-1234" not in repr(server) and "inherit_env=True" in repr(server)


# -- cwd and command resolution ------------------------------------------------------------------------------


async def test_cwd_is_honoured(tmp_path: Path) -> None:
    seen = await context_of(behaviour(cwd=tmp_path), [])
    assert seen["cwd"] == str(tmp_path)


async def test_a_missing_cwd_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(MCPError, match=r"working directory .* does not exist") as caught:
        await load_mcp_tools(behaviour(cwd=tmp_path / "nowhere"))
    assert "Group" not in str(caught.value)


def _launcher(directory: Path, name: str) -> Path:
    """An executable script that starts the behaviour server (what `npx` is to a node server)."""
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows CI only
        path = directory / f"{name}.cmd"
        path.write_text(f'@"{PYTHON}" "{BEHAVIOUR}" %*\r\n', encoding="utf-8")
    else:
        path = directory / name
        path.write_text(f'#!/bin/sh\nexec "{PYTHON}" "{BEHAVIOUR}" "$@"\n', encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


async def test_the_command_is_looked_up_on_the_servers_path(tmp_path: Path) -> None:
    _launcher(tmp_path, "cubepi-test-launcher")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PATH", "")])
    tools = await load_mcp_tools_stdio("cubepi-test-launcher", env={"PATH": path})
    assert "context" in {t.name for t in tools}


async def test_a_relative_command_is_relative_to_cwd(tmp_path: Path) -> None:
    launcher = _launcher(tmp_path, "launch")
    tools = await load_mcp_tools_stdio(os.path.join(".", launcher.name), cwd=tmp_path)
    assert "hang" in {t.name for t in tools}


async def test_a_missing_command_is_a_clear_error() -> None:
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools_stdio("cubepi-no-such-server-anywhere", ["--flag"])
    text = str(caught.value)
    assert "command not found: 'cubepi-no-such-server-anywhere'" in text and "PATH" in text
    assert "Group" not in text and "Group" not in type(caught.value.__cause__).__name__


# -- errors read well ----------------------------------------------------------------------------------------


async def test_load_errors_are_unwrapped_and_chained(leaks: LeakChecker) -> None:
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools_stdio(PYTHON, [str(SERVERS / "crasher.py")])
    error = caught.value
    assert "TaskGroup" not in str(error) and "ExceptionGroup" not in repr(error)
    assert error.__cause__ is not None and "Group" not in type(error.__cause__).__name__
    assert error.stderr and "FATAL missing configuration" in error.stderr  # the startup error shows stderr


# -- stderr --------------------------------------------------------------------------------------------------


async def test_on_stderr_gets_each_line(leaks: LeakChecker) -> None:
    lines: list[str] = []
    tools = {t.name: t for t in await load_mcp_tools_stdio(PYTHON, [str(BEHAVIOUR)], on_stderr=lines.append)}
    assert "behaviour server starting" in lines
    lines.clear()
    result = await tools["noisy"].execute({"lines": 3})
    assert result.text == "made some noise"
    for _ in range(50):  # the pump thread may lag a little behind the call
        if len(lines) >= 4:
            break
        await anyio.sleep(0.02)
    assert [line for line in lines if line.startswith("noise")] == [f"noise line {i}" for i in range(3)]


async def test_a_failing_on_stderr_never_breaks_the_call(caplog: pytest.LogCaptureFixture) -> None:
    noise: list[str] = []
    all_seen = threading.Event()

    def broken(line: str) -> None:
        if line.startswith("noise"):
            noise.append(line)
            if len(noise) == 5:
                all_seen.set()
        raise RuntimeError("callback bug")

    noisy = make_mcp_agent_tool(spec("noisy", lines={"type": "integer"}), behaviour(on_stderr=broken))
    with caplog.at_level(logging.WARNING, logger="cubepi.mcp"):
        result = await noisy.execute({"lines": 5})
        assert result.text == "made some noise"
        # The pump thread may lag a little behind the call.
        assert await anyio.to_thread.run_sync(all_seen.wait, 10)
    failures = [r for r in caplog.records if "on_stderr" in r.getMessage()]
    assert len(failures) == 1  # logged once, not once per line


async def test_stderr_capture_is_bounded_and_split_into_lines() -> None:
    lines: list[str] = []
    capture = StdioProcess(on_line=lines.append, stderr_limit=1024)
    capture.start_reading()
    capture.errlog.write("\nfirst\r\nsecond\n" + "x" * 5000 + "\npartial")
    capture.errlog.flush()
    tail = await capture.stderr_tail()
    assert len(tail.encode()) <= 1024 and tail.endswith("partial")
    assert lines == ["", "first", "second", "x" * 5000, "partial"]  # a blank line is a line


@pytest.mark.parametrize("first", [40_000, 65_536, 70_000])
async def test_a_long_stderr_line_comes_in_64_kib_pieces_however_the_reads_fall(first: int) -> None:
    # A line's end may arrive in the read that takes it past 64 KiB: it still comes in 64 KiB pieces.
    from cubepi.mcp._transports.stdio import MAX_LINE

    lines: list[str] = []
    capture = StdioProcess(on_line=lines.append)
    capture.start_reading()
    capture._take(b"x" * first)  # two reads of the pipe, the newline in the second
    capture._take(b"y" * 40_000 + b"\nnext\n")
    await capture.stderr_tail()
    line = "x" * first + "y" * 40_000
    pieces = [line[i : i + MAX_LINE] for i in range(0, len(line), MAX_LINE)]
    assert lines == [*pieces, "next"]


def test_a_stderr_line_of_exactly_64_kib_is_one_line() -> None:
    from cubepi.mcp._transports.stdio import MAX_LINE

    lines: list[str] = []
    capture = StdioProcess(on_line=lines.append)
    capture._take(b"z" * MAX_LINE + b"\n")
    capture.close_errlog()
    assert lines == ["z" * MAX_LINE]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="lists open descriptors from /proc")
async def test_stderr_capture_closes_its_pipe_once_drained() -> None:
    # Each stdio server gets a stderr pipe: once its end is read, both ends are closed (a long-lived
    # program that opens many sessions must not run out of file descriptors).
    before = set(os.listdir("/proc/self/fd"))
    capture = StdioProcess()
    capture.start_reading()
    capture.errlog.write("some last words\n")
    capture.errlog.flush()
    assert (await capture.stderr_tail()).endswith("some last words\n")
    assert set(os.listdir("/proc/self/fd")) <= before


# -- headers per connection ----------------------------------------------------------------------------------


async def test_callable_headers_are_fresh_for_each_connection(kitchen_http: RunningServer) -> None:
    issued: list[str] = []

    def rotating() -> dict[str, str]:
        issued.append(f"token-{len(issued)}")
        return {"Authorization": f"Bearer {issued[-1]}"}

    async with await load_mcp_tools_http(
        kitchen_http.url, headers=rotating, transport="streamable-http"
    ) as tools:
        header = next(t for t in tools if t.name == "header")
        first = await header.execute({"name": "authorization"})
        second = await header.execute({"name": "authorization"})
    assert issued == ["token-0", "token-1", "token-2"]  # the load, then one per call
    assert (first.text, second.text) == ("Bearer token-1", "Bearer token-2")


async def test_async_callable_headers_and_a_failing_one(kitchen_http: RunningServer) -> None:
    async def fetch() -> dict[str, str]:
        await anyio.lowlevel.checkpoint()
        return {"X-Token": "from-async"}

    header = make_mcp_agent_tool(
        spec("header", name={"type": "string"}), HttpServer(kitchen_http.url, headers=fetch)
    )
    assert (await header.execute({"name": "x-token"})).text == "from-async"
    assert "callable" in repr(HttpServer(kitchen_http.url, headers=fetch))

    def broken() -> dict[str, str]:
        raise KeyError("sk-secret-value")

    failing = make_mcp_agent_tool(
        spec("header", name={"type": "string"}), HttpServer(kitchen_http.url, headers=broken)
    )
    with pytest.raises(MCPError, match="headers callable raised KeyError") as caught:
        await failing.execute({"name": "x-token"})
    assert "sk-secret-value" not in str(caught.value)
