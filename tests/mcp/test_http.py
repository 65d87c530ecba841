"""HTTP servers for real: tests/servers/kitchen.py over Streamable HTTP and SSE (one process each, kept up
for the session), plus hand-made failing endpoints: nothing listening, a 401, a socket that never answers."""

from __future__ import annotations

import contextlib
import http.server
import socket
from collections.abc import Iterator

import anyio
import httpx2
import pytest
from conftest import LeakChecker, RunningServer, free_port, plain_http_server

from cubepi import ImageContent, MCPError, MCPTimeoutError, TextContent, ToolUpdate
from cubepi.mcp import HttpServer, load_mcp_tools, load_mcp_tools_http, make_mcp_agent_tool
from cubepi.mcp._calls.limits import Timeouts
from cubepi.mcp._calls.listings import list_tools
from cubepi.mcp._calls.runner import Stateless


@pytest.fixture(params=["streamable-http", "sse"])
def kitchen_url(request: pytest.FixtureRequest) -> str:
    fixture = "kitchen_http" if request.param == "streamable-http" else "kitchen_sse"
    server: RunningServer = request.getfixturevalue(fixture)
    return server.url


def spec(name: str, /, **properties: object) -> dict[str, object]:
    return {"name": name, "inputSchema": {"type": "object", "properties": properties}}


async def test_content_of_every_kind(kitchen_url: str, leaks: LeakChecker) -> None:
    tools = {t.name: t for t in await load_mcp_tools_http(kitchen_url, timeout=20)}

    echo = await tools["echo"].execute({"message": "hi"})
    assert echo.text == "hi"

    add = await tools["add"].execute({"a": 2, "b": 40})
    assert add.text == "42" and add.details["structuredContent"] == {"result": 42}

    image = await tools["image"].execute({})
    assert image.content[0] == TextContent("a 1x1 png")
    assert isinstance(image.content[1], ImageContent) and image.content[1].mime_type == "image/png"

    audio = await tools["audio"].execute({})
    assert audio.text == "[audio: audio/wav, 2.0 KiB]"

    resources = await tools["resources"].execute({})
    assert resources.content[0] == TextContent("[resource link: file:///srv/README.md]")
    assert resources.content[1] == TextContent("the note")
    assert isinstance(resources.content[2], ImageContent)
    assert resources.content[3] == TextContent(
        "[resource: memo://data.bin (application/octet-stream, 2.9 KiB)]"
    )

    weather = await tools["weather"].execute({"city": "Lyon"})
    assert weather.details["structuredContent"] == {
        "city": "Lyon",
        "temperature": 21.5,
        "conditions": "sunny",
    }
    assert tools["weather"].output_schema is not None

    failed = await tools["fail"].execute({"reason": "no soup today"})
    assert failed.is_error and failed.text.startswith("[tool error] ") and "no soup today" in failed.text

    updates: list[ToolUpdate] = []

    async def collect(update: ToolUpdate) -> None:  # async callbacks work too
        updates.append(update)

    progress = await tools["progress"].execute({"steps": 2}, on_update=collect)
    assert progress.text == "done after 2 steps" and [u.message for u in updates] == ["step 1", "step 2"]


async def test_unknown_tool_is_a_readable_error_result(kitchen_http: RunningServer) -> None:
    ghost = make_mcp_agent_tool(spec("ghost"), HttpServer(kitchen_http.url))
    result = await ghost.execute({})
    assert result.is_error and "ghost" in result.text


async def test_headers_and_auth_reach_the_server(kitchen_url: str) -> None:
    class Stamp(httpx2.Auth):
        def auth_flow(self, request: httpx2.Request) -> Iterator[httpx2.Request]:
            request.headers["X-Stamp"] = "stamped"
            yield request

    server = HttpServer(kitchen_url, headers={"Authorization": "Bearer sk-test-123"}, auth=Stamp())
    header = make_mcp_agent_tool(spec("header", name={"type": "string"}), server)
    assert (await header.execute({"name": "authorization"})).text == "Bearer sk-test-123"
    assert (await header.execute({"name": "x-stamp"})).text == "stamped"


async def test_auto_finds_sse_and_remembers_it(kitchen_sse: RunningServer) -> None:
    runner = Stateless(HttpServer(kitchen_sse.url), Timeouts.from_options(20))
    listed, _ = await runner.request(list_tools)
    assert "echo" in [t.name for t in listed]
    assert runner.learned.transport == "sse"
    await runner.shared.aclose()


