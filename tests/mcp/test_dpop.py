"""DPoP (RFC 9449): tokens bound to the client's key, checked for real by tests/servers/dpop.py.

The server's authorization server issues a token bound to the key of the proof on the token request; its
resource server refuses a bound token without a valid proof (signature, ``htm``/``htu``/``ath``, the
token's key, a ``jti`` never seen) and, with nonces on, asks for one. Most tests run the real SDK
client-credentials provider through cubepi against the server on a port; the rest drive a `DPoP`
with httpx2 against the same checks in process (`dpop.app` over ``ASGITransport``).
"""

from __future__ import annotations

import json
import logging
import pickle
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from conftest import PYTHON, SERVERS, StartServer, Storage
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa, x25519
from jwt.algorithms import ECAlgorithm
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

from cubepi import MCPError, UserError
from cubepi.mcp import DPoP, HttpServer, call_context, load_mcp_tools, load_mcp_tools_http
from cubepi.mcp._lockfile import dumps, lock_servers
from cubepi.mcp._transports.dpop import with_dpop

sys.path.insert(0, str(SERVERS))
import dpop  # tests/servers/dpop.py: the checks, for the in-process tests

ERAS = {"2026-07-28": "auto", "handshake": "legacy"}


def provider(url: str) -> ClientCredentialsOAuthProvider:
    """The SDK's client-credentials provider for the server at `url`, as a user would make it."""
    issuer = str(httpx2.URL(url).copy_with(path="/"))[:-1]
    return ClientCredentialsOAuthProvider(
        url, Storage(), client_id=dpop.CLIENT_ID, client_secret=dpop.CLIENT_SECRET, issuer=issuer
    )


