"""Every tool of the schema corpus (tests/schema/corpus) hands over to the SDKs:
`openai.pydantic_function_tool` accepts its model, and the OpenAI Agents SDK keeps cubepi's strict schema
as it is."""

from __future__ import annotations

import copy
from typing import Any

import openai
import pytest
from schema._harness import corpus

from cubepi import AgentTool
from cubepi.mcp import StdioServer, make_mcp_agent_tool

CASES = [c for c in corpus() if isinstance(c["schema"], dict)]
NOWHERE = StdioServer("never-started")  # the tools are only exported here, never called


def corpus_tool(case: dict[str, Any]) -> AgentTool:
    name = case["name"].split("/", 1)[1]
    return make_mcp_agent_tool({"name": name, "description": "d", "inputSchema": case["schema"]}, NOWHERE)


def test_the_corpus_is_there() -> None:
    assert len(CASES) > 200


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_pydantic_function_tool_accepts_every_model(case: dict[str, Any]) -> None:
    item = corpus_tool(case)
    exported = openai.pydantic_function_tool(item.parameters, name=item.api_name)
    assert exported["function"]["name"] == item.api_name
    assert exported["function"]["strict"] is True
    assert exported["function"]["parameters"]["type"] == "object"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_openai_agents_keeps_the_strict_export(case: dict[str, Any]) -> None:
    item = corpus_tool(case)
    strict = item.to_openai(strict=True)["function"]["parameters"]
    before = copy.deepcopy(strict)
    assert item.to_openai_agents().params_json_schema == before