async def test_auto_prefers_streamable_http(kitchen_http: RunningServer) -> None:
    runner = Stateless(HttpServer(kitchen_http.url), Timeouts.from_options(20))
    listed, _ = await runner.request(list_tools)
    assert "echo" in [t.name for t in listed]
    assert runner.learned.transport == "streamable-http"
    await runner.shared.aclose()


async def test_call_timeout_and_cancellation_leave_no_connection(
    kitchen_url: str, leaks: LeakChecker
) -> None:
    slow = make_mcp_agent_tool(
        spec("slow", seconds={"type": "number"}), HttpServer(kitchen_url), timeout=1, startup_timeout=30
    )
    with pytest.raises(MCPTimeoutError) as caught:
        await slow.execute({"seconds": 30})
    assert (caught.value.phase, caught.value.tool_name) == ("call", "slow")
    # the limit that ran out is the call's timeout (not max_duration, which was not reached)
    assert caught.value.limit == 1
    assert "no result or progress for 1 s (timeout; phase: call)" in str(caught.value)
    await leaks.assert_clean()

    patient = make_mcp_agent_tool(spec("slow", seconds={"type": "number"}), HttpServer(kitchen_url))
    sleeping = anyio.Event()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: patient.execute({"seconds": 30}, on_update=lambda u: sleeping.set()))
            await sleeping.wait()
            tg.cancel_scope.cancel()


async def test_nothing_listening_is_an_mcp_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools_http(url, transport="streamable-http", timeout=10)
    assert "ConnectError" in str(caught.value) and "TaskGroup" not in str(caught.value)


@contextlib.contextmanager
def denying_server(status: int) -> Iterator[str]:
    """A plain HTTP server answering `status` to everything; yields its URL (with a secret in the query)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _deny(self) -> None:
            self.send_response(status)
            self.send_header("WWW-Authenticate", "Bearer")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_DELETE = _deny

        def log_message(self, *args: object) -> None:
            pass

    with plain_http_server(Handler) as url:
        yield f"{url}/mcp?token=sk-query-456"


@pytest.fixture
def unauthorized_url() -> Iterator[str]:
    with denying_server(401) as url:
        yield url


async def test_401_is_reported_without_secrets(unauthorized_url: str) -> None:
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools_http(
            unauthorized_url, headers={"Authorization": "Bearer sk-header-789"}, timeout=10
        )
    text = str(caught.value)
    assert "HTTP 401" in text and "auth" in text
    assert "sk-header-789" not in text and "sk-query-456" not in text


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A TCP socket that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    listener.close()


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_initialize_timeout_over_http(silent_url: str, transport: str, leaks: LeakChecker) -> None:
    with anyio.fail_after(15):
        with pytest.raises(MCPTimeoutError) as caught:
            await load_mcp_tools(HttpServer(silent_url, transport=transport), startup_timeout=1)  # type: ignore[arg-type]
    assert caught.value.phase == "initialize" and caught.value.limit == 1


def test_execute_sync_outside_a_loop(kitchen_http: RunningServer) -> None:
    echo = make_mcp_agent_tool(
        {"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
        HttpServer(kitchen_http.url, transport="streamable-http"),
    )
    assert echo.execute_sync({"message": "from a script"}).text == "from a script"


async def test_auto_tries_sse_after_a_405_and_says_so(leaks: LeakChecker) -> None:
    with denying_server(405) as url, pytest.raises(MCPError) as caught:
        await load_mcp_tools_http(url, timeout=10)
    text = str(caught.value)
    assert "Streamable HTTP first: the server answered HTTP 405" in text and "then the SSE transport" in text
    assert "sk-query-456" not in text


@pytest.mark.parametrize("status", [401, 403, 500])
async def test_auto_keeps_to_streamable_http_after_a_refusal_or_a_server_error(status: int) -> None:
    # Only a 4xx other than 401 / 403 means an SSE-only server: these are the server's answer, as they are.
    with denying_server(status) as url, pytest.raises(MCPError) as caught:
        await load_mcp_tools_http(url, timeout=10)
    text = str(caught.value)
    assert f"HTTP {status}" in text
    assert "SSE" not in text, text
