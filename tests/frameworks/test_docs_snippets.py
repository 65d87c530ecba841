"""The snippets of docs/frameworks.md run as written (offline, against the demo server)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).parents[2] / "docs" / "frameworks.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)
SNIPPETS = [block for block in BLOCKS if "asyncio.run" in block]
EXPECTED = [
    ["42 success", "error"],
    ['{"add":"0"}'],
    ["42", "Invalid arguments for tool 'add':", "- a: Input should be a valid integer"],
    ["add ['a', 'b']", "42"],  # as_function: google-genai
    ["add integer", "42"],  # smolagents
    ["add ['a', 'b']", "42"],  # LlamaIndex
    ["add {'a': {'type': 'integer'}, 'b': {'type': 'integer'}}", "42"],  # DSPy
    ["['a', 'b']", "42"],  # Anthropic tool runner
    ["add ['a', 'b']", "42"],  # AutoGen
]


def test_every_framework_has_a_snippet() -> None:
    assert len(SNIPPETS) == len(EXPECTED) == 9


@pytest.mark.parametrize(("snippet", "expected"), list(zip(SNIPPETS, EXPECTED, strict=True)))
def test_snippet_runs(snippet: str, expected: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected
