"""Misbehaving HTTP servers (servers/http_faults.py): what the user sees, and nothing left over.

One server process (a session fixture) serves every case on its own path; a second port of it is
"another origin" for the redirect case. Requests it received are recorded, so tests can check what reached
it (and which headers).
"""

from __future__ import annotations

import json
import time

import pytest
from conftest import HttpFaults, free_port

from cubepi import MCPError, MCPTimeoutError
from cubepi.mcp import HttpServer, load_mcp_tools, load_mcp_tools_http, make_mcp_agent_tool
from cubepi.mcp._transports.http import HTTP_CLOSE_GRACE

from .conftest import Leaks, assert_timeout_message

CANARY = "canary-7f3a9c-SECRET"
HEADERS = {"Authorization": f"Bearer {CANARY}", "X-Api-Key": f"key-{CANARY}"}


async def still_works(http_faults: HttpFaults) -> None:
    tools = await load_mcp_tools_http(http_faults.url("/mcp"), timeout=10)
    echo = next(item for item in tools if item.name == "echo")
    result = await echo.execute({"message": "still here"})
    assert result.text == "still here" and not result.is_error


def assert_no_secret(error: BaseException) -> None:
    for text in (str(error), repr(error), str(getattr(error, "server", ""))):
        assert CANARY not in text
    cause = error.__cause__
    while cause is not None:
        assert CANARY not in str(cause)
        cause = cause.__cause__


async def test_connection_refused(http_faults: HttpFaults) -> None:
    leaks = Leaks()
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools_http(url, headers=HEADERS, timeout=5)
    message = str(caught.value)
    assert not isinstance(caught.value, MCPTimeoutError)
    assert url in message
    assert "ConnectError" in message
    assert_no_secret(caught.value)
    await still_works(http_faults)
    await leaks.check()


@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.parametrize("transport", ["auto", "streamable-http"])
async def test_auth_refused_names_the_url_never_the_token(
    http_faults: HttpFaults, status: int, transport: str
) -> None:
    leaks = Leaks()
    http_faults.clear()
    url = http_faults.url(f"/status/{status}")
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools(HttpServer(url, headers=HEADERS, transport=transport))  # type: ignore[arg-type]
    message = str(caught.value)
    assert url in message
    assert f"HTTP {status}" in message
    assert "check the headers / auth" in message
    assert_no_secret(caught.value)
    # An auth failure is not "an old SSE server": auto does not fall back to SSE on 401/403.
    assert [record["method"] for record in http_faults.records()] == ["POST"]
    await still_works(http_faults)
    await leaks.check()


@pytest.mark.parametrize("status", [404, 405])
async def test_sse_only_server_auto_falls_back(http_faults: HttpFaults, status: int) -> None:
    leaks = Leaks()
    tools = await load_mcp_tools_http(http_faults.url(f"/sse-{status}"), headers=HEADERS, timeout=10)
    echo = next(item for item in tools if item.name == "echo")
    result = await echo.execute({"message": "over sse"})
    assert result.text == "over sse" and not result.is_error
    await leaks.check()


@pytest.mark.parametrize("status", [404, 405])
async def test_sse_only_server_explicit_streamable_http_says_what_failed(
    http_faults: HttpFaults, status: int
) -> None:
    leaks = Leaks()
    url = http_faults.url(f"/sse-{status}")
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools_http(url, headers=HEADERS, transport="streamable-http", timeout=10)
    message = str(caught.value)
    assert url in message and f"HTTP {status}" in message
    assert "initializing" in message
    assert_no_secret(caught.value)
    await still_works(http_faults)
    await leaks.check()


@pytest.mark.parametrize("status", [404, 405])
async def test_no_mcp_endpoint_auto_reports_both_attempts(http_faults: HttpFaults, status: int) -> None:
    leaks = Leaks()
    url = http_faults.url(f"/status/{status}")
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools_http(url, headers=HEADERS, timeout=10)
    message = str(caught.value)
    assert url in message
    assert "Streamable HTTP first" in message and "SSE" in message
    assert message.count(f"HTTP {status}") == 2
    assert_no_secret(caught.value)
    await still_works(http_faults)
    await leaks.check()


async def test_explicit_sse_against_a_streamable_http_server_says_what_failed(
    http_faults: HttpFaults,
) -> None:
    leaks = Leaks()
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools_http(http_faults.url("/mcp"), transport="sse", timeout=10)
    assert "HTTP 405" in str(caught.value)
    await still_works(http_faults)
    await leaks.check()


