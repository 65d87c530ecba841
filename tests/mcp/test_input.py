"""Input a server asks for mid-call (elicitation), in both protocol eras, through loaders and the Agent."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import PYTHON, SERVERS
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
