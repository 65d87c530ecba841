"""`_transports.http`: what cubepi adds to the SDK's HTTP client, against real endpoints. The headers of a
callable (sync, async, or none) and a call context's auth reach the server; the credentials a request carries
(static headers, resolved ones, what an `auth` sets) never show in an error or in the HTTP stack's log lines,
which are kept; a client closes the connections no request uses."""

from __future__ import annotations

import contextlib
import http.server
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest
from conftest import PYTHON, SERVERS, Bearer, RunningServer, StartServer, plain_http_server

from cubepi import MCPError
from cubepi.mcp import HttpServer, call_context, load_mcp_tools
from cubepi.mcp._transports.http import http_client

SECRET = "tok-5f1e9a7c2b84d6e03a91"


@pytest.fixture(scope="module")
def whoami_http(http_server_factory: StartServer) -> RunningServer:
    """tests/servers/whoami.py: its ``whoami`` tool answers the Authorization and X-Tenant headers it got."""
    return http_server_factory([PYTHON, str(SERVERS / "whoami.py"), "http"], "/mcp")


async def whoami(server: HttpServer) -> dict[str, Any]:
    async with await load_mcp_tools(server, include=["whoami"], timeout=20) as tools:
        answer: dict[str, Any] = json.loads((await tools[0].execute({"user_id": "u"})).text)
    return answer


# -- what reaches the server -----------------------------------------------------------------------------


async def tenant() -> dict[str, str]:
    return {"X-Tenant": "async-acme"}


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_the_headers_of_a_callable_reach_the_server(whoami_http: RunningServer, protocol: str) -> None:
    made: list[int] = []

    def sync_headers() -> dict[str, str]:
        made.append(1)
        return {"X-Tenant": "acme"}

    answer = await whoami(HttpServer(whoami_http.url, headers=sync_headers, protocol=protocol))
    assert answer["x_tenant"] == "acme" and made
    answer = await whoami(HttpServer(whoami_http.url, headers=tenant, protocol=protocol))
    assert answer["x_tenant"] == "async-acme"
    # A callable with nothing to add this time adds nothing.
    answer = await whoami(HttpServer(whoami_http.url, headers=lambda: None, protocol=protocol))
    assert answer["x_tenant"] is None


async def test_a_failing_headers_callable_is_a_readable_error_without_the_values() -> None:
    def broken() -> dict[str, str]:
        raise ValueError(f"no token for tenant; last one was {SECRET}")

    server = HttpServer("http://127.0.0.1:1/mcp", headers=broken)
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools(server, timeout=10)
    assert str(caught.value) == (
        f"connecting to {server.describe()} failed: the headers callable raised ValueError"
    )
    assert isinstance(caught.value.__cause__, ValueError)


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_a_call_contexts_auth_replaces_the_servers(whoami_http: RunningServer, protocol: str) -> None:
    server = HttpServer(whoami_http.url, auth=Bearer("service"), protocol=protocol)
    async with await load_mcp_tools(server, include=["whoami"], timeout=20) as tools:
        with call_context(auth=Bearer("alice-oauth")):
            answer = json.loads((await tools[0].execute({"user_id": "alice"})).text)
        assert answer["authorization"] == "Bearer alice-oauth"
        answer = json.loads((await tools[0].execute({"user_id": "u"})).text)
        assert answer["authorization"] == "Bearer service"


# -- credentials stay out of errors and logs -------------------------------------------------------------


@contextlib.contextmanager
def echoing(status: int, reason: str, message: str | None) -> Iterator[str]:
    """An HTTP endpoint that answers every POST with `status` `reason` and a JSON-RPC error `message` (None:
    no body), each formatted with the request's headers (``{x-api-key}``): a server that quotes back what
    it was sent."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            headers = {key.lower(): value for key, value in self.headers.items()}
            body = b""
            if message is not None:
                error = {"code": -32603, "message": message.format_map(headers)}
                body = json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "error": error}).encode()
            self.send_response(status, reason.format_map(headers))
            if body:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    with plain_http_server(Handler) as url:
        yield f"{url}/mcp"


@pytest.mark.parametrize(
    ("server", "quoted"),
    [
        (lambda url: HttpServer(url, headers={"X-Api-Key": SECRET}), "x-api-key"),
        (lambda url: HttpServer(url, headers=lambda: {"X-Api-Key": SECRET}), "x-api-key"),
        (lambda url: HttpServer(url, auth=Bearer(SECRET)), "authorization"),
    ],
    ids=["static header", "callable's header", "auth"],
)
async def test_a_credential_quoted_back_by_the_server_is_masked(server: Any, quoted: str) -> None:
    reply = f"key {{{quoted}}} is not allowed to list"
    with echoing(200, "OK", reply) as url, pytest.raises(MCPError) as caught:
        await load_mcp_tools(server(url), timeout=10)
    text = str(caught.value)
    assert "JSON-RPC error -32603: key " in text and "*** is not allowed to list" in text, text
    assert SECRET not in text and SECRET not in str(caught.value.__cause__)


async def test_the_http_stacks_log_lines_are_kept_with_the_credentials_masked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with echoing(401, "Denied for {authorization}", None) as url:
        server = HttpServer(url, headers={"Authorization": f"Bearer {SECRET}"}, transport="streamable-http")
        with caplog.at_level(logging.DEBUG), pytest.raises(MCPError) as caught:
            await load_mcp_tools(server, timeout=10)
    assert "HTTP 401 Denied for ***" in str(caught.value)
    logged = [record.getMessage() for record in caplog.records if record.name == "httpx2"]
    assert any(line.endswith('"HTTP/1.1 401 Denied for ***"') for line in logged), logged
    assert not any(SECRET in record.getMessage() for record in caplog.records)


# -- idle connections ------------------------------------------------------------------------------------


async def test_a_client_closes_the_connections_no_request_uses() -> None:
    closed = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the connection stays open after the answer

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def finish(self) -> None:
            super().finish()
            closed.set()  # the client hung up

        def log_message(self, *args: object) -> None:
            pass

    with plain_http_server(Handler) as url:
        client = http_client(HttpServer(f"{url}/mcp"))
        async with client:
            response = await client.get(f"{url}/mcp")
            assert response.text == "ok" and not closed.is_set()
            await client.close_idle()  # type: ignore[attr-defined]
            assert await anyio.to_thread.run_sync(closed.wait, 20)
