"""DPoP (RFC 9449): OAuth tokens bound to a key pair the client holds, so that a stolen token is useless.

`DPoP` wraps an `httpx2.Auth`, in practice one of the mcp SDK's OAuth providers, and drives its flow: the
provider still discovers, registers, signs in and refreshes; the wrapper adds a proof (a JWT signed with
the client's key: ``typ`` ``dpop+jwt``, the public ``jwk``, ``htm``, ``htu``, ``iat``, ``jti``, and
``ath`` on resource requests) to each token request and to each request that presents a DPoP-bound
token, presents such a token as ``Authorization: DPoP <token>``, and answers a server's
``use_dpop_nonce`` challenge by sending the request once more with the server's nonce (the latest nonce
of each server is kept for the next proofs). `with_dpop` wraps the SDK's providers that the user passed
bare, so that DPoP is used wherever an authorization server advertises it.

The JOSE parts are PyJWT's (with `cryptography`); nothing here signs or encodes a key by hand.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import time
import weakref
from collections.abc import AsyncGenerator, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias
from urllib.parse import parse_qsl

import httpx2

from ...errors import UserError
from .._sdk import INSTALL_HINT

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
    from cryptography.hazmat.primitives.asymmetric.ed448 import Ed448PrivateKey
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

    PrivateKey: TypeAlias = EllipticCurvePrivateKey | RSAPrivateKey | Ed25519PrivateKey | Ed448PrivateKey

__all__ = ["DPoP", "DPoPMode", "with_dpop"]

DPoPMode: TypeAlias = Literal["auto", "required", "off"]
_MODES = ("auto", "required", "off")
# The algorithms a generated key may use, in order of preference (ES256 first, as RFC 9449 suggests).
_GENERATED = ("ES256", "ES384", "ES512", "EdDSA", "PS256", "RS256")
_RSA = ("PS256", "RS256", "PS384", "RS384", "PS512", "RS512")
_CURVES = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}
# RFC 9449's nonce syntax (NQCHAR), bounded: a server's value goes into every later proof.
_NONCE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,512}")
_USE_NONCE = re.compile(r'\berror\s*=\s*"?use_dpop_nonce\b')
_FORM = "application/x-www-form-urlencoded"
Role: TypeAlias = Literal["token", "resource"]


@dataclass
class _State:
    """What the proofs of one key share: the key (`given`, read from `key_file`, or made on first use)
    and its signer, the algorithms the authorization server last advertised, the latest nonce of each
    server, and the digests of the tokens bound to the key."""

    given: Any = None
    key_file: str | None = None
    signer: _Signer | None = None
    advertised: list[str] | None = None
    nonces: dict[tuple[Role, str], str] = field(default_factory=dict)
    bound: set[str] = field(default_factory=set)


class DPoP(httpx2.Auth):
    """Sender-constrained OAuth tokens (RFC 9449) for an `httpx2.Auth`, usually the mcp SDK's provider.

    ``auth=DPoP(oauth)`` binds the tokens `oauth` gets to a key pair: each token request and each
    request that presents a bound token carries a fresh proof signed with the key, and the token goes
    as ``Authorization: DPoP <token>``. An SDK provider passed bare is wrapped the same way
    (``mode="auto"``, a key of its own); wrap it to choose:

    - `key`: the private key (a `cryptography` EC P-256/P-384/P-521, RSA or Ed25519/Ed448 key), or the
      path of an unencrypted PEM file, read on first use. Default: a key made on first use, kept by this
      object (one key per provider passed bare), never written anywhere.
    - `mode`: ``"auto"`` uses DPoP when the authorization server's metadata lists an algorithm the key
      can sign with (ES256 preferred) and presents a token as DPoP when it was issued as one;
      ``"required"`` always sends proofs and refuses a token that is not DPoP-bound; ``"off"`` never.

    The key never appears in a repr, a log line or an error. A `DPoP` pickles without key material: a
    generated key stays behind (the copy makes its own, and gets its own tokens), a key file goes as
    its path (read where the copy runs), and a key given as an object refuses to be pickled.
    """

    def __init__(
        self,
        auth: httpx2.Auth,
        *,
        key: PrivateKey | str | os.PathLike[str] | None = None,
        mode: DPoPMode = "auto",
    ) -> None:
        if not isinstance(auth, httpx2.Auth):
            raise UserError(
                f"DPoP wraps an httpx2.Auth (e.g. the SDK's OAuth provider), got {type(auth).__name__}"
            )
        if mode not in _MODES:
            raise UserError(f"DPoP mode must be one of {', '.join(_MODES)}; got {mode!r}")
        self.auth = auth
        self.mode: DPoPMode = mode
        if key is None or isinstance(key, (str, os.PathLike)):
            self._state = _State(key_file=None if key is None else os.fspath(key))
        else:
            _algorithms(key)  # refuses a key of a kind proofs cannot use
            self._state = _State(given=key)

    def __repr__(self) -> str:
        state = self._state
        if state.key_file is not None:
            key = f"<PEM file {os.path.basename(state.key_file)!r}>"
        else:
            key = "<generated>" if state.given is None else "<given>"
        return f"DPoP({type(self.auth).__name__}, key={key}, mode={self.mode!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        state = self._state
        if state.given is not None:
            raise TypeError(
                "a DPoP key given as an object never leaves its process: give key= the path of a PEM file "
                "that the other process can read, or no key (the other process makes its own)"
            )
        return (_rebuild, (self.auth, state.key_file, self.mode))

    def sync_auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        raise RuntimeError("DPoP signs the requests of an async client (httpx2.AsyncClient) only")
        yield request  # pragma: no cover (a generator, as httpx2 expects)

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The wrapped flow, with a proof on each request that needs one and one nonce retry each."""
        flow = self.auth.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                role = self._prove(outgoing)
                response = yield outgoing
                if role is not None and await self._challenged(response, role):
                    self._prove(outgoing)
                    response = yield outgoing
                    self._keep_nonce(response, role)
                if role == "token":
                    response = await self._token_response(response)
                elif _is_metadata_request(outgoing):
                    await self._note_metadata(response)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _role(self, request: httpx2.Request) -> Role | None:
        """What proof `request` needs: a token request's, a resource request's (it presents a bound
        token), or none."""
        if self.mode == "off":
            return None
        if _is_token_request(request):
            return "token" if self._signer() is not None else None
        token = _presented_token(request)
        if token is not None and (self.mode == "required" or _digest(token) in self._state.bound):
            return "resource"
        return None

    def _prove(self, request: httpx2.Request) -> Role | None:
        """Put a fresh proof on `request` (and present its token as DPoP); returns the proof's role."""
        role = self._role(request)
        if role is None:
            request.headers.pop("DPoP", None)
            return None
        signer = self._signer()
        assert signer is not None  # (a bound token came from a token request with a proof)
        url = request.url.copy_with(query=None, fragment=None)
        token = _presented_token(request) if role == "resource" else None
        if token is not None:
            request.headers["Authorization"] = f"DPoP {token}"
        nonce = self._state.nonces.get((role, _origin(url)))
        request.headers["DPoP"] = signer.proof(request.method, str(url), nonce=nonce, token=token)
        return role

    def _signer(self) -> _Signer | None:
        """The key's signer, made on first use with an algorithm the authorization server takes; None
        when DPoP is not to be used (``"auto"`` and nothing advertised that the key can sign with)."""
        state = self._state
        if state.signer is not None:
            return state.signer
        advertised = state.advertised
        if advertised is None and self.mode == "auto":
            return None
        _need_crypto()
        key = state.given if state.given is not None else _read_key(state.key_file)
        candidates = _GENERATED if key is None else _algorithms(key)
        algorithm = next((name for name in candidates if advertised is None or name in advertised), None)
        if algorithm is None:
            if self.mode == "auto":
                return None
            from mcp.client.auth import OAuthFlowError

            raise OAuthFlowError(
                f"the authorization server takes DPoP proofs signed with {_shown(advertised)}, "
                f"none of which the DPoP key signs ({', '.join(candidates)})"
            )
        state.signer = _Signer(key if key is not None else _generate(algorithm), algorithm)
        return state.signer

    async def _challenged(self, response: httpx2.Response, role: Role) -> bool:
        """Keep the nonce `response` carries; True when it is a ``use_dpop_nonce`` challenge to answer."""
        if not self._keep_nonce(response, role):
            return False
        if role == "resource":
            return response.status_code == 401 and bool(
                _USE_NONCE.search(response.headers.get("WWW-Authenticate", ""))
            )
        return response.status_code == 400 and _error_of(await response.aread()) == "use_dpop_nonce"

    def _keep_nonce(self, response: httpx2.Response, role: Role) -> bool:
        """Keep the nonce `response` carries, if a well-formed one; True when it carried one."""
        nonce = response.headers.get("DPoP-Nonce")
        if nonce is None or not _NONCE.fullmatch(nonce):
            return False
        self._state.nonces[role, _origin(response.request.url)] = nonce
        return True

    async def _note_metadata(self, response: httpx2.Response) -> None:
        """Keep the ``dpop_signing_alg_values_supported`` of authorization server metadata (the SDK's
        `OAuthMetadata` drops it)."""
        if response.status_code != 200:
            return
        data = _json(await response.aread())
        found = data.get("dpop_signing_alg_values_supported") if isinstance(data, dict) else None
        valid = (
            isinstance(found, list) and 0 < len(found) <= 64 and all(isinstance(name, str) for name in found)
        )
        self._state.advertised = found if valid else None

    async def _token_response(self, response: httpx2.Response) -> httpx2.Response:
        """Note a token issued as DPoP (and show it to the SDK, which takes Bearer tokens only, as one);
        under ``"required"``, refuse a token that is not."""
        if not response.is_success:
            return response
        data = _json(await response.aread())
        if not isinstance(data, dict) or not isinstance(data.get("access_token"), str):
            return response
        token_type = data.get("token_type")
        if isinstance(token_type, str) and token_type.lower() == "dpop":
            self._state.bound.add(_digest(data["access_token"]))
            data["token_type"] = "Bearer"
            return _with_body(response, json.dumps(data).encode())
        if self.mode == "required":
            from mcp.client.auth import OAuthTokenError

            raise OAuthTokenError(
                f"the authorization server issued a {_shown(token_type)} token, not a DPoP-bound one, "
                "and DPoP(mode='required') refuses it"
            )
        return response


