"""Input a server asks for mid-call (elicitation), in both protocol eras, through loaders and the Agent."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import EVERYTHING, PYTHON, SERVERS
from mcp import types

from cubepi.agent import Agent, AgentEvent, ToolInputRequested
from cubepi.mcp import StdioServer, load_mcp_tools
from cubepi.providers import FauxProvider, Model, ToolCall, ToolResultMessage

ANNOTATED = SERVERS / "annotated.py"


def annotated(protocol: str) -> StdioServer:
    return StdioServer(PYTHON, [str(ANNOTATED)], protocol=protocol)


async def say_yes(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"confirm": True})


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_the_loaders_callback_answers_mid_call(protocol: str) -> None:
    questions: list[str] = []

    async def ask(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        questions.append(params.message)
        return await say_yes(context, params)

    tools = await load_mcp_tools(annotated(protocol), include=["confirm"], elicitation_callback=ask)
    result = await tools[0].execute({"action": "drop"})
    assert (result.is_error, result.text) == (False, "drop: confirmed=True")
    assert questions == ["Really drop?"]


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_without_a_callback_the_call_says_how_to_answer(protocol: str) -> None:
    tools = await load_mcp_tools(annotated(protocol), include=["confirm"])
    result = await tools[0].execute({"action": "drop"})
    assert result.is_error
    assert "elicitation_callback" in result.text


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_without_sampling_or_roots_callbacks_the_call_names_the_one_to_pass(protocol: str) -> None:
    tools = {t.name: t for t in await load_mcp_tools(annotated(protocol), include=["ask", "roots"])}
    sampling = await tools["ask"].execute({"question": "q"})
    roots = await tools["roots"].execute({})
    assert sampling.is_error and roots.is_error
    assert "(the server asked for sampling mid-call; pass sampling_callback= to connect() to answer it)" in (
        sampling.text
    )
    assert "(the server asked for roots mid-call; pass list_roots_callback= to connect() to answer it)" in (
        roots.text
    )


async def test_an_accepted_form_gets_the_schemas_defaults_for_the_fields_left_out() -> None:
    """server-everything's form has defaults for most fields (SEP-1034); the user fills two of them."""
    if not EVERYTHING.exists():
        pytest.skip("test servers not installed: npm ci --prefix tests")

    async def fill_two(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Ada", "integer": 7})

    tools = await load_mcp_tools(
        StdioServer(str(EVERYTHING), ["stdio"]),
        include=["trigger-elicitation-request"],
        elicitation_callback=fill_two,
        timeout=30,
    )
    result = await tools[0].execute({})
    assert not result.is_error
    received = json.loads(result.text.split("Raw result: ", 1)[1])  # what the server got, as it echoes it
    assert received == {
        "action": "accept",
        "content": {
            "name": "Ada",
            "integer": 7,  # the user's answer, not the default 42
            "firstLine": "It was a dark and stormy night.",
            "number": 3.14,
            "untitledSingleSelectEnum": "Monica",
            "untitledMultipleSelectEnum": ["Guitar"],
            "titledSingleSelectEnum": "hero-1",
            "titledMultipleSelectEnum": ["fish-1"],
            "legacyTitledEnum": "pet-1",
        },
    }


async def test_the_agent_lends_its_callback_and_announces_the_question() -> None:
    tools = await load_mcp_tools(annotated("auto"), include=["confirm"])
    provider = FauxProvider([[ToolCall("call-1", "confirm", {"action": "drop"})], "done"])
    agent = Agent(
        provider=provider, model=Model(id="faux", provider="faux"), tools=tools, elicitation_callback=say_yes
    )
    asked: list[ToolInputRequested] = []

    def listener(event: AgentEvent, state: object = None) -> None:
        if isinstance(event, ToolInputRequested):
            asked.append(event)

    agent.subscribe(listener)
    await agent.prompt("Drop it.")
    (result,) = (m for m in agent.messages if isinstance(m, ToolResultMessage))
    assert (result.is_error, result.text) == (False, "drop: confirmed=True")
    assert [(e.tool_call_id, e.tool_name, e.message) for e in asked] == [
        ("call-1", "confirm", "Really drop?")
    ]


@pytest.mark.parametrize("prespawn", [False, True])
async def test_the_lists_own_callback_wins_over_the_agents(prespawn: bool) -> None:
    questions: list[str] = []

    async def ask(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        questions.append(params.message)
        return await say_yes(context, params)

    async def say_no(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    tools = await load_mcp_tools(
        annotated("auto"), include=["confirm"], elicitation_callback=ask, prespawn=prespawn
    )
    async with tools:
        provider = FauxProvider([[ToolCall("call-1", "confirm", {"action": "drop"})], "done"])
        agent = Agent(
            provider=provider,
            model=Model(id="faux", provider="faux"),
            tools=tools,
            elicitation_callback=say_no,
        )
        await agent.prompt("Drop it.")
    (result,) = (m for m in agent.messages if isinstance(m, ToolResultMessage))
    assert (result.is_error, result.text) == (False, "drop: confirmed=True")
    assert questions == ["Really drop?"]
