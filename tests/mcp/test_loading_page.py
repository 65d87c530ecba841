"""docs/loading-mcp-tools.md as written: every Python snippet compiles, every cubepi name it imports exists,
and the snippets that need only a local server run as shown (npx finds the pinned servers in a
./node_modules, so no network)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from conftest import FILESYSTEM, NODE_BIN

from cubepi import AgentTool

PAGE = Path(__file__).parents[2] / "docs" / "loading-mcp-tools.md"
NODE_MODULES = NODE_BIN.parent


def sections() -> dict[str, list[str]]:
    """The Python blocks of the page under each heading (any level)."""
    found: dict[str, list[str]] = {}
    heading, fence, lines = "", None, []
    for line in PAGE.read_text().splitlines():
        if fence is None and line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif fence is None and line.lstrip().startswith("```"):
            fence, lines = line.strip()[3:], []
        elif fence is not None and line.strip() == "```":
            if fence == "python":
                found.setdefault(heading, []).append("\n".join(lines) + "\n")
            fence = None
        elif fence is not None:
            lines.append(line)
    return found


def block(heading: str) -> str:
    (code,) = sections()[heading]
    return code


def all_blocks() -> list[str]:
    return [code for blocks in sections().values() for code in blocks]


async def run(code: str, namespace: dict[str, Any]) -> None:
    compiled = compile(code, str(PAGE), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    outcome = eval(compiled, namespace)
    if outcome is not None:
        await outcome


@pytest.fixture
def in_a_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with ./sandbox and a node_modules holding the pinned servers."""
    if not FILESYSTEM.exists():
        pytest.skip("test servers not installed: npm ci --prefix tests")
    (tmp_path / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    (tmp_path / "sandbox").mkdir()
    (tmp_path / "sandbox" / "notes.txt").write_text("hello\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_snippet_compiles() -> None:
    assert len(all_blocks()) == PAGE.read_text().count("```python") >= 9
    for code in all_blocks():
        compile(code, str(PAGE), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def test_every_cubepi_import_of_the_page_exists() -> None:
    imports = [
        node
        for code in all_blocks()
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cubepi")
    ]
    assert len(imports) >= 8
    for node in imports:
        exec(compile(ast.Module([node], type_ignores=[]), str(PAGE), "exec"), {})


async def test_stdio_snippet_and_what_you_get_back_run(in_a_project: Path) -> None:
    namespace: dict[str, Any] = {}
    await run(block("Stdio servers"), namespace)
    await run(block("What you get back"), namespace)
    t, result = namespace["t"], namespace["result"]
    assert isinstance(t, AgentTool) and t.origin is not None and "server-filesystem" in t.origin
    assert result.content and isinstance(result.is_error, bool)


async def test_mixing_snippet_runs(in_a_project: Path) -> None:
    namespace: dict[str, Any] = {}
    await run(block("Mixing with hand-written tools"), namespace)
    tools = namespace["tools"]
    assert tools[0].name == "shout" and "echo" in {t.name for t in tools}
    assert (await tools[0].execute({"text": "hi"})).text == "HI"


async def test_the_make_mcp_agent_tool_wrapper_runs(in_a_project: Path) -> None:
    namespace: dict[str, Any] = {}
    await run(block("Building tools yourself: `make_mcp_agent_tool`"), namespace)
    tools = {t.name: t for t in namespace["tools"]}
    assert {"read_text_file", "write_file"} <= set(tools)
    assert all("\n\n" not in t.description for t in tools.values())
    assert tools["read_text_file"].needs_approval is False
    assert tools["write_file"].needs_approval is True
    notes = str(in_a_project / "sandbox" / "notes.txt")
    assert (await tools["read_text_file"].execute({"path": notes})).text == "hello\n"
