"""@modelcontextprotocol/server-filesystem on a temporary folder, over stdio."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FILESYSTEM, LeakChecker

from cubepi.mcp import load_mcp_tools_stdio


async def test_list_and_read_a_folder(tmp_path: Path, leaks: LeakChecker) -> None:
    if not FILESYSTEM.exists():
        pytest.skip("test servers not installed: npm ci --prefix tests")
    (tmp_path / "notes.txt").write_text("first line\nsecond line\n")
    (tmp_path / "sub").mkdir()
    tools = {t.name: t for t in await load_mcp_tools_stdio(str(FILESYSTEM), [str(tmp_path)], timeout=30)}
    assert {"list_directory", "read_text_file"} <= set(tools)

    listing = await tools["list_directory"].execute({"path": str(tmp_path)})
    assert "[FILE] notes.txt" in listing.text and "[DIR] sub" in listing.text

    read = await tools["read_text_file"].execute({"path": str(tmp_path / "notes.txt")})
    assert read.text == "first line\nsecond line\n"

    outside = await tools["read_text_file"].execute({"path": "/etc/hostname"})
    assert outside.is_error and "denied" in outside.text.lower()
