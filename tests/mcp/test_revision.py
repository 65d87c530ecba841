"""What the 2026-07-28 revision gives stateless tools, checked against real servers of both eras."""

from __future__ import annotations

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
