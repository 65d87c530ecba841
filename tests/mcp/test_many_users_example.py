"""examples/many_users_service.py runs as written: two users asking the service at once each reach the MCP
server with their own token and their own hidden user_id."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "many_users_service.py"


async def test_two_users_reach_the_server_as_themselves(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("example_many_users", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    answers = await example.main()
    assert answers == {
        "alice-token": {"user": "alice", "answer": "user_id=alice, token=alice-token"},
        "bob-token": {"user": "bob", "answer": "user_id=bob, token=bob-token"},
    }
    assert "user_id=bob, token=bob-token" in capsys.readouterr().out