class Server:
    """The running tests/servers/dpop.py: its base URL, its settings, and what it saw."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.mark = 0

    async def configure(self, algs: list[str], nonce: bool = False) -> None:
        """Set what the metadata advertises and whether nonces are required; `seen` starts from here."""
        async with httpx2.AsyncClient() as http:
            await http.post(f"{self.base}/_config", json={"algs": algs, "nonce": nonce})
            self.mark = len((await http.get(f"{self.base}/_seen")).json())

    async def seen(self) -> list[dict[str, Any]]:
        async with httpx2.AsyncClient() as http:
            return list((await http.get(f"{self.base}/_seen")).json()[self.mark :])


@pytest.fixture(scope="module")
def dpop_server(http_server_factory: StartServer) -> Server:
    return Server(http_server_factory([PYTHON, str(SERVERS / "dpop.py")], "").url)


def claims(proof: str) -> dict[str, Any]:
    return dict(jwt.decode(proof, options={"verify_signature": False}))


def token_requests(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in seen if entry["path"] == "/token"]


def resource_requests(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in seen if entry["path"].startswith(dpop.PROTECTED) and entry["authorization"]]


@pytest.mark.parametrize("way", ["2026-07-28", "handshake", "sse", "connection"])
async def test_every_request_carries_its_own_proof_and_a_nonce_costs_one_retry(
    dpop_server: Server, way: str
) -> None:
    await dpop_server.configure(["ES256"], nonce=True)
    path = "/sse" if way == "sse" else "/mcp"
    server = HttpServer(
        dpop_server.base + path, auth=provider(dpop_server.base + path), protocol=ERAS.get(way, "auto")
    )
    if way == "connection":
        async with server.connect(timeout=10) as connection:
            tools = await load_mcp_tools(connection)
            answers = [await tools[0].execute({"a": 1, "b": b}) for b in (2, 3)]
    else:
        async with await load_mcp_tools(server, timeout=10) as tools:
            answers = [await tools[0].execute({"a": 1, "b": b}) for b in (2, 3)]
    assert [answer.content[0].text for answer in answers] == ["3", "4"]  # type: ignore[union-attr]

    seen = await dpop_server.seen()
    # The authorization server asked for a nonce once, and the retry with it got the token.
    assert [(entry["status"], entry["reason"]) for entry in token_requests(seen)] == [
        (400, "a nonce is required"),
        (200, ""),
    ]
    # Every MCP request presented the token as DPoP with a proof; the resource server asked for its
    # nonce once, and the nonces of its answers kept every later request from being asked again.
    presented = resource_requests(seen)
    assert all(entry["authorization"].startswith("DPoP ") and entry["dpop"] for entry in presented)
    assert [entry["reason"] for entry in presented if entry["reason"]] == ["a nonce is required"]
    proofs = [entry["dpop"] for entry in [*token_requests(seen), *presented]]
    assert len({claims(proof)["jti"] for proof in proofs}) == len(proofs)
    assert {jwt.get_unverified_header(proof)["alg"] for proof in proofs} == {"ES256"}


async def test_a_stolen_token_is_useless_without_the_key(dpop_server: Server) -> None:
    await dpop_server.configure(["ES256"])
    url = dpop_server.base + "/mcp"
    async with await load_mcp_tools_http(url, auth=provider(url), timeout=10) as tools:
        await tools[0].execute({"a": 1, "b": 2})
    last = resource_requests(await dpop_server.seen())[-1]
    assert last["status"] == 200 and last["reason"] == ""
    token = last["authorization"].removeprefix("DPoP ")
    thief = ec.generate_private_key(ec.SECP256R1())
    their_proof = jwt.encode(
        {**claims(last["dpop"]), "jti": "their-own"},
        thief,
        algorithm="ES256",
        headers={"typ": "dpop+jwt", "jwk": ECAlgorithm.to_jwk(thief.public_key(), as_dict=True)},
    )
    attempts = {
        "no DPoP proof": (url, {"Authorization": f"DPoP {token}"}),
        "presented as Bearer": (url, {"Authorization": f"Bearer {token}"}),
        "jti was used before": (url, {"Authorization": f"DPoP {token}", "DPoP": last["dpop"]}),
        "htu is not": (
            dpop_server.base + "/messages/",
            {"Authorization": f"DPoP {token}", "DPoP": last["dpop"]},
        ),
        "key is not the token's": (url, {"Authorization": f"DPoP {token}", "DPoP": their_proof}),
    }
    async with httpx2.AsyncClient() as http:
        for reason, (target, headers) in attempts.items():
            refused = await http.post(target, headers=headers, json={})
            assert refused.status_code == 401, reason
            assert reason in refused.headers["WWW-Authenticate"]


@pytest.mark.parametrize(
    ("algs", "mode", "proof_alg"),
    [
        ([], None, None),  # nothing advertised: bearer tokens, as before
        ([], "required", "ES256"),
        (["ES256"], "off", None),
        (["RS256", "ES384"], None, "ES384"),  # a generated key: the best algorithm the server takes
    ],
)
async def test_the_mode_and_the_servers_algorithms_decide(
    dpop_server: Server, algs: list[str], mode: Any, proof_alg: str | None
) -> None:
    await dpop_server.configure(algs)
    url = dpop_server.base + "/mcp"
    oauth = provider(url)
    async with await load_mcp_tools_http(
        url, auth=oauth if mode is None else DPoP(oauth, mode=mode)
    ) as tools:
        assert (await tools[0].execute({"a": 2, "b": 2})).content[0].text == "4"  # type: ignore[union-attr]
    seen = await dpop_server.seen()
    (token_request,) = token_requests(seen)
    presented = resource_requests(seen)
    if proof_alg is None:
        assert token_request["dpop"] is None
        assert all(entry["authorization"].startswith("Bearer ") and not entry["dpop"] for entry in presented)
    else:
        assert jwt.get_unverified_header(token_request["dpop"])["alg"] == proof_alg
        assert all(entry["authorization"].startswith("DPoP ") for entry in presented)
    assert all(entry["status"] == 200 for entry in presented)


async def test_a_call_contexts_provider_and_a_shared_one_get_dpop_too(dpop_server: Server) -> None:
    await dpop_server.configure(["ES256"])
    url = dpop_server.base + "/mcp"
    shared, theirs = provider(url), provider(url)
    async with await load_mcp_tools_http(url, auth=shared) as tools:
        with call_context(auth=theirs):
            await tools[0].execute({"a": 1, "b": 1})
    async with await load_mcp_tools_http(url, auth=shared) as again:  # the same key, so the same token
        await again[0].execute({"a": 1, "b": 1})
    seen = await dpop_server.seen()
    assert len(token_requests(seen)) == 2 and all(entry["dpop"] for entry in token_requests(seen))
    presented = resource_requests(seen)
    assert len({entry["authorization"] for entry in presented}) == 2
    assert all(entry["authorization"].startswith("DPoP ") and entry["status"] == 200 for entry in presented)


async def test_no_key_material_or_token_in_any_output(
    dpop_server: Server, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await dpop_server.configure(["ES256"], nonce=True)
    key = ec.generate_private_key(ec.SECP256R1())
    private = ECAlgorithm.to_jwk(key, as_dict=True)["d"]
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    pem_lines = [line for line in pem.decode().splitlines() if "PRIVATE KEY" not in line]
    (tmp_path / "key.pem").write_bytes(pem)
    url = dpop_server.base + "/mcp"
    auth = DPoP(provider(url), key=key)
    outputs: list[str] = []
    caplog.set_level(logging.DEBUG)
    lock = dumps(await lock_servers([("dpop", HttpServer(url, auth=auth))], timeout=10))
    async with await load_mcp_tools_http(url, auth=auth, lock=json.loads(lock)) as tools:
        await tools[0].execute({"a": 1, "b": 2})
        outputs += [repr(tools), repr(tools[0]), repr(HttpServer(url, auth=auth)), repr(auth)]
    token = resource_requests(await dpop_server.seen())[-1]["authorization"].removeprefix("DPoP ")
    await dpop_server.configure(["PS256"])  # an algorithm the key does not sign with
    with pytest.raises(MCPError) as refused:
        await load_mcp_tools_http(url, auth=DPoP(provider(url), key=key, mode="required"))
    error: BaseException | None = refused.value
    while error is not None:
        outputs.append(str(error))
        error = error.__cause__
    assert "none of which the DPoP key signs (ES256)" in outputs[-2]
    outputs += [caplog.text, lock]
    outputs.append(pickle.dumps(DPoP(provider(url), key=tmp_path / "key.pem")).decode("latin-1"))
    with pytest.raises(TypeError, match="never leaves its process"):
        pickle.dumps(auth)

    assert "DPoP(ClientCredentialsOAuthProvider, key=<given>, mode='auto')" in outputs
    for text in outputs:
        assert private not in text and token not in text
        assert not any(line in text for line in pem_lines)


# In process: a `DPoP` over httpx2, against the same checks.

BASE = "http://dpop.test"


@pytest.fixture
def authority() -> dpop.Authority:
    return dpop.Authority()


@pytest.fixture
async def http(authority: dpop.Authority) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=dpop.app(authority))) as client:
        yield client


async def post(http: httpx2.AsyncClient, auth: httpx2.Auth) -> httpx2.Response:
    return await http.post(f"{BASE}/mcp", json={}, auth=auth)


async def test_required_refuses_a_bearer_token(http: httpx2.AsyncClient, authority: dpop.Authority) -> None:
    authority.binds = False
    with pytest.raises(Exception, match=r"issued a 'Bearer' token, not a DPoP-bound one") as refused:
        await post(http, DPoP(provider(f"{BASE}/mcp"), mode="required"))
    assert type(refused.value).__name__ == "OAuthTokenError"
    # "auto" takes it as the bearer token it is
    assert (await post(http, DPoP(provider(f"{BASE}/mcp")))).status_code == 200


@pytest.mark.parametrize("nonce", ["has space", "x" * 513, 'quote"d'])
async def test_a_malformed_nonce_is_not_used(
    http: httpx2.AsyncClient, authority: dpop.Authority, nonce: str
) -> None:
    authority.nonce, authority.nonce_value = True, nonce
    with pytest.raises(Exception, match=r"Token exchange failed \(400\)"):
        await post(http, DPoP(provider(f"{BASE}/mcp")))
    requests = token_requests(authority.seen)
    assert len(requests) == 1 and "nonce" not in claims(requests[0]["dpop"])


async def test_a_nonce_never_accepted_costs_one_retry_not_more(
    http: httpx2.AsyncClient, authority: dpop.Authority
) -> None:
    authority.nonce, authority.nonce_value = True, "never-valid"
    with pytest.raises(Exception, match=r"Token exchange failed \(400\)"):
        await post(http, DPoP(provider(f"{BASE}/mcp")))
    requests = token_requests(authority.seen)
    assert [claims(entry["dpop"]).get("nonce") for entry in requests] == [None, "never-valid"]


async def test_the_resource_servers_nonce_is_kept_for_the_next_requests(
    http: httpx2.AsyncClient, authority: dpop.Authority
) -> None:
    authority.nonce = True
    auth = DPoP(provider(f"{BASE}/mcp"))
    for _ in range(3):
        assert (await post(http, auth)).status_code == 200
    reasons = [entry["reason"] for entry in resource_requests(authority.seen)]
    assert reasons == ["a nonce is required", "", "", ""]


@pytest.mark.parametrize(
    ("make_key", "algs", "expected"),
    [
        (lambda: ec.generate_private_key(ec.SECP384R1()), ["ES256", "ES384"], "ES384"),
        (lambda: ec.generate_private_key(ec.SECP521R1()), None, "ES512"),
        (lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048), ["RS256", "PS256"], "PS256"),
        (lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048), ["RS256"], "RS256"),
        (ed25519.Ed25519PrivateKey.generate, ["EdDSA"], "EdDSA"),
    ],
)
async def test_a_given_key_signs_with_its_own_algorithm(
    http: httpx2.AsyncClient, authority: dpop.Authority, make_key: Any, algs: list[str] | None, expected: str
) -> None:
    authority.algs = algs or []
    mode = "required" if algs is None else "auto"
    assert (await post(http, DPoP(provider(f"{BASE}/mcp"), key=make_key(), mode=mode))).status_code == 200
    (request,) = token_requests(authority.seen)
    assert jwt.get_unverified_header(request["dpop"])["alg"] == expected


@pytest.mark.parametrize("algs", [["ES512"], ["PS256"], ["EdDSA"], ["RS256"]])
async def test_a_generated_key_uses_an_algorithm_the_server_lists(
    http: httpx2.AsyncClient, authority: dpop.Authority, algs: list[str]
) -> None:
    authority.algs = algs
    assert (await post(http, DPoP(provider(f"{BASE}/mcp")))).status_code == 200
    (request,) = token_requests(authority.seen)
    assert jwt.get_unverified_header(request["dpop"])["alg"] == algs[0]


async def test_auto_with_nothing_in_common_sends_no_proof(
    http: httpx2.AsyncClient, authority: dpop.Authority
) -> None:
    authority.algs = ["HS256"]
    assert (await post(http, DPoP(provider(f"{BASE}/mcp")))).status_code == 200
    (request,) = token_requests(authority.seen)
    assert request["dpop"] is None


async def test_a_key_file_is_read_on_first_use(
    http: httpx2.AsyncClient, authority: dpop.Authority, tmp_path: Path
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "dpop.pem"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    auth = DPoP(provider(f"{BASE}/mcp"), key=path)
    assert repr(auth) == "DPoP(ClientCredentialsOAuthProvider, key=<PEM file 'dpop.pem'>, mode='auto')"
    assert (await post(http, auth)).status_code == 200
    (request,) = token_requests(authority.seen)
    public = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    assert jwt.get_unverified_header(request["dpop"])["jwk"] == public
    copy = pickle.loads(pickle.dumps(auth))
    assert isinstance(copy, DPoP) and repr(copy) == repr(auth)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "could not be read"),
        (b"not a key", "holds no unencrypted PEM private key"),
        ("encrypted", "holds no unencrypted PEM private key"),
    ],
)
async def test_a_bad_key_file_is_a_user_error_naming_the_file(
    http: httpx2.AsyncClient, tmp_path: Path, content: Any, message: str
) -> None:
    path = tmp_path / "dpop.pem"
    if content == "encrypted":
        content = ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret-passphrase"),
        )
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UserError, match=message) as refused:
        await post(http, DPoP(provider(f"{BASE}/mcp"), key=str(path)))
    assert str(path) in str(refused.value) and refused.value.__cause__ is None


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (x25519.X25519PrivateKey.generate(), "got X25519PrivateKey"),
        (rsa.generate_private_key(public_exponent=65537, key_size=1024), "2048 bits or more"),
        (ec.generate_private_key(ec.SECP256K1()), "P-256, P-384, P-521"),
        ("not-an-auth", None),
    ],
)
def test_what_dpop_refuses_to_be_built_with(key: Any, message: str | None) -> None:
    if message is None:
        with pytest.raises(UserError, match=r"wraps an httpx2\.Auth"):
            DPoP(key)
        with pytest.raises(UserError, match="mode must be one of auto, required, off"):
            DPoP(httpx2.BasicAuth("u", "p"), mode="always")  # type: ignore[arg-type]
        return
    with pytest.raises(UserError, match=message):
        DPoP(httpx2.BasicAuth("u", "p"), key=key)


def test_travelling_a_generated_key_stays_behind() -> None:
    auth = DPoP(provider(f"{BASE}/mcp"), mode="required")
    assert repr(auth) == "DPoP(ClientCredentialsOAuthProvider, key=<generated>, mode='required')"
    signer = auth._signer()
    assert signer is not None
    copy = pickle.loads(pickle.dumps(auth))
    assert copy.mode == "required" and copy._state.signer is None
    assert copy._signer().jwk != signer.jwk  # type: ignore[union-attr]


def test_a_server_whose_auth_has_a_key_object_travels_without_it() -> None:
    server = HttpServer(
        f"{BASE}/mcp", auth=DPoP(provider(f"{BASE}/mcp"), key=ec.generate_private_key(ec.SECP256R1()))
    )
    copy = pickle.loads(pickle.dumps(server))
    with pytest.raises(UserError, match="never leaves its process"):
        copy.check_travelled()


def test_dpop_is_for_async_clients() -> None:
    transport = httpx2.MockTransport(lambda _: httpx2.Response(200))
    with httpx2.Client(transport=transport) as client, pytest.raises(RuntimeError, match="async client"):
        client.get(f"{BASE}/mcp", auth=DPoP(httpx2.BasicAuth("u", "p")))


def test_only_an_sdk_provider_is_wrapped_and_keeps_one_key() -> None:
    oauth = provider(f"{BASE}/mcp")
    basic = httpx2.BasicAuth("u", "p")
    mine = DPoP(oauth, mode="off")
    assert with_dpop(None) is None and with_dpop(basic) is basic and with_dpop(mine) is mine
    first, second = with_dpop(oauth), with_dpop(oauth)
    assert isinstance(first, DPoP) and first is not second and first._state is second._state
    assert with_dpop(provider(f"{BASE}/mcp"))._state is not first._state


async def test_off_sends_no_proof_even_where_advertised(
    http: httpx2.AsyncClient, authority: dpop.Authority
) -> None:
    assert (await post(http, DPoP(provider(f"{BASE}/mcp"), mode="off"))).status_code == 200
    assert all(entry["dpop"] is None for entry in authority.seen)


def answering(token_body: bytes, algs: Any = ("ES256",)) -> httpx2.MockTransport:
    """An authorization server whose metadata lists `algs` and whose token endpoint answers 200 with
    `token_body`; its resource answers 401."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if path.startswith("/.well-known/oauth-protected-resource"):
            return httpx2.Response(200, json={"resource": f"{BASE}/mcp", "authorization_servers": [BASE]})
        if path == "/.well-known/oauth-authorization-server":
            metadata = {
                "issuer": BASE,
                "authorization_endpoint": f"{BASE}/a",
                "token_endpoint": f"{BASE}/token",
            }
            return httpx2.Response(
                200,
                json={
                    **metadata,
                    "response_types_supported": ["code"],
                    "dpop_signing_alg_values_supported": list(algs),
                },
            )
        if path == "/token":
            return httpx2.Response(200, content=token_body, headers={"content-type": "application/json"})
        return httpx2.Response(401)

    return httpx2.MockTransport(handle)


