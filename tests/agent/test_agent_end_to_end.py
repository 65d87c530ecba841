"""End to end: a scripted model calls a real filesystem MCP server's tool and a hand-written @tool."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FILESYSTEM, LeakChecker

from cubepi import tool
from cubepi.agent import Agent, AgentEvent, ToolExecutionEnd
from cubepi.mcp import load_mcp_tools_stdio
from cubepi.providers import FauxProvider, Model, ProviderRequest, ToolCall, ToolResultMessage


@tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


async def test_mcp_tool_and_hand_written_tool_in_one_transcript(tmp_path: Path, leaks: LeakChecker) -> None:
    if not FILESYSTEM.exists():
        pytest.skip("test servers not installed: npm ci --prefix tests")
    (tmp_path / "notes.txt").write_text("three little words\n")
    tools = await load_mcp_tools_stdio(command=str(FILESYSTEM), args=[str(tmp_path)], timeout=30)
    assert "list_directory" in {t.name for t in tools}

    def summarise(request: ProviderRequest) -> str:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        return " | ".join(f"{m.tool_name}: {m.text}" for m in results)

    provider = FauxProvider(
        [
            [
                ToolCall("call-ls", "list_directory", {"path": str(tmp_path)}),
                ToolCall("call-wc", "word_count", {"text": "three little words"}),
            ],
            summarise,
        ]
    )
    agent = Agent(provider=provider, model=Model(id="faux", provider="faux"), tools=[*tools, word_count])
    ended: list[str] = []

    def listener(event: AgentEvent, state: object = None) -> None:
        if isinstance(event, ToolExecutionEnd):
            ended.append(event.tool_name)

    agent.subscribe(listener)
    answer = await agent.prompt(f"List the files in {tmp_path} and count the words of a phrase.")

    listing, count = (m for m in agent.messages if isinstance(m, ToolResultMessage))
    assert (listing.tool_call_id, listing.is_error) == ("call-ls", False)
    assert "[FILE] notes.txt" in listing.text
    assert (count.tool_call_id, count.text, count.is_error) == ("call-wc", "3", False)
    assert "list_directory: [FILE] notes.txt" in answer.text and "word_count: 3" in answer.text
    assert sorted(ended) == ["list_directory", "word_count"]
    # The model saw the MCP tools and the hand-written one, under their API names.
    names = [t.api_name for t in provider.requests[0].tools]
    assert "list_directory" in names and names[-1] == "word_count"
