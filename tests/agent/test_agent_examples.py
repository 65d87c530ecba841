"""The offline example runs as written (the Anthropic one: tests/providers/test_documented_example.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).parents[2] / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_offline_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    await load("agent_offline").main()
    out = capsys.readouterr().out
    assert "- add: 42" in out and "blocked: Atlantis is not on the map" in out and "was refused" in out
