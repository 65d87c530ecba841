"""The Python blocks of README.md, run as printed, the way a reader on a fresh machine would run them.

Only `/tmp/sandbox` is replaced, by a temporary directory. `npx -y @modelcontextprotocol/server-filesystem`
runs as printed: the working directory has a node_modules holding the servers pinned in tests/package.json,
and npm is told to stay offline, so npx finds the pinned server there and never downloads one.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FILESYSTEM, NODE_BIN

README = Path(__file__).parents[1] / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)

# A phrase of a block that cannot run offline -> why (network, API key); such a block is skipped.
NEEDS_NETWORK: dict[str, str] = {}


def _as_here(block: str, sandbox: Path) -> str:
    """`block` with /tmp/sandbox replaced by `sandbox`."""
    return block.replace('"/tmp/sandbox"', repr(str(sandbox)))


def test_the_readme_has_a_quickstart() -> None:
    assert any("load_mcp_tools_stdio" in block for block in BLOCKS)


def _run(block: str, tmp_path: Path, sandbox: Path) -> subprocess.CompletedProcess[str]:
    code = _as_here(block, sandbox)
    assert "/tmp/sandbox" not in code, "a block names /tmp/sandbox another way"
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    (tmp_path / "node_modules").symlink_to(NODE_BIN.parent, target_is_directory=True)
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**os.environ, "npm_config_offline": "true"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


def _skip_unless_runnable(block: str) -> None:
    for phrase, reason in NEEDS_NETWORK.items():
        if phrase in block:
            pytest.skip(reason)
    if "@modelcontextprotocol/server-filesystem" in block and not FILESYSTEM.exists():
        pytest.skip("test servers not installed: npm ci --prefix tests")


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i + 1}" for i in range(len(BLOCKS))])
def test_python_block_runs_as_printed(block: str, tmp_path: Path) -> None:
    _skip_unless_runnable(block)
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (sandbox / "notes.txt").write_text("hello\n", encoding="utf-8")

    done = _run(block, tmp_path, sandbox)

    if "load_mcp_tools_stdio" in block:
        lines = done.stdout.splitlines()
        assert "shout - Upper-case a text." in lines
        assert any(line.startswith("list_directory - ") for line in lines)
        assert lines[-1] == "False [FILE] notes.txt", done.stdout


def test_the_quickstart_makes_its_sandbox(tmp_path: Path) -> None:
    """On a fresh machine /tmp/sandbox does not exist yet (the server refuses to start without it)."""
    block = next(block for block in BLOCKS if "load_mcp_tools_stdio" in block)
    _skip_unless_runnable(block)
    sandbox = tmp_path / "sandbox"

    done = _run(block, tmp_path, sandbox)

    assert sandbox.is_dir()
    assert done.stdout.splitlines()[-1].rstrip() == "False", done.stdout