@pytest.mark.parametrize("transport", ["auto", "streamable-http"])
async def test_server_error_500(http_faults: HttpFaults, transport: str) -> None:
    leaks = Leaks()
    http_faults.clear()
    url = http_faults.url("/status/500")
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools(HttpServer(url, headers=HEADERS, transport=transport))  # type: ignore[arg-type]
    message = str(caught.value)
    assert url in message and "HTTP 500 Internal Server Error" in message
    assert_no_secret(caught.value)
    # No SSE fallback on 5xx: the discover probe, then the handshake, both POSTs to the one URL.
    assert {record["method"] for record in http_faults.records()} == {"POST"}
    await still_works(http_faults)
    await leaks.check()


@pytest.mark.parametrize(("status", "reason"), [(200, None), (299, None), (300, "HTTP 300 Multiple Choices")])
async def test_a_2xx_answer_is_no_http_error_from_300_on_it_is(
    http_faults: HttpFaults, status: int, reason: str | None
) -> None:
    """Only a status of 300 or more is the endpoint's HTTP error: any 2xx answer that is not JSON-RPC is a
    malformed answer, and the error does not blame an HTTP status."""
    http_faults.clear()
    url = http_faults.url(f"/status/{status}")
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools(HttpServer(url, transport="streamable-http"), timeout=10)
    message = str(caught.value)
    if reason is None:
        assert "the server sent a malformed answer" in message and "HTTP 2" not in message
    else:
        assert reason in message and "malformed" not in message
        # A redirect says nothing of the protocol era: the discover probe is not followed by a handshake.
        assert [record["method"] for record in http_faults.records()] == ["POST"]


async def test_server_stops_mid_stream_is_a_prompt_mcp_error(http_faults: HttpFaults) -> None:
    """An SSE response that ends without an answer: the SDK says so, and the call fails at once."""
    leaks = Leaks()
    tools = await load_mcp_tools_http(http_faults.url("/mcp"), timeout=10.0)
    cut = next(item for item in tools if item.name == "cut")
    started = time.monotonic()
    with pytest.raises(MCPError) as caught:
        await cut.execute({})
    assert time.monotonic() - started < 4
    assert not isinstance(caught.value, MCPTimeoutError)
    assert caught.value.tool_name == "cut"
    assert "calling tool 'cut' on http server" in str(caught.value)
    assert "SSE stream ended without a response" in str(caught.value)
    await still_works(http_faults)
    await leaks.check()


async def test_server_stops_mid_body_is_a_prompt_mcp_error(http_faults: HttpFaults) -> None:
    leaks = Leaks()
    tools = await load_mcp_tools_http(http_faults.url("/mcp"), timeout=3)
    cut = next(item for item in tools if item.name == "cut_json")
    started = time.monotonic()
    with pytest.raises(MCPError) as caught:
        await cut.execute({})
    assert time.monotonic() - started < 4
    assert not isinstance(caught.value, MCPTimeoutError)
    assert "calling tool 'cut_json'" in str(caught.value)
    assert "RemoteProtocolError" in str(caught.value)
    await still_works(http_faults)
    await leaks.check()


async def test_slow_call_past_timeout(http_faults: HttpFaults) -> None:
    leaks = Leaks()
    tools = await load_mcp_tools_http(
        http_faults.url("/mcp"), headers=HEADERS, timeout=1.0, startup_timeout=30
    )
    sleep = next(item for item in tools if item.name == "sleep")
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        await sleep.execute({"seconds": 10})
    assert time.monotonic() - started < 4
    error = caught.value
    assert error.phase == "call" and error.limit == 1.0 and error.tool_name == "sleep"
    assert_timeout_message(error, "call", 1)
    assert_no_secret(error)
    await still_works(http_faults)
    await leaks.check()


async def test_slow_initialize_past_timeout(http_faults: HttpFaults) -> None:
    leaks = Leaks()
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        await load_mcp_tools_http(
            http_faults.url("/slow-init"), headers=HEADERS, timeout=30, startup_timeout=1.0
        )
    assert time.monotonic() - started < 4
    assert caught.value.phase == "initialize"
    assert "initializing http server" in str(caught.value)
    assert_timeout_message(caught.value, "initialize", 1)
    assert_no_secret(caught.value)
    await still_works(http_faults)
    await leaks.check()


