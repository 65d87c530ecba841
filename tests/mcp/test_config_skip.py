"""``load_mcp_tools_from_config(..., on_error="skip")``: a list that survives dead servers, says why each
failed (without secrets), and takes a failed server in once it loads on `refresh()`."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import KITCHEN, PYTHON, SERVERS, LeakChecker, RunningServer, free_port

from cubepi import MCPError, UserError
from cubepi.cli import main
from cubepi.mcp import ServerSkippedWarning, load_mcp_tools_from_config

SECRET = "s3cr3t-value-never-shown"


def kitchen(**extra: Any) -> dict[str, Any]:
    return {"command": PYTHON, "args": [str(KITCHEN)], **extra}


def five_servers(tmp_path: Path, kitchen_http: RunningServer) -> dict[str, Any]:
    """Three servers that load (stdio, HTTP, stdio) and two that cannot: a command that does not exist,
    and an HTTP URL where nothing listens; both carry a secret."""
    return {
        "mcpServers": {
            "files": kitchen(),
            "missing": {"command": str(tmp_path / "no-such-server"), "env": {"TOKEN": SECRET}},
            "web": {"url": kitchen_http.url},
            "dead": {
                "url": f"http://127.0.0.1:{free_port()}/mcp",
                "headers": {"Authorization": f"Bearer {SECRET}"},
            },
            "more": kitchen(),
        }
    }


async def test_five_servers_two_broken_load_three_and_say_why(
    tmp_path: Path, kitchen_http: RunningServer, leaks: LeakChecker
) -> None:
    config = five_servers(tmp_path, kitchen_http)
    with pytest.warns(ServerSkippedWarning) as warned:
        tools = await load_mcp_tools_from_config(config, on_error="skip", include=["echo", "add"], timeout=15)
    async with tools:
        assert [t.name for t in tools] == [
            "files__echo",
            "files__add",
            "web__echo",
            "web__add",
            "more__echo",
            "more__add",
        ]
        by_name = {t.name: t for t in tools}
        assert (await by_name["web__add"].execute({"a": 2, "b": 40})).text == "42"
        assert (await by_name["more__echo"].execute({"message": "hi"})).text == "hi"

        assert sorted(tools.failures) == ["dead", "missing"]
        assert all(isinstance(exc, MCPError) for exc in tools.failures.values())
        assert "server 'missing' of the MCP config" in str(tools.failures["missing"])
        assert "no-such-server" in str(tools.failures["missing"])
        assert "server 'dead' of the MCP config" in str(tools.failures["dead"])
        messages = sorted(str(w.message) for w in warned)
        assert messages == sorted(str(exc) for exc in tools.failures.values())
        for text in [*messages, *(repr(exc) for exc in tools.failures.values())]:
            assert SECRET not in text
    await leaks.assert_clean()


async def test_refresh_takes_in_a_server_that_now_loads(tmp_path: Path, leaks: LeakChecker) -> None:
    later = tmp_path / "later.py"  # not there yet: python exits at once
    config = {
        "mcpServers": {
            "now": kitchen(),
            "later": {"command": PYTHON, "args": [str(later)]},
            "crash": {"command": PYTHON, "args": [str(SERVERS / "crasher.py")]},
        }
    }
    with pytest.warns(ServerSkippedWarning) as warned:
        tools = await load_mcp_tools_from_config(config, on_error="skip", include=["echo"])
    assert len(warned) == 2
    async with tools:
        assert [t.name for t in tools] == ["now__echo"]
        assert sorted(tools.failures) == ["crash", "later"]
        assert "FATAL missing configuration" in str(tools.failures["crash"])

        shutil.copy(KITCHEN, later)
        with pytest.warns(ServerSkippedWarning, match="server 'crash'"):
            changes = await tools.refresh()
        assert changes.added == ("later__echo",)
        assert [t.name for t in tools] == ["now__echo", "later__echo"]
        assert list(tools.failures) == ["crash"]
        assert (await tools[1].execute({"message": "joined"})).text == "joined"

        copy = pickle.loads(pickle.dumps(tools))
        assert list(copy.failures) == ["crash"]
    assert tools.closed
    with pytest.raises(UserError, match="closed"):
        await tools.refresh()
    await leaks.assert_clean()


async def test_all_failing_is_an_empty_list_and_raise_stays_the_default(tmp_path: Path) -> None:
    config = {"mcpServers": {"crash": {"command": PYTHON, "args": [str(SERVERS / "crasher.py")]}}}
    with pytest.warns(ServerSkippedWarning):
        tools = await load_mcp_tools_from_config(config, on_error="skip")
    assert list(tools) == [] and list(tools.failures) == ["crash"]
    assert not tools.closed
    await tools.aclose()
    assert tools.closed  # closed, though it holds no server's list
    with pytest.raises(UserError, match="closed"):
        await tools.refresh()
    with pytest.raises(MCPError, match="server 'crash' of the MCP config"):
        await load_mcp_tools_from_config(config)
    with pytest.raises(UserError, match='on_error must be "raise" or "skip"'):
        await load_mcp_tools_from_config(config, on_error="ignore")  # type: ignore[arg-type]


async def test_a_list_of_one_server_has_no_failures(kitchen_http: RunningServer) -> None:
    tools = await load_mcp_tools_from_config({"mcpServers": {"web": {"url": kitchen_http.url}}})
    assert dict(tools.failures) == {}
    await tools.aclose()


def test_cli_tools_lists_the_others_and_says_why_two_failed(
    tmp_path: Path, kitchen_http: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(five_servers(tmp_path, kitchen_http)))
    assert main(["tools", "--config", str(path), "--timeout", "15"]) == 1
    captured = capsys.readouterr()
    assert "web__add(a: int, b: int)" in captured.out and "more__echo(message: str)" in captured.out
    assert "not loaded: server 'missing' of the MCP config" in captured.err
    assert "not loaded: server 'dead' of the MCP config" in captured.err
    assert SECRET not in captured.out + captured.err
