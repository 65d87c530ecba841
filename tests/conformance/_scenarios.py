"""What each client scenario of the conformance suite expects a client to do, shared by both clients.

Every scenario's test server is started by the suite, which runs the client with the server URL as its last
argument and the scenario's name in `MCP_CONFORMANCE_SCENARIO`. A client lists the tools, then calls the
tool the scenario watches for (`auth/` scenarios serve one tool, `test-tool`, and watch the OAuth flow).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import mcp.types as types
from mcp.client.context import ClientRequestContext

CALLS: dict[str, tuple[str, dict[str, Any]] | None] = {
    "initialize": None,
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}
"""Plain scenarios: the tool call each one checks for (`None`: it only checks the handshake and listing)."""

ASKS_FOR_INPUT = {"elicitation-sep1034-client-defaults"}
"""Scenarios whose server elicits input mid-call; the client answers with `accept_with_defaults`."""


def scenario_and_url() -> tuple[str, str]:
    """The scenario name and server URL the suite gave this process."""
    if len(sys.argv) != 2 or "MCP_CONFORMANCE_SCENARIO" not in os.environ:
        sys.exit(f"usage: MCP_CONFORMANCE_SCENARIO=<name> {sys.argv[0]} <server-url> (the suite does this)")
    return os.environ["MCP_CONFORMANCE_SCENARIO"], sys.argv[1]


def call_for(scenario: str, listed: list[str]) -> tuple[str, dict[str, Any]] | None:
    """The call `scenario` checks for: its fixed call, or an `auth/` scenario's first listed tool."""
    if scenario in CALLS:
        return CALLS[scenario]
    if scenario.startswith("auth/"):
        return (listed[0], {}) if listed else None
    sys.exit(f"unknown conformance scenario {scenario!r}")


async def accept_with_defaults(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult | types.ErrorData:
    """A user who accepts every form as offered: each field keeps its schema default (SEP-1034).

    Used by the raw-SDK baseline client, which must fill the defaults itself; cubepi's client uses
    `accept_untouched` and relies on cubepi to fill them."""
    content: dict[str, Any] = {}
    if isinstance(params, types.ElicitRequestFormParams):
        for name, schema in params.requested_schema.get("properties", {}).items():
            if "default" in schema:
                content[name] = schema["default"]
    return types.ElicitResult(action="accept", content=content)


async def accept_untouched(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult | types.ErrorData:
    """A user who accepts every form without touching a field: cubepi fills the defaults (SEP-1034)."""
    return types.ElicitResult(action="accept", content={})