@dataclass(frozen=True, repr=False)
class _Signer:
    """Signs proofs with one key and algorithm; `jwk` is the key's public half."""

    key: Any
    algorithm: str
    jwk: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        from jwt.algorithms import get_default_algorithms

        public = get_default_algorithms()[self.algorithm].to_jwk(self.key.public_key(), as_dict=True)
        object.__setattr__(self, "jwk", public)

    def proof(self, method: str, url: str, *, nonce: str | None, token: str | None) -> str:
        import jwt

        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(18),
            "htm": method,
            "htu": url,
            "iat": int(time.time()),
        }
        if nonce is not None:
            claims["nonce"] = nonce
        if token is not None:
            claims["ath"] = _b64(hashlib.sha256(token.encode()).digest())
        return jwt.encode(
            claims, self.key, algorithm=self.algorithm, headers={"typ": "dpop+jwt", "jwk": self.jwk}
        )


_AUTO: weakref.WeakKeyDictionary[httpx2.Auth, _State] = weakref.WeakKeyDictionary()


def with_dpop(auth: Any) -> Any:
    """`auth` as the requests send it: an SDK OAuth provider passed bare gets a `DPoP` of its own (the
    same key for as long as the provider lives); anything else is left as it is."""
    if auth is None or isinstance(auth, DPoP):
        return auth
    from mcp.client.auth import OAuthClientProvider

    if not isinstance(auth, OAuthClientProvider):
        return auth
    wrapped = DPoP(auth)
    wrapped._state = _AUTO.setdefault(auth, wrapped._state)
    return wrapped


