"""`_calls.protocol`: which protocol settings are accepted, what a learned protocol says (tasks, one request,
the tools whose calls need their definition), and how a session starts, against a scripted HTTP endpoint that
answers each JSON-RPC method as a test says (refused probes, a stale status, a handshake-era server)."""

from __future__ import annotations

import contextlib
import http.server
import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import plain_http_server
from mcp import types
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from cubepi import MCPError, UserError
from cubepi.mcp import HttpServer, StdioServer, load_mcp_tools
from cubepi.mcp._calls.protocol import TASKS_EXTENSION, Learned, Protocol, needs_definition

MODERN = MODERN_PROTOCOL_VERSIONS[-1]
HANDSHAKE = HANDSHAKE_PROTOCOL_VERSIONS[-1]


# -- protocol settings ------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["auto", "legacy", *MODERN_PROTOCOL_VERSIONS])
def test_every_setting_the_sdk_speaks_is_accepted(protocol: str) -> None:
    assert StdioServer("server", protocol=protocol).protocol == protocol
    assert HttpServer("http://127.0.0.1:1/mcp", protocol=protocol).protocol == protocol


@pytest.mark.parametrize("protocol", ["2025-06-18", "latest", 2026, None])
def test_an_unknown_setting_is_a_user_error_that_lists_the_known_ones(protocol: Any) -> None:
    with pytest.raises(UserError) as caught:
        StdioServer("server", protocol=protocol)
    known = ", ".join(repr(v) for v in ("auto", "legacy", *MODERN_PROTOCOL_VERSIONS))
    assert str(caught.value) == f"protocol must be one of {known}; got {protocol!r}"


# -- what a learned protocol says -------------------------------------------------------------------------


def discover(**capabilities: Any) -> types.DiscoverResult:
    return types.DiscoverResult(
        supported_versions=[MODERN],
        capabilities=types.ServerCapabilities(**capabilities),
        result_type="complete",
        instructions="use the tools wisely",
    )


def test_a_protocol_offers_tasks_only_when_its_discover_result_lists_the_extension() -> None:
    assert Protocol(MODERN, discover(extensions={TASKS_EXTENSION: {}})).offers_tasks
    assert not Protocol(MODERN, discover(extensions={"io.example/other": {}})).offers_tasks
    assert not Protocol(MODERN, discover()).offers_tasks  # no extensions at all
    assert not Protocol(HANDSHAKE).offers_tasks  # the handshake era has no discover result


def test_the_instructions_do_not_make_another_protocol() -> None:
    # A server whose instructions vary from session to session still speaks the same protocol: a list
    # does not take each session for news (and rebuild its call path).
    assert Protocol(HANDSHAKE, instructions="first") == Protocol(HANDSHAKE, instructions="second")
    assert Protocol(HANDSHAKE) != Protocol(MODERN, discover())


def test_a_call_is_one_request_only_for_2026_over_streamable_http() -> None:
    stateless, handshake = Protocol(MODERN, discover()), Protocol(HANDSHAKE)
    assert Learned(stateless, "streamable-http").one_request
    assert not Learned(stateless, "sse").one_request
    assert not Learned(stateless, "stdio").one_request
    assert not Learned(handshake, "streamable-http").one_request
    assert not Learned(None, "streamable-http").one_request
    assert not Learned(stateless, None).one_request


def tool(schema: dict[str, Any], task_support: str | None = None) -> types.Tool:
    execution = types.ToolExecution(task_support=task_support) if task_support else None
    return types.Tool(name="t", input_schema=schema, execution=execution)


PLAIN = {"type": "object", "properties": {"region": {"type": "string"}}}
MIRRORED = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}


def test_the_tools_whose_calls_need_their_definition() -> None:
    assert needs_definition(tool(PLAIN, task_support="required")) is True
    assert needs_definition(tool(MIRRORED)) is True
    assert needs_definition(tool(PLAIN)) is False
    assert needs_definition(tool(PLAIN, task_support="optional")) is False


# -- how a session starts, against a scripted endpoint ----------------------------------------------------

Answer = tuple[int, dict[str, str], bytes]


