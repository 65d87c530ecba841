"""The SDK behaviour cubepi relies on without an API for it, pinned: an SDK upgrade that changes it fails.

The `mcp` SDK reports some transport events only as text: a JSON-RPC error it makes up ("Connection
closed", "Session terminated", an HTTP status turned into "Not Found", ...). cubepi tells those apart from
errors a server chose to send by their exact (code, message) (`_errors.SDK_WORDING`, `SDK_PREFIXES`) and
reads httpx2's SSE event bound from its message (`_calls.limits.sse_limit_hit`). cubepi also calls a few
private SDK names. Each test below makes the real SDK, over a real transport (a stdio process, a local HTTP
server), produce one of these and checks it against cubepi's constant: a reworded or moved one fails the
test named after it, instead of silently changing the errors cubepi reports.
"""

from __future__ import annotations

import contextlib
import http.server
import inspect
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import mcp.client.stdio as sdk_stdio
import pytest
from anyio.abc import Process
from conftest import plain_http_server
from mcp import ClientSession, StdioServerParameters, types
from mcp.client._input_required import run_input_required_driver
from mcp.client._probe import negotiate_auto
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError as SdkError
from mcp_types.version import LATEST_MODERN_VERSION

from cubepi.mcp._calls.limits import sse_limit_hit
from cubepi.mcp._errors import (
    SDK_PREFIXES,
    SDK_WORDING,
    describe_failure,
    is_connection_closed,
    is_transport_error,
)
from cubepi.mcp._transports.stdio import StdioProcess, tracking

LIMIT = 5.0  # no step here takes more than a fraction of a second
EXITS_AT_ONCE = StdioServerParameters(command=sys.executable, args=["-c", "pass"])

Reply = Callable[["Endpoint", dict[str, Any]], None]


