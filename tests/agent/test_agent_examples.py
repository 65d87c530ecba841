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


async def test_offline_example_runs_and_prints_the_answer_as_it_streams(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    example = load("agent_offline")
    pieces: list[str] = []
    real_print = print

    def recording_print(*args: object, **kwargs: object) -> None:
        if kwargs.get("end") == "":
            pieces.append(str(args[0]))
        real_print(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(example, "print", recording_print, raising=False)
    await example.main()
    out = capsys.readouterr().out
    assert "- add: 42" in out and "blocked: Atlantis is not on the map" in out and "was refused" in out
    assert len(pieces) > 10 and "".join(pieces).startswith("Here is what I found:\n- add: 42")
    assert out.count("Here is what I found:") == 1 and "(7 messages added to the transcript)" in out