def jsonrpc(message_id: Any, **result_or_error: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": message_id, **result_or_error}).encode()


@contextlib.contextmanager
def scripted(answers: dict[str, Any]) -> Iterator[tuple[str, list[str]]]:
    """An HTTP endpoint that answers each JSON-RPC method as `answers` says (a status, or a callable of the
    request id giving status, headers and body), a handshake-era server's answers otherwise; yields its URL
    and the list of the methods it was sent."""
    methods: list[str] = []

    def default(method: str, message_id: Any) -> Answer:
        json_type = {"Content-Type": "application/json"}
        if method == "initialize":
            result = {
                "protocolVersion": HANDSHAKE,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "scripted", "version": "1"},
            }
            return 200, json_type, jsonrpc(message_id, result=result)
        if method == "tools/list":
            echo = {"name": "echo", "inputSchema": {"type": "object", "properties": {}}}
            return 200, json_type, jsonrpc(message_id, result={"tools": [echo]})
        if method == "tools/call":
            result = {"content": [{"type": "text", "text": "called"}]}
            return 200, json_type, jsonrpc(message_id, result=result)
        if message_id is None:  # a notification
            return 202, {}, b""
        return 200, json_type, jsonrpc(message_id, error={"code": -32601, "message": "Method not found"})

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            method, message_id = message.get("method", ""), message.get("id")
            methods.append(method)
            plan = answers.get(method)
            if plan is None:
                status, headers, body = default(method, message_id)
            elif callable(plan):
                status, headers, body = plan(message_id)
            else:
                status, headers, body = plan, {}, b""
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._empty(405)

        def do_DELETE(self) -> None:
            self._empty(200)

        def _empty(self, status: int) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    with plain_http_server(Handler) as url:
        yield f"{url}/mcp", methods


def redirect(status: int) -> Any:
    def answer(message_id: Any) -> Answer:
        return status, {"Location": "http://127.0.0.1:1/elsewhere"}, b""

    return answer


def error_at(status: int) -> Any:
    """`status` with a JSON-RPC error in the body (what the SDK takes as the server's answer)."""

    def answer(message_id: Any) -> Answer:
        body = jsonrpc(message_id, error={"code": -32601, "message": "Method not found"})
        return status, {"Content-Type": "application/json"}, body

    return answer


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        (401, "answered HTTP 401 Unauthorized (check the headers / auth)"),
        (403, "answered HTTP 403 Forbidden (check the headers / auth)"),
        (redirect(307), "answered HTTP 307 Temporary Redirect (a redirect to another origin is not followed"),
        (redirect(308), "answered HTTP 308 Permanent Redirect (a redirect to another origin is not followed"),
        (error_at(399), "returned JSON-RPC error -32601: Method not found"),  # the top of the 3xx class
    ],
    ids=["401", "403", "307", "308", "399"],
)
async def test_a_refused_probe_is_the_error_and_no_handshake_follows(answer: Any, shown: str) -> None:
    """A probe refused for its credentials or sent elsewhere says nothing of the server's era: the load
    fails with that answer, and the server never gets an ``initialize`` (it would refuse it the same)."""
    with scripted({"server/discover": answer}) as (url, methods), pytest.raises(MCPError) as caught:
        await load_mcp_tools(HttpServer(url, transport="streamable-http"), timeout=10)
    assert f"failed: the server {shown}" in str(caught.value)
    assert methods == ["server/discover"]


async def test_a_probe_refused_with_another_status_gets_the_handshake() -> None:
    """An HTTP 400 to ``server/discover`` is a handshake-era server's answer: it gets ``initialize``, and
    once the list knows its era, a call's session shakes hands without probing again."""
    with scripted({"server/discover": 400}) as (url, methods):
        async with await load_mcp_tools(HttpServer(url, transport="streamable-http"), timeout=10) as tools:
            assert [t.name for t in tools] == ["echo"]
            assert methods[:4] == ["server/discover", "initialize", "notifications/initialized", "tools/list"]
            methods.clear()
            assert (await tools[0].execute({})).text == "called"
    assert methods[:3] == ["initialize", "notifications/initialized", "tools/call"]


async def test_legacy_never_probes() -> None:
    with scripted({}) as (url, methods):
        server = HttpServer(url, transport="streamable-http", protocol="legacy")
        async with await load_mcp_tools(server, timeout=10) as tools:
            assert (await tools[0].execute({})).text == "called"
    assert "server/discover" not in methods
    assert methods[:3] == ["initialize", "notifications/initialized", "tools/list"]


async def test_the_probes_refusal_is_not_blamed_for_a_later_failure() -> None:
    """The probe's HTTP 400 is forgotten once the handshake is sent: when the listing then gets an answer
    that is no JSON-RPC at all, the error says so, not "HTTP 400"."""

    def html(message_id: Any) -> Answer:
        return 200, {"Content-Type": "text/html"}, b"<html>maintenance</html>"

    answers = {"server/discover": 400, "tools/list": html}
    with scripted(answers) as (url, methods), pytest.raises(MCPError) as caught:
        await load_mcp_tools(HttpServer(url, transport="streamable-http"), timeout=10)
    text = str(caught.value)
    assert "the server sent a malformed answer: Unexpected content type: text/html" in text, text
    assert "HTTP 400" not in text
    assert methods[:2] == ["server/discover", "initialize"]