class Endpoint(http.server.BaseHTTPRequestHandler):
    """An MCP endpoint played by hand: each POSTed JSON-RPC message goes to the test's `reply`; a
    notification gets 202, the GET stream 405, the session's DELETE 200."""

    reply: Reply
    seen: list[tuple[dict[str, Any], dict[str, str]]]  # each message and its request headers

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        self.seen.append((message, {key.lower(): value for key, value in self.headers.items()}))
        if "id" not in message:
            self.answer(202)
        else:
            self.reply(self, message)

    def do_GET(self) -> None:
        self.answer(405)

    def do_DELETE(self) -> None:
        self.answer(200)

    def answer(
        self, status: int, body: bytes = b"", content_type: str = "text/plain", **headers: str
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def result(self, message: dict[str, Any], result: dict[str, Any], **headers: str) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        self.answer(200, body, "application/json", **headers)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def endpoint(reply: Reply) -> Iterator[tuple[str, list[tuple[dict[str, Any], dict[str, str]]]]]:
    """A local HTTP server answering POSTs with `reply`; yields its MCP URL and the messages it saw."""
    seen: list[tuple[dict[str, Any], dict[str, str]]] = []
    handler = type("Handler", (Endpoint,), {"reply": staticmethod(reply), "seen": seen})
    with plain_http_server(handler) as url:
        yield f"{url}/mcp", seen


@contextlib.asynccontextmanager
async def http_session(url: str, **options: Any) -> AsyncIterator[ClientSession]:
    """A raw SDK session over the SDK's Streamable HTTP transport (no handshake)."""
    async with streamable_http_client(url, **options) as (read, write), ClientSession(read, write) as session:
        yield session


async def ping_error(reply: Reply, **options: Any) -> SdkError:
    """The SDK's error for a ``ping`` that the endpoint answers with `reply`."""
    with endpoint(reply) as (url, _), anyio.fail_after(LIMIT):
        async with http_session(url, **options) as session:
            with pytest.raises(SdkError) as caught:
                await session.send_ping()
    return caught.value


def handshake(handler: Endpoint, message: dict[str, Any]) -> None:
    """Answer ``initialize`` as a handshake-era server, with a session id."""
    result = {
        "protocolVersion": message["params"]["protocolVersion"],
        "capabilities": {},
        "serverInfo": {"name": "by-hand", "version": "1"},
    }
    handler.result(message, result, mcp_session_id="session-1")


def wording(exc: SdkError) -> tuple[int, str]:
    return exc.code, exc.message


# -- the errors the SDK makes up, by their wording ----------------------------------------------------------


def test_every_wording_cubepi_keeps_has_a_test_here() -> None:
    """A wording added to `_errors` needs its test below (named ``test_<key>_wording`` / ``_prefix``)."""
    assert set(SDK_WORDING) == {"closed", "terminated", "http_error", "not_found", "accepted"}
    assert set(SDK_PREFIXES) == {"redirect", "sse", "content_type", "json", "sse_message"}


async def test_closed_wording_a_server_that_exits_gives_connection_closed() -> None:
    with anyio.fail_after(LIMIT):
        async with stdio_client(EXITS_AT_ONCE) as (read, write), ClientSession(read, write) as session:
            with pytest.raises(SdkError) as caught:
                await session.send_ping()
    assert wording(caught.value) == SDK_WORDING["closed"]
    assert is_connection_closed(caught.value)


async def test_not_found_wording_http_404_before_a_session() -> None:
    exc = await ping_error(lambda handler, message: handler.answer(404, b"no such endpoint"))
    assert wording(exc) == SDK_WORDING["not_found"]
    assert is_transport_error(exc)


async def test_terminated_wording_http_404_once_a_session_exists() -> None:
    def reply(handler: Endpoint, message: dict[str, Any]) -> None:
        if message["method"] == "initialize":
            handshake(handler, message)
        else:
            handler.answer(404, b"unknown session")

    with endpoint(reply) as (url, seen), anyio.fail_after(LIMIT):
        async with http_session(url) as session:
            await session.initialize()
            with pytest.raises(SdkError) as caught:
                await session.send_ping()
    assert seen[-1][1].get("mcp-session-id") == "session-1"  # the ping went out within the session
    assert wording(caught.value) == SDK_WORDING["terminated"]
    assert is_transport_error(caught.value)


async def test_http_error_wording_http_500() -> None:
    exc = await ping_error(lambda handler, message: handler.answer(500, b"boom"))
    assert wording(exc) == SDK_WORDING["http_error"]
    assert is_transport_error(exc)


async def test_accepted_wording_http_202_to_a_request() -> None:
    exc = await ping_error(lambda handler, message: handler.answer(202))
    assert wording(exc) == SDK_WORDING["accepted"]
    assert is_transport_error(exc)


async def test_redirect_prefix_a_redirect_to_another_origin() -> None:
    elsewhere = "http://elsewhere.invalid/mcp"  # never contacted: the SDK does not follow it
    exc = await ping_error(lambda handler, message: handler.answer(307, location=elsewhere))
    code, prefix = SDK_PREFIXES["redirect"]
    assert exc.code == code
    assert exc.message.startswith(prefix + elsewhere)
    assert is_transport_error(exc)


async def test_sse_prefix_an_event_stream_that_breaks_off() -> None:
    def reply(handler: Endpoint, message: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("content-length", "1000")  # promised, never sent: the stream breaks off
        handler.end_headers()
        handler.wfile.write(b": working\n\n")

    exc = await ping_error(reply)
    code, prefix = SDK_PREFIXES["sse"]
    assert exc.code == code
    assert exc.message.startswith(prefix)
    assert is_transport_error(exc)
    assert not is_connection_closed(exc)


async def test_sse_limit_wording_an_event_past_max_sse_event_size() -> None:
    def reply(handler: Endpoint, message: dict[str, Any]) -> None:
        handler.answer(200, b"event: message\ndata: " + b"x" * 8192 + b"\n\n", "text/event-stream")

    exc = await ping_error(reply, max_sse_event_size=1000)
    code, prefix = SDK_PREFIXES["sse"]
    assert exc.code == code
    assert exc.message.startswith(prefix)
    assert is_transport_error(exc)
    found = sse_limit_hit(exc.message)
    assert found is not None, f"cubepi's _SSE_LIMIT no longer matches {exc.message!r}"
    assert found.limit == 1000
    assert describe_failure(exc) == str(found)  # the session's error says the response was too large


# -- the private names cubepi uses --------------------------------------------------------------------------


async def test_private_create_platform_compatible_process_is_how_stdio_client_spawns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`_transports.stdio._install` replaces the module attribute: `stdio_client` must look it up at each
    spawn and get an anyio `Process` from it (cubepi wraps nothing else)."""
    current = sdk_stdio._create_platform_compatible_process
    assert inspect.iscoroutinefunction(current)
    spawned: list[object] = []

    async def recording(*args: Any, **kwargs: Any) -> Any:
        spawned.append(await current(*args, **kwargs))
        return spawned[-1]

    monkeypatch.setattr(sdk_stdio, "_create_platform_compatible_process", recording)
    with anyio.fail_after(LIMIT):
        async with stdio_client(EXITS_AT_ONCE):
            pass
    assert len(spawned) == 1
    assert isinstance(spawned[0], Process)


@pytest.mark.skipif(sys.platform == "win32", reason="cubepi wraps the factory on POSIX only")
async def test_private_create_platform_compatible_process_wrapper_sees_the_sdk_spawn() -> None:
    """cubepi's wrapper (`tracking` installs it) is reached by the SDK's own `stdio_client`, as
    `_transports.stdio.open_stdio` opens it."""
    info = StdioProcess()
    info.start_reading()
    says_bye = StdioServerParameters(
        command=sys.executable, args=["-c", "import sys; sys.stderr.write('bye')"]
    )
    try:
        with tracking(info), anyio.fail_after(LIMIT):
            async with stdio_client(says_bye, errlog=info.errlog):
                pass
    finally:
        tail = await info.stderr_tail()  # waits for the end of the stderr pipe
    assert info.process is not None
    assert info.returncode == 0
    assert tail == "bye"


async def test_private_absorb_tool_listing_makes_a_call_send_mcp_param_headers() -> None:
    """`_sdk.absorb_tool_listing`: a session handed a tool's definition (never listed) mirrors its
    ``x-mcp-header`` arguments into ``Mcp-Param-*`` headers."""
    tool = types.Tool(
        name="weather",
        input_schema={
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        },
    )

    def reply(handler: Endpoint, message: dict[str, Any]) -> None:
        handler.result(message, {"content": [], "resultType": "complete"})

    assert list(inspect.signature(ClientSession._absorb_tool_listing).parameters) == [
        "self",
        "result",
        "complete",
    ]
    with endpoint(reply) as (url, seen), anyio.fail_after(LIMIT):
        async with http_session(url) as session:
            session.adopt(
                types.DiscoverResult(
                    supported_versions=[LATEST_MODERN_VERSION],
                    capabilities=types.ServerCapabilities(),
                    result_type="complete",
                    ttl_ms=0,
                    cache_scope="public",
                )
            )
            session._absorb_tool_listing(types.ListToolsResult(tools=[tool]), complete=False)
            await session.call_tool("weather", {"region": "eu-west"})
    (message, headers) = seen[-1]
    assert message["method"] == "tools/call"
    assert headers.get("mcp-param-region") == "eu-west"


async def test_private_negotiate_auto_falls_back_to_the_handshake() -> None:
    """`_calls.protocol.negotiate`: ``negotiate_auto(session)`` probes ``server/discover`` and, refused,
    shakes hands."""
    assert list(inspect.signature(negotiate_auto).parameters) == ["session"]

    def reply(handler: Endpoint, message: dict[str, Any]) -> None:
        if message["method"] == "initialize":
            handshake(handler, message)
        else:
            error = {"code": -32601, "message": "Method not found"}
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode()
            handler.answer(200, body, "application/json")

    with endpoint(reply) as (url, seen), anyio.fail_after(LIMIT):
        async with http_session(url) as session:
            await negotiate_auto(session)
            assert session.initialize_result is not None
    assert [message.get("method") for message, _ in seen][:2] == ["server/discover", "initialize"]


async def test_private_run_input_required_driver_dispatches_then_retries() -> None:
    """`_calls.session.call_tool`: ``run_input_required_driver(first, dispatch=, retry=, max_rounds=)``
    answers the input requests through `dispatch`, then retries with the answers and the request state."""
    parameters = inspect.signature(run_input_required_driver).parameters
    assert list(parameters) == ["first", "dispatch", "retry", "max_rounds"]
    assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in ("dispatch", "retry"))
    ask = types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message="Which city?", requested_schema={"type": "object", "properties": {}}
        )
    )
    first = types.InputRequiredResult(input_requests={"city": ask}, request_state="state-1")
    answer = types.ElicitResult(action="accept", content={})
    retried: list[tuple[Any, Any]] = []

    async def dispatch(key: str, request: Any) -> Any:
        assert (key, request) == ("city", ask)
        return answer

    async def retry(responses: Any, state: str | None) -> types.CallToolResult:
        retried.append((responses, state))
        return types.CallToolResult(content=[])

    with anyio.fail_after(LIMIT):
        result = await run_input_required_driver(first, dispatch=dispatch, retry=retry, max_rounds=3)
    assert isinstance(result, types.CallToolResult)
    assert retried == [({"city": answer}, "state-1")]


async def test_content_type_prefix_an_answer_neither_json_nor_an_event_stream() -> None:
    exc = await ping_error(lambda handler, message: handler.answer(200, b"<html></html>", "text/html"))
    code, prefix = SDK_PREFIXES["content_type"]
    assert exc.code == code and exc.message.startswith(prefix)
    assert is_transport_error(exc)


async def test_json_prefix_a_json_answer_that_does_not_parse() -> None:
    exc = await ping_error(lambda handler, message: handler.answer(200, b"{not json", "application/json"))
    code, prefix = SDK_PREFIXES["json"]
    assert exc.code == code and exc.message.startswith(prefix)
    assert is_transport_error(exc)


async def test_sse_message_prefix_an_event_that_does_not_parse() -> None:
    def reply(handler: Endpoint, message: dict[str, Any]) -> None:
        handler.answer(200, b"event: message\ndata: {not json\n\n", "text/event-stream")

    exc = await ping_error(reply)
    code, prefix = SDK_PREFIXES["sse_message"]
    assert exc.code == code and exc.message.startswith(prefix)
    assert is_transport_error(exc)


async def test_private_send_raw_sends_a_task_call_and_returns_the_task_unchecked() -> None:
    """`_sdk.send_raw`: ``ClientSession._stamp`` and ``_dispatcher.send_raw_request`` send a
    ``tools/call`` with ``task`` (with the session's headers) and hand back the ``CreateTaskResult`` that
    ``send_request`` refuses as a 2025-11-25 ``CallToolResult``."""
    from pydantic import ValidationError

    from cubepi.mcp._calls.core_tasks import call_as_task

    task = {"taskId": "t1", "status": "working", "createdAt": "now", "lastUpdatedAt": "now", "ttl": None}

    def reply(handler: Endpoint, message: dict[str, Any]) -> None:
        if message["method"] == "initialize":
            handshake(handler, message)
        else:
            handler.result(message, {"task": task})

    assert list(inspect.signature(ClientSession.send_request).parameters)[:2] == ["self", "request"]
    with endpoint(reply) as (url, seen), anyio.fail_after(LIMIT):
        async with http_session(url) as session:
            await session.initialize()
            assert callable(session._stamp) and callable(session._dispatcher.send_raw_request)
            created = await call_as_task(session, "research", {"topic": "tides"}, None)
            params = types.CallToolRequestParams(name="research", task=types.TaskMetadata())
            with pytest.raises(ValidationError):  # why the private path: the public one refuses a task
                await session.send_request(types.CallToolRequest(params=params), types.CallToolResult)
    assert isinstance(created, types.CreateTaskResult) and created.task.task_id == "t1"
    (message, headers) = seen[-2]
    assert message["params"] == {"name": "research", "arguments": {"topic": "tides"}, "task": {}}
    assert headers.get("mcp-protocol-version") == session.protocol_version
    assert headers.get("mcp-session-id") == "session-1"
