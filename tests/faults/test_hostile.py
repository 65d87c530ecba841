"""A hostile server (servers/hostile.py) against the transport bounds: each case ends within its bound.

Cases that would eat memory run in a process of their own (hostile_probe.py), whose peak memory is
measured; the others run here, with the leak guard. Every case checks that the list's next call works.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import _wait_for_port, free_port

from cubepi import MCPError, MCPTimeoutError, UserError
from cubepi.mcp import (
    HttpServer,
    StdioServer,
    load_mcp_tools,
    load_mcp_tools_http,
    load_mcp_tools_stdio,
    make_mcp_agent_tool,
)
from cubepi.mcp._calls.limits import DEFAULT_MAX_RESPONSE_BYTES
from cubepi.mcp._transports.http import HTTP_CLOSE_GRACE

from .conftest import Leaks

HERE = Path(__file__).parent
HOSTILE = HERE / "servers" / "hostile.py"
PROBE = HERE / "hostile_probe.py"
LIMIT = 4 * 1024 * 1024
ERAS = ["legacy", "auto"]  # the handshake era; 2026-07-28 (found by server/discover)
MARGIN = 3.0  # seconds past a bound that a loaded machine may take to end a call


@pytest.fixture(scope="module")
def hostile_http() -> Iterator[str]:
    """servers/hostile.py over Streamable HTTP on a free port of 127.0.0.1: its base URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(HOSTILE), "http", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process, limit=20)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def server(transport: str, era: str, base: str, path: str = "/mcp", **settings: Any) -> Any:
    if transport == "stdio":
        return StdioServer(sys.executable, [str(HOSTILE), "stdio"], protocol=era, **settings)
    return HttpServer(base + path, transport="streamable-http", protocol=era, **settings)


async def still_works(tools: list[Any]) -> None:
    echo = next(item for item in tools if item.name == "echo")
    result = await echo.execute({"message": "still here"})
    assert result.text == "still here" and not result.is_error


def probe(case: dict[str, Any]) -> dict[str, Any]:
    """Run `case` in a process of its own (hostile_probe.py); its report. Fails if the stdio server it
    started outlives it."""
    marker = f"hostile-{uuid.uuid4().hex}"
    case = {**case, "marker": marker}
    done = subprocess.run(
        [sys.executable, str(PROBE), json.dumps(case)], capture_output=True, text=True, timeout=100
    )
    assert done.returncode == 0, done.stderr[-3000:]
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if marker in (p.info["cmdline"] or [])]
    assert not left, f"server processes left running: {left}"
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def assert_too_large(report: dict[str, Any], limit: int = LIMIT) -> None:
    assert report["raised"] == "MCPError", report
    message = report["message"]
    assert f"max_response_bytes={limit}" in message and "raise it" in message, message
    assert report["next_call"] == "still here"


# -- 2, 3: what a response may hold -------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_response_that_never_ends_stops_at_max_response_bytes(
    transport: str, era: str, hostile_http: str
) -> None:
    # Over stdio a line without a newline, over HTTP a JSON body without a length: both written as fast as
    # the client reads, for ever. Unbounded, the client held gigabytes within the timeout.
    case: dict[str, Any] = {"protocol": era, "tool": "endless", "policies": {"timeout": 20}}
    if transport == "http":
        case["url"] = hostile_http + "/mcp"
    case["policies"]["max_response_bytes"] = LIMIT
    report = probe(case)
    assert_too_large(report)
    assert report["elapsed"] < 10, report
    assert report["peak"] - report["peak_before"] < 64, report  # MiB; the limit is 4


@pytest.mark.parametrize("era", ERAS)
def test_an_sse_event_past_max_response_bytes_fails_the_call(era: str, hostile_http: str) -> None:
    report = probe(
        {
            "url": hostile_http + "/mcp",
            "protocol": era,
            "tool": "big_event",
            "arguments": {"mb": 12},
            "policies": {"timeout": 20, "max_response_bytes": LIMIT},
        }
    )
    assert_too_large(report)
    assert report["peak"] - report["peak_before"] < 64, report


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_million_content_blocks_are_refused_by_their_size(transport: str, hostile_http: str) -> None:
    # 26 MB of empty blocks: parsing and rendering them would take seconds outside any timeout.
    leaks = Leaks()
    async with await load_mcp_tools(
        server(transport, "legacy", hostile_http), timeout=20, max_response_bytes=LIMIT
    ) as tools:
        blocks = next(item for item in tools if item.name == "blocks")
        started = time.monotonic()
        with pytest.raises(MCPError, match=f"max_response_bytes={LIMIT}"):
            await blocks.execute({"count": 1_000_000})
        assert time.monotonic() - started < 10
        await still_works(tools)
    await leaks.check()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_response_within_the_limit_arrives_whole(transport: str, hostile_http: str) -> None:
    async with await load_mcp_tools(
        server(transport, "auto", hostile_http), timeout=20, max_response_bytes=LIMIT
    ) as tools:
        name = "big_event" if transport == "http" else "big_text"  # an SSE event, a stdio line
        big = next(item for item in tools if item.name == name)
        result = await big.execute({"mb": 3})
        assert len(result.text) == 3 * 1024 * 1024


