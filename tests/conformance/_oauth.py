"""OAuth providers for the conformance suite's `auth/` scenarios, built only from the mcp SDK.

The suite passes scenario data (client ids, secrets, keys, an IdP token) in the JSON of
`MCP_CONFORMANCE_CONTEXT`; `oauth_for` turns it into the `httpx2.Auth` a real user would configure.
The authorization-code flow is approved headlessly: the authorization URL is fetched with httpx2 and the
code in the suite's redirect goes straight back to the provider.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from _scenarios import scenario_context
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.client.auth.utils import build_protected_resource_metadata_discovery_urls
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT_URI = "http://localhost:3000/callback"
"""Never served: the headless approval reads the code from the suite's redirect instead of following it."""

CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client-id metadata document URL the suite's `auth/basic-cimd` scenario accepts as is."""


class MemoryStorage:
    """`TokenStorage` that keeps the client registration and tokens for this process only."""

    def __init__(self, client_info: OAuthClientInformationFull | None = None) -> None:
        self._tokens: OAuthToken | None = None
        self._client_info = client_info

    async def get_tokens(self) -> OAuthToken | None:
        return self._tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._client_info = client_info


class HeadlessApproval:
    """Redirect and callback handlers for a user who approves at once."""

    def __init__(self) -> None:
        self._result: AuthorizationCodeResult | None = None

    async def redirect(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient() as http:
            response = await http.get(authorization_url, follow_redirects=False)
        location = response.headers.get("location")
        if not response.is_redirect or not location:
            raise RuntimeError(f"authorization endpoint answered {response.status_code} without a redirect")
        query = {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}
        if "code" not in query:
            raise RuntimeError(f"no authorization code in the redirect to {location}")
        self._result = AuthorizationCodeResult(
            code=query["code"], state=query.get("state"), iss=query.get("iss")
        )

    async def callback(self) -> AuthorizationCodeResult:
        result, self._result = self._result, None
        if result is None:
            raise RuntimeError("the authorization callback came before any redirect")
        return result


async def authorization_server(server_url: str) -> str:
    """The issuer that the server's protected resource metadata names, standing in for configuration."""
    prm_url = build_protected_resource_metadata_discovery_urls(None, server_url)[0]
    async with httpx2.AsyncClient() as http:
        response = (await http.get(prm_url)).raise_for_status()
    issuer: str = response.json()["authorization_servers"][0]
    return issuer


async def oauth_for(scenario: str, server_url: str) -> httpx2.Auth:
    """The SDK provider that a user of `scenario`'s setup would pass as `auth=`."""
    context = scenario_context()
    if scenario == "auth/client-credentials-basic":
        return ClientCredentialsOAuthProvider(
            server_url,
            MemoryStorage(),
            client_id=context["client_id"],
            client_secret=context["client_secret"],
            issuer=await authorization_server(server_url),
        )
    if scenario == "auth/client-credentials-jwt":
        signer = SignedJWTParameters(
            issuer=context["client_id"],
            subject=context["client_id"],
            signing_key=context["private_key_pem"],
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
        return PrivateKeyJWTOAuthProvider(
            server_url,
            MemoryStorage(),
            client_id=context["client_id"],
            assertion_provider=signer.create_assertion_provider(),
            issuer=await authorization_server(server_url),
        )
    if scenario == "auth/enterprise-managed-authorization":
        return IdentityAssertionOAuthProvider(
            server_url,
            MemoryStorage(),
            client_id=context["client_id"],
            client_secret=context["client_secret"],
            issuer=await authorization_server(server_url),
            assertion_provider=_id_jag_from_idp(context),
            token_endpoint_auth_method="client_secret_basic",
        )
    if scenario == "auth/wif-jwt-bearer":
        # RFC 7523's JWT-bearer grant with the workload's own JWT, as a public client (auth method `none`):
        # the SDK's one JWT-bearer provider takes confidential clients only, so it refuses to be built
        workload_jwt: str = context["valid_jwt"]

        async def assertion(audience: str, resource: str) -> str:
            return workload_jwt

        return IdentityAssertionOAuthProvider(
            server_url,
            MemoryStorage(),
            client_id=context["client_id"],
            client_secret="",
            issuer=await authorization_server(server_url),
            assertion_provider=assertion,
        )
    return _authorization_code(scenario, server_url, context)


def _id_jag_from_idp(context: dict[str, Any]) -> Callable[[str, str], Awaitable[str]]:
    """SEP-990 leg 1: trade the IdP's ID token for an ID-JAG (RFC 8693 token exchange at the IdP)."""

    async def fetch(audience: str, resource: str) -> str:
        async with httpx2.AsyncClient() as http:
            response = await http.post(
                context["idp_token_endpoint"],
                data={
                    "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                    "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                    "subject_token": context["idp_id_token"],
                    "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                    "audience": audience,
                    "resource": resource,
                    "client_id": context["idp_client_id"],
                },
            )
        id_jag: str = response.raise_for_status().json()["access_token"]
        return id_jag

    return fetch


def _authorization_code(scenario: str, server_url: str, context: dict[str, Any]) -> OAuthClientProvider:
    """Authorization code with PKCE; a pre-registered client when the scenario names one, else registration.

    The client-id metadata URL is offered only where the scenario is about it: elsewhere the suite may try
    to fetch it at the end (`auth/offline-access-scope` does), which would leave 127.0.0.1.
    """
    registered = None
    if "client_id" in context:
        secret = context.get("client_secret")
        registered = OAuthClientInformationFull(
            client_id=context["client_id"],
            client_secret=secret,
            redirect_uris=[REDIRECT_URI],
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
        )
    approval = HeadlessApproval()
    return OAuthClientProvider(
        server_url,
        OAuthClientMetadata(
            client_name="cubepi-conformance",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        MemoryStorage(registered),
        redirect_handler=approval.redirect,
        callback_handler=approval.callback,
        client_metadata_url=CIMD_URL if scenario == "auth/basic-cimd" else None,
    )
