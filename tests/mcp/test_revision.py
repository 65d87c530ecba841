"""What the 2026-07-28 revision gives stateless tools, checked against real servers of both eras."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from conftest import PYTHON, SERVERS, StartServer

import cubepi.mcp._open as opening
from cubepi.mcp import load_mcp_tools_http

HEADERS = SERVERS / "headers.py"


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


async def test_without_log_level_a_2026_server_sends_no_logs(caplog: pytest.LogCaptureFixture) -> None:
    from cubepi.mcp import StdioServer, load_mcp_tools

    tools = await load_mcp_tools(StdioServer(PYTHON, [str(SERVERS / "annotated.py")]), include=["chatty"])
    with caplog.at_level(logging.DEBUG, logger="cubepi.mcp.server"):
        assert (await tools[0].execute({})).text == "chatted"
    assert not [r for r in caplog.records if r.name == "cubepi.mcp.server"]