async def test_the_server_config_sets_the_limit_and_the_loader_overrides_it(hostile_http: str) -> None:
    tight = server("http", "auto", hostile_http, max_response_bytes=256)
    assert "max_response_bytes=256" in repr(tight)
    assert "max_response_bytes" not in repr(server("http", "auto", hostile_http))
    with pytest.raises(MCPError, match="max_response_bytes=256"):
        await load_mcp_tools(tight, timeout=10)  # the tool list alone is larger
    async with await load_mcp_tools(tight, timeout=10, max_response_bytes=None) as tools:
        await still_works(tools)


def test_max_response_bytes_defaults_to_64_mib_and_is_checked(tmp_path: Path) -> None:
    assert DEFAULT_MAX_RESPONSE_BYTES == 64 * 1024 * 1024
    for setter in (StdioServer, HttpServer, load_mcp_tools_stdio, load_mcp_tools_http):
        default = inspect.signature(setter).parameters["max_response_bytes"].default
        assert default == DEFAULT_MAX_RESPONSE_BYTES, setter
    for bad in (0, -1, 1.5, True, "1"):
        with pytest.raises(UserError, match="max_response_bytes"):
            StdioServer("python", max_response_bytes=bad)
        with pytest.raises(UserError, match="max_response_bytes"):
            HttpServer("http://127.0.0.1:1/mcp", max_response_bytes=bad)
    assert StdioServer("python", max_response_bytes=None).max_response_bytes is None


async def test_max_response_bytes_on_a_connection_belongs_to_its_server(hostile_http: str) -> None:
    async with server("http", "auto", hostile_http).connect(timeout=10) as conn:
        with pytest.raises(UserError, match="server config"):
            await load_mcp_tools(conn, max_response_bytes=256)


# -- 1: a session end that never ends -----------------------------------------------------------------------


async def test_a_session_end_answered_one_byte_a_second_is_bounded(hostile_http: str) -> None:
    # /session gives a handshake-era client a session id and answers its DELETE one byte a second, for
    # ever: each read comes within any per-read timeout, so only a total bound ends it.
    leaks = Leaks()
    bound = HTTP_CLOSE_GRACE + MARGIN
    started = time.monotonic()
    tools = await load_mcp_tools(
        server("http", "legacy", hostile_http, "/session"), timeout=5, max_duration=5
    )
    # The listing's own session ends the same way (plus its start-up and listing, seconds under load).
    assert time.monotonic() - started < bound + 5
    echo = next(item for item in tools if item.name == "echo")
    started = time.monotonic()
    result = await echo.execute({"message": "hi"})
    assert time.monotonic() - started < bound
    assert result.text == "hi"
    await tools.aclose()
    await leaks.check()


# -- 7: a call that never ends by default -------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_progress_for_ever_ends_at_max_duration(transport: str, era: str, hostile_http: str) -> None:
    leaks = Leaks()
    async with await load_mcp_tools(server(transport, era, hostile_http), timeout=5, max_duration=2) as tools:
        progress = next(item for item in tools if item.name == "progress")
        started = time.monotonic()
        with pytest.raises(MCPTimeoutError) as caught:
            await progress.execute({})
        elapsed = time.monotonic() - started
        assert 2 <= elapsed < 2 + MARGIN
        assert (caught.value.phase, caught.value.limit) == ("call", 2.0)
        assert "max_duration=2 s" in str(caught.value) and "raise max_duration" in str(caught.value)
        await still_works(tools)
    await leaks.check()


def test_max_duration_defaults_to_ten_minutes_everywhere() -> None:
    from cubepi.mcp import load_mcp_tools_from_config
    from cubepi.mcp._calls.limits import Timeouts

    for function in (load_mcp_tools, load_mcp_tools_stdio, load_mcp_tools_http, make_mcp_agent_tool):
        assert inspect.signature(function).parameters["max_duration"].default == 600, function
    assert Timeouts().max_duration == 600 and Timeouts.from_options().max_duration == 600
    assert Timeouts.from_options(max_duration=None).max_duration is None  # None: no limit, when asked
    assert "max_duration" not in inspect.signature(load_mcp_tools_from_config).parameters  # a policy