@pytest.mark.parametrize("body", [b"not json", b"[1]", b'{"token_type": "DPoP"}'])
async def test_a_garbled_token_answer_is_the_sdks_error(body: bytes) -> None:
    async with httpx2.AsyncClient(transport=answering(body)) as client:
        with pytest.raises(Exception) as refused:
            await client.post(f"{BASE}/mcp", json={}, auth=DPoP(provider(f"{BASE}/mcp")))
    assert type(refused.value).__module__.startswith("mcp."), repr(refused.value)


@pytest.mark.parametrize("algs", [["ES256"] * 65, ["ES256", 256]])
async def test_an_algorithm_list_out_of_bounds_is_not_advertised(algs: list[Any]) -> None:
    token = b'{"access_token": "t0k3n-abcdef", "token_type": "Bearer", "expires_in": 60}'
    seen: list[httpx2.Request] = []
    transport = answering(token, algs)
    handle = transport.handler  # type: ignore[attr-defined]
    transport.handler = lambda request: (seen.append(request), handle(request))[1]  # type: ignore[attr-defined]
    async with httpx2.AsyncClient(transport=transport) as client:
        assert (
            await client.post(f"{BASE}/mcp", json={}, auth=DPoP(provider(f"{BASE}/mcp")))
        ).status_code == 401
    (token_request,) = [request for request in seen if request.url.path == "/token"]
    assert "DPoP" not in token_request.headers


async def test_without_cryptography_dpop_names_the_extra(
    http: httpx2.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cryptography", None)
    with pytest.raises(UserError, match=r'pip install "cubepi\[mcp\]"'):
        await post(http, DPoP(provider(f"{BASE}/mcp")))
