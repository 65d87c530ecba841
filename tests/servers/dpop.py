"""An MCP server behind DPoP (RFC 9449): its own authorization server, and a resource server that checks
every proof for real.

Run: ``python dpop.py`` (on ``PORT``): Streamable HTTP at ``/mcp`` (both eras), SSE at ``/sse``; the
authorization server's metadata and a client-credentials token endpoint at ``/token``. `Authority` is the
checking, usable in process too (`app(authority)`, with ``/mcp`` a plain endpoint, for httpx2's
``ASGITransport``):

- a token request with a valid proof gets a token bound to the proof's key (``token_type`` ``DPoP``);
  without a proof, a bearer token;
- a resource request must present a bound token as ``Authorization: DPoP`` with a proof whose signature,
  ``typ``, ``jwk`` (public), ``htm``, ``htu``, ``iat``, ``ath`` and key thumbprint hold and whose ``jti``
  was never seen; a bearer token goes as ``Bearer``. Else a 401 whose ``error_description`` says why;
- with ``nonce`` on, both servers ask for a nonce (``use_dpop_nonce``) when a proof has none they issued,
  and each success carries a fresh one (the last `KEPT_NONCES` stay valid).

``GET /_seen`` lists what came (method, path, headers that matter, status, reason); ``POST /_config``
sets ``algs`` (what the metadata advertises; empty: nothing) and ``nonce``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import jwt

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CLIENT_ID = "dpop-client"
CLIENT_SECRET = "dpop-client-secret-3b7e"
KEPT_NONCES = 8
ALGORITHMS = ("ES256", "ES384", "ES512", "EdDSA", "PS256", "RS256", "PS384", "RS384", "PS512", "RS512")
PROTECTED = ("/mcp", "/sse", "/messages/")
THUMBPRINT_MEMBERS = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638: the SHA-256 of the key's required members, sorted, without spaces."""
    members = {name: jwk[name] for name in THUMBPRINT_MEMBERS[jwk["kty"]]}
    return b64(hashlib.sha256(json.dumps(members, separators=(",", ":")).encode()).digest())


class Refused(Exception):
    """A proof or token the server refuses; `nonce` when the refusal asks for a nonce."""

    def __init__(self, reason: str, *, nonce: bool = False) -> None:
        super().__init__(reason)
        self.nonce = nonce


@dataclass
class Authority:
    """The checking shared by the two servers, and what they saw."""

    algs: list[str] = field(default_factory=lambda: ["ES256"])
    nonce: bool = False
    binds: bool = True  # False: a proof is checked, but the token issued is a bearer token
    nonce_value: str | None = None  # a nonce to send instead of fresh ones (which are then never valid)
    tokens: dict[str, str | None] = field(default_factory=dict)  # token -> bound key thumbprint
    jtis: set[str] = field(default_factory=set)
    nonces: dict[str, deque[str]] = field(
        default_factory=lambda: {role: deque(maxlen=KEPT_NONCES) for role in ("as", "rs")}
    )
    seen: list[dict[str, Any]] = field(default_factory=list)

    def fresh_nonce(self, role: str) -> str:
        if self.nonce_value is not None:
            return self.nonce_value
        value = f"{role}-{secrets.token_urlsafe(12)}"
        self.nonces[role].append(value)
        return value

    def check(self, proof: str | None, method: str, url: str, *, token: str | None, role: str) -> str:
        """The thumbprint of the key of a valid `proof` for `method` on `url` (presenting `token`)."""
        if not proof:
            raise Refused("no DPoP proof")
        try:
            header = jwt.get_unverified_header(proof)
        except jwt.PyJWTError:
            raise Refused("the proof is not a JWT") from None
        jwk = header.get("jwk")
        if (
            header.get("typ") != "dpop+jwt"
            or header.get("alg") not in ALGORITHMS
            or not isinstance(jwk, dict)
        ):
            raise Refused("the proof's header is not a DPoP header")
        if "d" in jwk:
            raise Refused("the proof's jwk holds a private key")
        try:
            key = jwt.PyJWK(jwk, header["alg"]).key
            claims = jwt.decode(proof, key, algorithms=[header["alg"]], options={"require": ["iat", "jti"]})
        except jwt.PyJWTError as exc:
            raise Refused(f"the proof's signature does not verify ({type(exc).__name__})") from None
        if claims.get("htm") != method:
            raise Refused("htm is not the request's method")
        if claims.get("htu") != url:
            raise Refused("htu is not the request's URL")
        if abs(time.time() - claims["iat"]) > 60:
            raise Refused("iat is too far from now")
        if token is not None and claims.get("ath") != b64(hashlib.sha256(token.encode()).digest()):
            raise Refused("ath is not the token's hash")
        jkt = thumbprint(jwk)
        if token is not None and self.tokens.get(token) != jkt:
            raise Refused("the proof's key is not the token's")
        if claims["jti"] in self.jtis:
            raise Refused("the proof's jti was used before")
        if self.nonce and claims.get("nonce") not in self.nonces[role]:
            raise Refused("a nonce is required", nonce=True)
        self.jtis.add(claims["jti"])
        return jkt

    def token(self, proof: str | None, url: str, form: dict[str, str], basic: str | None) -> dict[str, Any]:
        """The answer of the token endpoint to a client-credentials request."""
        expected = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        posted = (form.get("client_id"), form.get("client_secret")) == (CLIENT_ID, CLIENT_SECRET)
        if form.get("grant_type") != "client_credentials" or not (posted or basic == f"Basic {expected}"):
            raise Refused("invalid_client")
        jkt = self.check(proof, "POST", url, token=None, role="as") if proof else None
        token = secrets.token_urlsafe(24)
        jkt = jkt if self.binds else None
        self.tokens[token] = jkt
        return {"access_token": token, "token_type": "DPoP" if jkt else "Bearer", "expires_in": 3600}

    def resource(self, authorization: str, proof: str | None, method: str, url: str) -> None:
        """Refuse a resource request whose token or proof does not hold."""
        scheme, _, token = authorization.partition(" ")
        if token not in self.tokens:
            raise Refused("unknown token")
        bound = self.tokens[token] is not None
        if scheme.lower() != ("dpop" if bound else "bearer"):
            raise Refused(f"a {'DPoP-bound' if bound else 'bearer'} token presented as {scheme}")
        if bound:
            self.check(proof, method, url, token=token, role="rs")


