"""Bad arguments from a model never reach the server: they come back as a readable error result.

The server records every message it receives, so "never reached" is checked on the server's side.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cubepi import AgentTool
from cubepi.mcp import load_mcp_tools

from .conftest import Leaks, stdio_server


def calls(record: Path) -> list[dict[str, Any]]:
    if not record.exists():
        return []
    messages = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line]
    return [message["params"] for message in messages if message.get("method") == "tools/call"]


BAD = [
    pytest.param("strict", {"n": "seven"}, "n", id="wrong-type"),
    pytest.param("strict", {"n": 1.5}, "n", id="float-for-integer"),
    pytest.param("strict", {}, "n", id="missing-field"),
    pytest.param("strict", {"n": 1, "extra": True}, "extra", id="extra-field-forbidden"),
    pytest.param("strict", {"n": 1, "label": "x" * 1_000_000}, "label", id="huge-string-over-maxLength"),
    pytest.param("echo", {"message": None}, "message", id="null-for-string"),
    pytest.param("echo", {"message": ["a", "list"]}, "message", id="list-for-string"),
    pytest.param("echo", ["not", "an", "object"], "", id="not-an-object"),
]


@pytest.fixture
async def recorded(tmp_path: Path) -> tuple[list[AgentTool], Path]:
    record = tmp_path / "received.jsonl"
    tools = await load_mcp_tools(stdio_server("ok", "--record", str(record)), timeout=10)
    return list(tools), record


@pytest.mark.parametrize(("tool_name", "arguments", "field"), BAD)
async def test_bad_arguments_never_reach_the_server(
    recorded: tuple[list[AgentTool], Path], tool_name: str, arguments: Any, field: str
) -> None:
    tools, record = recorded
    leaks = Leaks()
    tool = next(item for item in tools if item.name == tool_name)
    result = await tool.execute(arguments)
    assert result.is_error
    text = result.text
    assert tool_name in text and field in text, text
    assert len(text) < 2000, "the error quotes the huge input back"
    assert "x" * 200 not in text
    assert calls(record) == [], "a bad call reached the server"
    assert result.details.get("validation_errors"), result.details
    # The same tool still works with good arguments, and the server gets exactly those.
    good = {"n": 3} if tool_name == "strict" else {"message": "fine"}
    ok = await tool.execute(good)
    assert not ok.is_error
    assert [call["arguments"] for call in calls(record)] == [good]
    await leaks.check()


async def test_a_long_but_valid_string_does_reach_the_server(recorded: tuple[list[AgentTool], Path]) -> None:
    tools, record = recorded
    echo = next(item for item in tools if item.name == "echo")
    message = "y" * 200_000
    result = await echo.execute({"message": message})
    assert result.text == message
    assert [call["arguments"] for call in calls(record)] == [{"message": message}]
