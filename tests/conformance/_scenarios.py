"""What each client scenario of the conformance suite expects a client to do, shared by both clients.

Every scenario's test server is started by the suite, which runs the client with the server URL as its last
argument, the scenario's name in `MCP_CONFORMANCE_SCENARIO` and the revision it runs at in
`MCP_CONFORMANCE_PROTOCOL_VERSION` (both clients leave the revision to negotiation, as a user would). A
client lists the tools, then makes the calls the scenario watches for (`auth/` scenarios serve one tool,
`test-tool`, and watch the OAuth flow).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import mcp.types as types
from mcp.client.context import ClientRequestContext

Call = tuple[str, dict[str, Any]]
"""A tool call: the tool's name and its arguments."""

CALLS: dict[str, list[list[Call]]] = {
    "initialize": [],
    "request-metadata": [],
    "json-schema-ref-no-deref": [],
    "tools_call": [[("add_numbers", {"a": 5, "b": 3})]],
    "sse-retry": [[("test_reconnection", {})]],
    "elicitation-sep1034-client-defaults": [[("test_client_elicitation_defaults", {})]],
    # SEP-2322: a request's input-required state must stay with it while another call runs beside it
    "sep-2322-client-request-state": [
        [("test_mrtr_echo_state", {}), ("test_mrtr_unrelated", {})],
        [("test_mrtr_no_state", {})],
        [("test_mrtr_no_result_type", {})],
    ],
}
"""Scenarios with fixed calls, in rounds: the calls of a round run at the same time, rounds one after another
(`[]`: the scenario only checks what loading the tools sends)."""

CALL_EVERY_TOOL = {"http-standard-headers", "http-invalid-tool-headers"}
"""Scenarios that watch every call the client makes: each tool the client kept is called, with sample
arguments (`http-invalid-tool-headers` serves tools with malformed `x-mcp-header`s, which must be dropped)."""

READS_OFFERS = {"http-standard-headers"}
"""Scenarios that watch resources and prompts requests too: the client lists the resources and reads each,
lists the prompts and gets each (a required argument given a sample value)."""

DECLARES_EVERY_CAPABILITY = {"request-metadata"}
"""Scenarios that judge each client capability declared: the cubepi client adds sampling and roots callbacks
(`decline_sampling`, `no_roots`), so it declares both."""

ASKS_FOR_INPUT = {"elicitation-sep1034-client-defaults", "sep-2322-client-request-state", "request-metadata"}
"""Scenarios whose client takes elicitation requests: the server elicits input mid-call, or checks the
declared capability (`request-metadata`); the client answers with `accept_with_defaults`."""

LOADS_ONLY_PREFIX = "sep-2640-"
"""Skills-extension scenarios (SEP-2640): they judge what a client reads; loading tools must read nothing."""


def scenario_and_url() -> tuple[str, str]:
    """The scenario name and server URL the suite gave this process."""
    if len(sys.argv) != 2 or "MCP_CONFORMANCE_SCENARIO" not in os.environ:
        sys.exit(f"usage: MCP_CONFORMANCE_SCENARIO=<name> {sys.argv[0]} <server-url> (the suite does this)")
    return os.environ["MCP_CONFORMANCE_SCENARIO"], sys.argv[1]


def scenario_context() -> dict[str, Any]:
    """The scenario's data from `MCP_CONFORMANCE_CONTEXT` (empty when the scenario sends none)."""
    context: dict[str, Any] = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    return context


SAMPLES: dict[str, Any] = {
    "string": "x",
    "number": 2.5,
    "integer": 1,
    "boolean": True,
    "object": {},
    "array": [],
}


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """A value of its type for each required parameter of `schema` (`None` for a null or untyped one)."""
    kinds = {name: spec.get("type", "") for name, spec in schema.get("properties", {}).items()}
    return {name: SAMPLES.get(kinds.get(name, "")) for name in schema.get("required", [])}


def calls_for(scenario: str, listed: dict[str, dict[str, Any]]) -> list[list[Call]]:
    """The rounds of calls `scenario` checks for, given the listed tools (name to input schema)."""
    context = scenario_context()
    if "toolCalls" in context:  # the scenario names its calls (`http-custom-headers`)
        return [[(call["name"], call["arguments"])] for call in context["toolCalls"]]
    if scenario in CALLS:
        return CALLS[scenario]
    if scenario in CALL_EVERY_TOOL:
        return [[(name, sample_arguments(schema))] for name, schema in listed.items()]
    if scenario == "json-schema-2020-12-preservation":  # echo the focal tool's schema as it was listed
        return [[("json_schema_echo", {"schema": listed["json_schema_2020_12_tool"]})]]
    if scenario.startswith(LOADS_ONLY_PREFIX):
        return []
    if scenario.startswith("auth/"):
        return [[(name, {})] for name in list(listed)[:1]]
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


async def decline_sampling(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult | types.ErrorData:
    """A client with no model to sample: it declines."""
    return types.ErrorData(code=types.INVALID_REQUEST, message="this client does not sample")


async def no_roots(context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
    """A client that shares no roots."""
    return types.ListRootsResult(roots=[])
