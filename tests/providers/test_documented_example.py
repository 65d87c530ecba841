"""The loading page's example, as written: the page and examples/agent_anthropic.py carry the same code, and
the file runs (its key read from the environment) against a local fake of the Anthropic API, with the real
filesystem MCP server."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _fakes import FakeAPI, serve

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "agent_anthropic.py"
PAGE = ROOT / "docs" / "loading-mcp-tools.md"
NODE_MODULES = ROOT / "tests" / "node_modules"

MODEL_ID = "claude-sonnet-4-5-20250929"


def list_reply(path: str) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": MODEL_ID,
        "content": [
            {"type": "text", "text": "I'll list it."},
            {"type": "tool_use", "id": "toolu_01", "name": "list_directory", "input": {"path": path}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 900, "output_tokens": 40},
    }


FINAL_REPLY = {
    "id": "msg_02",
    "type": "message",
    "role": "assistant",
    "model": MODEL_ID,
    "content": [{"type": "text", "text": "The sandbox holds one file, notes.txt, and a folder, drafts."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1000, "output_tokens": 20},
}


def test_the_page_shows_the_example_file_verbatim() -> None:
    source = EXAMPLE.read_text()
    docstring = ast.parse(source).body[0]
    assert isinstance(docstring, ast.Expr)
    code = "\n".join(source.splitlines()[docstring.end_lineno :]).strip("\n")
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)
    documented = [block for block in blocks if "from cubepi.providers.anthropic import" in block]
    assert documented == [code + "\n"]
    assert "from cubepi.providers.anthropic import AnthropicProvider" in code
    assert 'api_key=os.environ["ANTHROPIC_API_KEY"]' in code


def test_the_example_runs_against_the_fake_api(tmp_path: Path) -> None:
    if (
        shutil.which("npx") is None
        or not (NODE_MODULES / "@modelcontextprotocol" / "server-filesystem").exists()
    ):
        pytest.skip("needs Node.js and the test servers: npm ci --prefix tests")
    # npx finds the pinned server in ./node_modules, as after `npm install`, without the network.
    (tmp_path / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    (tmp_path / "sandbox" / "drafts").mkdir(parents=True)
    (tmp_path / "sandbox" / "notes.txt").write_text("hello\n")
    sandbox = str(tmp_path.resolve() / "sandbox")
    api = FakeAPI([list_reply(sandbox), FINAL_REPLY])
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANTHROPIC_")}
    with serve(api) as url:
        env |= {"ANTHROPIC_API_KEY": "sk-ant-from-env", "ANTHROPIC_BASE_URL": url}
        run = subprocess.run(
            [sys.executable, str(EXAMPLE)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=110
        )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        f"  -> list_directory({ {'path': sandbox} })",
        "The sandbox holds one file, notes.txt, and a folder, drafts.",
    ]

    first, second = api.bodies
    for request in api.requests:
        key = request.headers.get("x-api-key") or request.headers.get("authorization")
        assert key is not None and key.endswith("sk-ant-from-env")
    assert first["model"] == MODEL_ID
    assert first["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": f"List the files in {sandbox}."}]}
    ]
    listed = {item["name"]: item for item in first["tools"]}
    assert {"list_directory", "read_text_file"} <= set(listed)
    assert listed["list_directory"]["input_schema"]["required"] == ["path"]
    # The real server's listing went back to the model as the tool result.
    result = second["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_01"
    assert not result.get("is_error")
    text = "".join(block["text"] for block in result["content"])
    assert "[FILE] notes.txt" in text and "[DIR] drafts" in text
