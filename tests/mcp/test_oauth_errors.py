"""A refused OAuth token request is the error the user sees, as the SDK words it: not the MCP endpoint's.

An OAuth provider (`auth=`) makes its own requests (metadata, token) through the client a session uses.
cubepi once noted their 4xx as the MCP endpoint's status: a token endpoint's HTTP 400 made the ``"auto"``
transport fall back to SSE, whose GET got a 404, and the user read "the server answered HTTP 404 Not
Found" instead of the token error. Here one local HTTP server plays both the MCP endpoint (401 with
``WWW-Authenticate: Bearer resource_metadata=...``) and the authorization server, whose token endpoint
refuses the grant; a real SDK provider runs its real flow against it, through cubepi and through the raw
SDK, and both must report the same token error.
"""

from __future__ import annotations

import http.server
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from conftest import LeakChecker, Storage, plain_http_server
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, OAuthTokenError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

from cubepi import MCPError
from cubepi.mcp import load_mcp_tools_http

CLIENT_ID = "cubepi-test-client"
CLIENT_SECRET = "client-secret-7f3a9c"
REDIRECT_URI = "http://localhost:3000/callback"  # never served: the test hands the code straight back
METADATA = "/.well-known/oauth-protected-resource/mcp"
REFUSAL = {"error": "unsupported_grant_type"}


class AuthorizingServer(http.server.BaseHTTPRequestHandler):
    """The MCP endpoint at ``/mcp`` (every POST: 401 and where its metadata is) and its authorization
    server (metadata, and a token endpoint that refuses the grant); anything else, such as the SSE
    transport's ``GET /mcp``, is a 404. Every request is noted in `seen`."""

    seen: list[tuple[str, str]]

    def do_GET(self) -> None:
        self.seen.append(("GET", self.path))
        base = f"http://{self.headers['host']}"
        if self.path == METADATA:
            self.answer(200, {"resource": f"{base}/mcp", "authorization_servers": [base]})
        elif self.path == "/.well-known/oauth-authorization-server":
            self.answer(
                200,
                {
                    "issuer": base,
                    "authorization_endpoint": f"{base}/authorize",
                    "token_endpoint": f"{base}/token",
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "client_credentials"],
                    "code_challenge_methods_supported": ["S256"],
                },
            )
        else:
            self.answer(404, {"error": "not_found"})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.seen.append(("POST", self.path))
        base = f"http://{self.headers['host']}"
        if self.path == "/mcp":
            challenge = f'Bearer resource_metadata="{base}{METADATA}"'
            self.answer(401, {"error": "unauthorized"}, www_authenticate=challenge)
        elif self.path == "/token":
            self.answer(400, REFUSAL)
        else:
            self.answer(404, {"error": "not_found"})

    def answer(self, status: int, body: dict[str, Any], **headers: str) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """The server's base URL, and the requests it got."""
    seen: list[tuple[str, str]] = []
    with plain_http_server(type("Handler", (AuthorizingServer,), {"seen": seen})) as base:
        yield base, seen


def authorization_code(url: str) -> OAuthClientProvider:
    """Authorization code with PKCE for a pre-registered client; the user approves at once."""
    state: list[str | None] = []

    async def redirect(authorization_url: str) -> None:
        state.append(parse_qs(urlsplit(authorization_url).query).get("state", [None])[0])

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code="code-1", state=state.pop())

    registered = OAuthClientInformationFull(
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        redirect_uris=[REDIRECT_URI],
        token_endpoint_auth_method="client_secret_basic",
    )
    metadata = OAuthClientMetadata(
        redirect_uris=[REDIRECT_URI], grant_types=["authorization_code"], response_types=["code"]
    )
    return OAuthClientProvider(
        url, metadata, Storage(registered), redirect_handler=redirect, callback_handler=callback
    )


def client_credentials(url: str) -> OAuthClientProvider:
    issuer = f"{urlsplit(url).scheme}://{urlsplit(url).netloc}"
    return ClientCredentialsOAuthProvider(
        url, Storage(), client_id=CLIENT_ID, client_secret=CLIENT_SECRET, issuer=issuer
    )


FLOWS = pytest.mark.parametrize("provider", [client_credentials, authorization_code])


def chain(exc: BaseException) -> list[BaseException]:
    """`exc` and its causes."""
    found = [exc]
    while found[-1].__cause__ is not None:
        found.append(found[-1].__cause__)
    return found


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside a (nested) exception group, or `exc` itself."""
    subs = getattr(exc, "exceptions", None)
    return [leaf for sub in subs for leaf in leaves(sub)] if isinstance(subs, tuple) else [exc]


@FLOWS
async def test_the_token_endpoints_refusal_is_the_error(
    server: tuple[str, list[tuple[str, str]]], provider: Any, leaks: LeakChecker
) -> None:
    base, seen = server
    url = f"{base}/mcp"
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools_http(url, auth=provider(url), timeout=10)
    text = str(caught.value)
    token_errors = [exc for exc in chain(caught.value) if isinstance(exc, OAuthTokenError)]
    assert token_errors, f"no OAuthTokenError behind {text!r}"
    assert "Token exchange failed (400)" in text and "unsupported_grant_type" in text
    # Not the MCP endpoint's error, and no SSE attempt: the token refusal ended the load.
    assert "HTTP 404" not in text and "SSE" not in text  # (the port may hold "404")
    assert ("POST", "/token") in seen
    assert ("GET", "/mcp") not in seen
    assert CLIENT_SECRET not in text


@FLOWS
async def test_the_raw_sdk_raises_the_same_token_error(
    server: tuple[str, list[tuple[str, str]]], provider: Any
) -> None:
    base, _ = server
    url = f"{base}/mcp"
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools_http(url, auth=provider(url), timeout=10)
    (ours,) = [exc for exc in chain(caught.value) if isinstance(exc, OAuthTokenError)]

    with pytest.raises(Exception) as raw:  # an exception group, from the transport's task group
        async with (
            httpx2.AsyncClient(auth=provider(url)) as http,
            Client(streamable_http_client(url, http_client=http), mode="auto") as client,
        ):
            await client.list_tools()
    (theirs,) = [exc for exc in leaves(raw.value) if isinstance(exc, OAuthTokenError)]
    assert str(theirs) == str(ours)
    assert json.dumps(REFUSAL) in str(theirs)