async def test_a_hanging_session_end_costs_a_call_at_most_the_close_grace(http_faults: HttpFaults) -> None:
    # Ending a handshake-era session (its DELETE) gets HTTP_CLOSE_GRACE, not the client's 30 s read
    # timeout: a server that never answers it still gives the call its result, and the session is asked to
    # end. (A 2026-07-28 call has no session to end.)
    leaks = Leaks()
    http_faults.clear()
    tools = await load_mcp_tools_http(
        http_faults.url("/slow-delete"), headers=HEADERS, transport="streamable-http", protocol="legacy"
    )
    echo = next(item for item in tools if item.name == "echo")
    started = time.monotonic()
    assert (await echo.execute({"message": "hi"})).text == "hi"
    assert time.monotonic() - started < HTTP_CLOSE_GRACE + 3  # the DELETE hangs for 30 s
    await tools.aclose()
    deletes = [r for r in http_faults.records() if r["method"] == "DELETE"]
    sessions = [{k.lower(): v for k, v in r["headers"].items()}.get("mcp-session-id") for r in deletes]
    assert sessions == ["slow-delete-session"] * 2  # the listing's session and the call's
    await leaks.check()


@pytest.mark.parametrize("transport", ["auto", "streamable-http", "sse"])
async def test_redirect_to_another_origin_is_not_followed(http_faults: HttpFaults, transport: str) -> None:
    leaks = Leaks()
    http_faults.clear()
    url = http_faults.url("/redirect")
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools(HttpServer(url, headers=HEADERS, transport=transport))  # type: ignore[arg-type]
    message = str(caught.value)
    assert url in message and "HTTP 307" in message
    assert_no_secret(caught.value)
    records = http_faults.records()
    other_port = int(http_faults.other.rsplit(":", 1)[1])
    assert records, "the first origin got the request"
    assert all(record["port"] != other_port for record in records), "the redirect was followed"
    await still_works(http_faults)
    await leaks.check()


async def test_a_forced_revision_the_server_refuses_is_named_on_every_call(http_faults: HttpFaults) -> None:
    """``protocol='2026-07-28'`` on a server past that revision (-32022): every call's error names the forced
    revision and ``protocol='auto'``, the first one (which sets the list up) and those after it (each one
    request on its own)."""
    forced = "2026-07-28"
    hint = f"the server may not speak protocol revision {forced}, which protocol='{forced}' forces"
    server = HttpServer(http_faults.url("/past-2026"), protocol=forced)
    echo = {"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}
    tool = make_mcp_agent_tool(echo, server, timeout=10)
    for _ in range(3):
        with pytest.raises(MCPError) as caught:
            await tool.execute({"message": "hi"})
        message = str(caught.value)
        assert "calling tool 'echo'" in message and "Unsupported protocol version" in message
        assert hint in message
        assert "protocol='auto' finds out which revision it speaks" in message
    await still_works(http_faults)


async def test_a_revision_refused_again_after_its_discover_is_an_error_not_a_loop(
    http_faults: HttpFaults,
) -> None:
    """``protocol='auto'`` on a server whose ``server/discover`` lists 2026-07-28 but which refuses every
    2026-07-28 request (-32022): the request is sent once more on a session that discovers again, and
    that second refusal is the error, not a third try."""
    leaks = Leaks()
    server = HttpServer(http_faults.url("/past-2026"))
    seen = len(http_faults.records())
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools(server, timeout=10)
    assert not isinstance(caught.value, MCPTimeoutError)
    assert "Unsupported protocol version" in str(caught.value)
    bodies = [record["body"] for record in http_faults.records()[seen:] if record["body"]]
    listings = [body for body in bodies if json.loads(body).get("method") == "tools/list"]
    assert len(listings) == 2, "the refused listing is sent once more, then raised"
    await still_works(http_faults)
    await leaks.check()


async def test_a_session_the_server_forgot_is_an_error_not_a_tool_result(http_faults: HttpFaults) -> None:
    """A handshake-era call answered HTTP 404 with a JSON-RPC error body (the session is unknown to the
    server: it restarted) is the connection's failure, raised as an `MCPError`, not a tool's error result
    handed to the model."""
    leaks = Leaks()
    server = HttpServer(http_faults.url("/forgetful"), protocol="legacy")
    async with await load_mcp_tools(server, timeout=10) as tools:
        echo = next(item for item in tools if item.name == "echo")
        with pytest.raises(MCPError) as caught:
            await echo.execute({"message": "hi"})
    assert not isinstance(caught.value, MCPTimeoutError)
    assert "calling tool 'echo'" in str(caught.value) and "Session not found" in str(caught.value)
    await still_works(http_faults)
    await leaks.check()