async def body_of(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def answer(send: Send, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


def app(authority: Authority, mcp: ASGIApp | None = None) -> ASGIApp:
    """The servers as one ASGI app; `mcp` serves the protected paths (default: ``{}`` for any request)."""

    async def plain(scope: Scope, receive: Receive, send: Send) -> None:
        await body_of(receive)
        await answer(send, 200, {})

    inner = mcp or plain

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await inner(scope, receive, send)
            return
        headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
        base = f"http://{headers['host']}"
        path, method = scope["path"], scope["method"]
        note: dict[str, Any] = {
            "method": method,
            "path": path,
            "authorization": headers.get("authorization"),
            "dpop": headers.get("dpop"),
        }

        async def reply(
            status: int, body: Any, extra: dict[str, str] | None = None, reason: str = ""
        ) -> None:
            note.update(status=status, reason=reason)
            authority.seen.append(note)
            await answer(send, status, body, extra)

        if path == "/_seen":
            await answer(send, 200, authority.seen)
        elif path == "/_config":
            config = json.loads(await body_of(receive))
            authority.algs, authority.nonce = config["algs"], config["nonce"]
            await answer(send, 200, {})
        elif path.startswith("/.well-known/oauth-protected-resource"):
            resource = path.removeprefix("/.well-known/oauth-protected-resource") or "/mcp"
            await reply(200, {"resource": base + resource, "authorization_servers": [base]})
        elif path == "/.well-known/oauth-authorization-server":
            metadata = {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",  # never used: client credentials
                "token_endpoint": f"{base}/token",
                "response_types_supported": ["code"],
                "grant_types_supported": ["client_credentials"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            }
            if authority.algs:
                metadata["dpop_signing_alg_values_supported"] = authority.algs
            await reply(200, metadata)
        elif path == "/token" and method == "POST":
            form = dict(parse_qsl((await body_of(receive)).decode()))
            try:
                issued = authority.token(
                    headers.get("dpop"), f"{base}/token", form, headers.get("authorization")
                )
            except Refused as refused:
                error = "use_dpop_nonce" if refused.nonce else "invalid_dpop_proof"
                extra = {"DPoP-Nonce": authority.fresh_nonce("as")} if refused.nonce else {}
                await reply(400, {"error": error, "error_description": str(refused)}, extra, str(refused))
                return
            extra = {"DPoP-Nonce": authority.fresh_nonce("as")} if authority.nonce else {}
            await reply(200, issued, extra)
        elif path.startswith(PROTECTED):
            await protected(scope, receive, send, headers, base, note, reply)
        else:
            await reply(404, {"error": "not_found"})

    async def protected(
        scope: Scope, receive: Receive, send: Send, headers: dict[str, str], base: str, note: Any, reply: Any
    ) -> None:
        resource = "/sse" if scope["path"].startswith(("/sse", "/messages/")) else "/mcp"
        metadata = f'resource_metadata="{base}/.well-known/oauth-protected-resource{resource}"'
        if "authorization" not in headers:
            await reply(401, {"error": "unauthorized"}, {"WWW-Authenticate": f"DPoP {metadata}"}, "no token")
            return
        try:
            authority.resource(
                headers["authorization"], headers.get("dpop"), scope["method"], base + scope["path"]
            )
        except Refused as refused:
            error = "use_dpop_nonce" if refused.nonce else "invalid_token"
            extra = {"WWW-Authenticate": f'DPoP error="{error}", error_description="{refused}", {metadata}'}
            if refused.nonce:
                extra["DPoP-Nonce"] = authority.fresh_nonce("rs")
            await reply(401, {"error": error}, extra, str(refused))
            return
        note["reason"] = ""
        authority.seen.append(note)
        nonce = authority.fresh_nonce("rs").encode() if authority.nonce else None

        async def with_nonce(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                note["status"] = message["status"]
                if nonce is not None:
                    message["headers"] = [*message.get("headers", []), (b"dpop-nonce", nonce)]
            await send(message)

        await inner(scope, receive, with_nonce)

    return serve


def main() -> None:
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("dpop", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    streamable = server.streamable_http_app()
    sse = server.sse_app()

    async def mcp(scope: Scope, receive: Receive, send: Send) -> None:
        route = sse if scope["path"].startswith(("/sse", "/messages/")) else streamable
        await route(scope, receive, send)

    served = app(Authority(), mcp)

    async def root(scope: Scope, receive: Receive, send: Send) -> None:
        # the Streamable HTTP app's lifespan runs its session manager
        await (streamable if scope["type"] == "lifespan" else served)(scope, receive, send)

    uvicorn.run(root, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")


if __name__ == "__main__":
    main()
