"""What the 2026-07-28 revision gives stateless tools, checked against real servers of both eras."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, SERVERS, StartServer

import cubepi.mcp._transports.http as opening
from cubepi.mcp import load_mcp_tools_http

HEADERS = SERVERS / "headers.py"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"  # in the `_meta` of a 2026-07-28 request
STDIO_FAULTS = SERVERS.parent / "faults" / "servers" / "stdio_faults.py"


@pytest.fixture
def posts(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    """The headers of every POST the loaded lists' HTTP clients send."""
    seen: list[dict[str, str]] = []
    make = opening.http_client

    def recording(server: Any) -> Any:
        client = make(server)

        async def record(request: Any) -> None:
            if request.method == "POST":
                seen.append({key.lower(): value for key, value in request.headers.items()})

        client.event_hooks["request"].append(record)
        return client

    monkeypatch.setattr(opening, "http_client", recording)
    return seen


async def test_a_header_parameter_rides_its_one_request(
    http_server_factory: StartServer, posts: list[dict[str, str]]
) -> None:
    server = http_server_factory([PYTHON, str(HEADERS), "http"], "/mcp")
    async with await load_mcp_tools_http(server.url) as tools:
        posts.clear()
        result = await tools[0].execute({"region": "eu-west"})
    # The server refuses a call whose Mcp-Param-Region header is missing or differs (HEADER_MISMATCH).
    assert not result.is_error and result.text == "eu-west (header: eu-west)"
    assert len(posts) == 1 and posts[0]["mcp-param-region"] == "eu-west"


async def test_handshake_era_calls_send_no_parameter_headers(
    http_server_factory: StartServer, posts: list[dict[str, str]]
) -> None:
    server = http_server_factory([PYTHON, str(HEADERS), "http"], "/mcp")
    async with await load_mcp_tools_http(server.url, protocol="legacy") as tools:
        result = await tools[0].execute({"region": "eu-west"})
    assert result.text == "eu-west (header: <none>)"
    assert not any("mcp-param-region" in headers for headers in posts)


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_log_level_brings_the_servers_logs_to_python_logging(
    protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    from cubepi.mcp import StdioServer, load_mcp_tools

    server = StdioServer(PYTHON, [str(SERVERS / "annotated.py")], protocol=protocol)
    tools = await load_mcp_tools(server, include=["chatty"], log_level="info")
    with caplog.at_level(logging.INFO, logger="cubepi.mcp.server"):
        assert (await tools[0].execute({})).text == "chatted"
    logged = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "cubepi.mcp.server"]
    assert any(level == logging.INFO and "starting the chat" in text for level, text in logged)
    assert any(level == logging.WARNING and "almost done" in text for level, text in logged)
    assert (logging.INFO, f"{server.describe()}: starting the chat") in logged  # which server said it


async def test_without_log_level_a_2026_server_sends_no_logs(caplog: pytest.LogCaptureFixture) -> None:
    from cubepi.mcp import StdioServer, load_mcp_tools

    tools = await load_mcp_tools(StdioServer(PYTHON, [str(SERVERS / "annotated.py")]), include=["chatty"])
    with caplog.at_level(logging.DEBUG, logger="cubepi.mcp.server"):
        assert (await tools[0].execute({})).text == "chatted"
    assert not [r for r in caplog.records if r.name == "cubepi.mcp.server"]


async def test_a_server_past_2026_since_load_is_probed_again(tmp_path: Path) -> None:
    """A server upgraded since load refuses the revision the list adopted (-32022): the call probes it once
    more, falls back to the handshake and is answered; the calls after it no longer send the old revision."""
    from cubepi.mcp import StdioServer, load_mcp_tools

    record, upgraded = tmp_path / "record.jsonl", tmp_path / "upgraded"
    faults = [str(STDIO_FAULTS), "ok", "--record", str(record), "--past-2026", str(upgraded)]
    async with await load_mcp_tools(StdioServer(PYTHON, faults), include=["echo"], timeout=30) as tools:
        assert (await tools[0].execute({"message": "before"})).text == "before"
        upgraded.touch()
        assert (await tools[0].execute({"message": "refused once"})).text == "refused once"
        assert (await tools[0].execute({"message": "after"})).text == "after"
    calls = [m for m in map(json.loads, record.read_text().splitlines()) if m.get("method") == "tools/call"]
    enveloped = [VERSION_KEY in call["params"].get("_meta", {}) for call in calls]
    assert enveloped == [True, True, False, False]  # the refused call, sent again in the handshake era
    assert [call["params"]["arguments"]["message"] for call in calls[1:]] == ["refused once"] * 2 + ["after"]


def methods(record: Path) -> list[str]:
    return [m["method"] for m in map(json.loads, record.read_text().splitlines()) if "method" in m]


async def test_a_server_refusing_the_probe_for_handshake_versions_gets_the_handshake_first(
    tmp_path: Path,
) -> None:
    """``server/discover`` refused with -32022 naming only handshake-era versions: the session shakes hands
    before it lists (a strict server answers nothing before ``initialize``), and the calls do the same."""
    from cubepi.mcp import StdioServer, load_mcp_tools

    record = tmp_path / "record.jsonl"
    faults = [str(STDIO_FAULTS), "ok", "--record", str(record), "--refuse-discover"]
    async with await load_mcp_tools(StdioServer(PYTHON, faults), include=["echo"], timeout=30) as tools:
        loading = methods(record)
        assert "server/discover" in loading[: loading.index("initialize")]
        handshake = loading[loading.index("initialize") :]
        assert handshake == ["initialize", "notifications/initialized", "tools/list"]
        record.write_text("")
        assert (await tools[0].execute({"message": "hi"})).text == "hi"
    assert methods(record)[:3] == ["initialize", "notifications/initialized", "tools/call"]


async def test_a_server_silent_to_the_probe_gets_the_handshake_after_the_discover_limit(
    tmp_path: Path,
) -> None:
    """A handshake-era server may ignore a method it does not know: the probe gets `DISCOVER_LIMIT` seconds,
    then ``initialize`` is sent and the server is loaded and called as the handshake-era server it is."""
    from cubepi.mcp import StdioServer, load_mcp_tools

    record = tmp_path / "record.jsonl"
    faults = [str(STDIO_FAULTS), "ok", "--record", str(record), "--ignore-discover"]
    async with await load_mcp_tools(StdioServer(PYTHON, faults), include=["echo"], timeout=30) as tools:
        assert methods(record) == ["server/discover", "initialize", "notifications/initialized", "tools/list"]
        assert (await tools[0].execute({"message": "hi"})).text == "hi"


async def test_a_slow_starter_that_took_the_probe_after_all_is_probed_again(tmp_path: Path) -> None:
    """The probe's answer comes after `DISCOVER_LIMIT`, but the server took it: it refuses the handshake that
    follows (-32022, it serves 2026-07-28 now). The session asks ``server/discover`` again and is answered."""
    from cubepi.mcp import StdioServer, load_mcp_tools

    hold = tmp_path / "hold-first-discover"
    hold.touch()  # the answer to the first probe never gets through
    kitchen = [PYTHON, str(SERVERS / "kitchen.py")]
    relay = [str(SERVERS / "late_discover.py"), "--first-only", str(hold), *kitchen]
    async with await load_mcp_tools(StdioServer(PYTHON, relay), include=["echo"], timeout=30) as tools:
        assert (await tools[0].execute({"message": "hi"})).text == "hi"