def _rebuild(auth: httpx2.Auth, key_file: str | None, mode: DPoPMode) -> DPoP:
    return DPoP(auth, key=key_file, mode=mode)


def _algorithms(key: Any) -> tuple[str, ...]:
    """The proof algorithms `key` signs with, best first; `UserError` for a key proofs cannot use."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

    if isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name in _CURVES:
        return (_CURVES[key.curve.name],)
    if isinstance(key, rsa.RSAPrivateKey) and key.key_size >= 2048:
        return _RSA
    if isinstance(key, (ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey)):
        return ("EdDSA",)
    raise UserError(
        f"a DPoP key must be a private EC (P-256, P-384, P-521), RSA (2048 bits or more) or Ed25519/Ed448 "
        f"key from the cryptography package, got {type(key).__name__}"
    )


def _read_key(path: str | None) -> Any:
    """The private key in the PEM file at `path` (None: none given); errors name the file, never its text."""
    if path is None:
        return None
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as exc:
        raise UserError(f"the DPoP key file {path!r} could not be read ({exc.strerror})") from None
    try:
        key = load_pem_private_key(data, password=None)
    except (TypeError, ValueError):
        raise UserError(
            f"the DPoP key file {path!r} holds no unencrypted PEM private key "
            "(for an encrypted one, load it with cryptography and pass the key object)"
        ) from None
    _algorithms(key)
    return key


def _generate(algorithm: str) -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if algorithm == "EdDSA":
        return ed25519.Ed25519PrivateKey.generate()
    curves: dict[str, ec.EllipticCurve] = {
        "ES256": ec.SECP256R1(),
        "ES384": ec.SECP384R1(),
        "ES512": ec.SECP521R1(),
    }
    if algorithm in curves:
        return ec.generate_private_key(curves[algorithm])
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _is_metadata_request(request: httpx2.Request) -> bool:
    """A GET of authorization server metadata (RFC 8414, or OpenID Connect discovery)."""
    path = request.url.path
    return request.method == "GET" and (
        "/.well-known/oauth-authorization-server" in path
        or path.endswith("/.well-known/openid-configuration")
    )


def _is_token_request(request: httpx2.Request) -> bool:
    """A POST of a form with a ``grant_type``: what RFC 6749 sends to a token endpoint."""
    if request.method != "POST" or not request.headers.get("Content-Type", "").startswith(_FORM):
        return False
    try:
        body = request.content
    except httpx2.RequestNotRead:
        return False
    return any(name == "grant_type" for name, _ in parse_qsl(body.decode("latin-1")))


def _presented_token(request: httpx2.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return (token.strip() or None) if scheme.lower() in ("bearer", "dpop") else None


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _error_of(body: bytes) -> object:
    data = _json(body)
    return data.get("error") if isinstance(data, dict) else None


def _with_body(response: httpx2.Response, body: bytes) -> httpx2.Response:
    """`response` with another (decoded) body, for the flow that reads it next."""
    skip = {b"content-length", b"content-encoding", b"transfer-encoding"}
    headers = [(name, value) for name, value in response.headers.raw if name.lower() not in skip]
    return httpx2.Response(response.status_code, headers=headers, content=body, request=response.request)


def _origin(url: httpx2.URL) -> str:
    return f"{url.scheme}://{url.netloc.decode('ascii')}"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _shown(value: object) -> str:
    """A value a server sent, as an error may show it: printable and short."""
    text = ", ".join(map(str, value)) if isinstance(value, list) else repr(value)
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= 80 else text[:77] + "..."


def _need_crypto() -> None:
    try:
        import cryptography  # noqa: F401
        import jwt  # noqa: F401
    except ImportError as exc:
        raise UserError(
            f"DPoP needs PyJWT and cryptography, which the MCP extra brings: {INSTALL_HINT} ({exc})"
        ) from None
