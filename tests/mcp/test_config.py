"""`load_mcp_tools_from_config` and ``cubepi tools|call --config`` against real servers: the ``mcpServers``
file of Claude Desktop / Cursor / VS Code / fastmcp, ``${VAR}`` expansion, per-server policies, one list
that closes every server, and readable errors that never show a secret."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import EVERYTHING, KITCHEN, PYTHON, SERVERS, LeakChecker, RunningServer

from cubepi import MCPError, MCPTimeoutError, UserError
from cubepi.cli import main
from cubepi.mcp import MCPToolList, ToolChanges, load_mcp_tools_from_config

SECRET = "s3cr3t-value-never-shown"


def _need_everything() -> None:
    if not EVERYTHING.exists():
        pytest.skip("test servers not installed: npm ci --prefix tests")


def kitchen(**extra: Any) -> dict[str, Any]:
    return {"command": PYTHON, "args": [str(KITCHEN)], **extra}


def write(tmp_path: Path, servers: dict[str, Any], key: str = "mcpServers") -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({key: servers, "globalShortcut": "Ctrl+Space"}))
    return path


async def test_a_file_of_two_stdio_servers_is_one_prefixed_list(tmp_path: Path, leaks: LeakChecker) -> None:
    _need_everything()
    path = write(
        tmp_path,
        {
            "kitchen": kitchen(),
            "every": {"type": "stdio", "command": str(EVERYTHING), "args": ["stdio"]},
        },
    )
    tools = await load_mcp_tools_from_config(path, servers={"kitchen": {"include": ["echo", "add"]}})
    assert isinstance(tools, MCPToolList)
    names = [t.name for t in tools]
    assert names[:2] == ["kitchen__echo", "kitchen__add"]  # file order, then the server's order
    assert "every__echo" in names and "every__get-sum" in names
    by_name = {t.name: t for t in tools}
    assert (await by_name["every__echo"].execute({"message": "hi"})).text == "Echo: hi"
    assert (await by_name["kitchen__add"].execute({"a": 2, "b": 40})).text == "42"
    await tools.aclose()
    assert tools.closed
    with pytest.raises(UserError, match="closed"):
        await by_name["kitchen__echo"].execute({"message": "late"})


async def test_env_cwd_and_defaults_are_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leaks: LeakChecker
) -> None:
    monkeypatch.setenv("CUBEPI_TEST_TOKEN", SECRET)
    monkeypatch.setenv("CUBEPI_TEST_DIR", str(tmp_path))
    monkeypatch.delenv("CUBEPI_TEST_UNSET", raising=False)
    config = {
        "mcpServers": {
            "k": kitchen(
                env={
                    "TOKEN": "Bearer ${CUBEPI_TEST_TOKEN}",
                    "LEVEL": "${CUBEPI_TEST_UNSET:-warn}",
                    "VSCODE": "${env:CUBEPI_TEST_TOKEN}",
                },
                cwd="${CUBEPI_TEST_DIR}",
            )
        }
    }
    async with await load_mcp_tools_from_config(config, include=["context"]) as tools:
        assert [t.name for t in tools] == ["k__context"]
        result = await tools[0].execute({"names": ["TOKEN", "LEVEL", "VSCODE"]})
    seen = result.details["structuredContent"]
    assert seen["env"] == {"TOKEN": f"Bearer {SECRET}", "LEVEL": "warn", "VSCODE": SECRET}
    assert seen["cwd"] == str(tmp_path)


async def test_http_and_sse_servers_with_expanded_headers(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kitchen_http: RunningServer,
    everything_sse: RunningServer,
) -> None:
    monkeypatch.setenv("CUBEPI_TEST_TOKEN", SECRET)
    path = write(
        tmp_path,
        {
            "web": {"url": kitchen_http.url, "type": "http", "headers": {"X-Demo": "${CUBEPI_TEST_TOKEN}"}},
            "old": {"url": everything_sse.url, "transport": "sse"},
            "auto": {"url": kitchen_http.url},
        },
    )
    async with await load_mcp_tools_from_config(
        path, include=["header", "echo"], servers={"old": {"include": ["echo"]}}
    ) as tools:
        by_name = {t.name: t for t in tools}
        assert set(by_name) == {"web__header", "web__echo", "old__echo", "auto__header", "auto__echo"}
        assert (await by_name["web__header"].execute({"name": "x-demo"})).text == SECRET
        assert (await by_name["auto__header"].execute({"name": "x-demo"})).text == "<none>"
        assert (await by_name["old__echo"].execute({"message": "hi"})).text == "Echo: hi"
        assert SECRET not in repr(tools) and SECRET not in by_name["web__header"].origin


async def test_vs_code_form_and_disabled_servers(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "k": {"type": "stdio", **kitchen(), "description": "the test kitchen"},
            "off": {"command": "/nonexistent/never-started", "disabled": True},
        },
        key="servers",
    )
    async with await load_mcp_tools_from_config(path, include=["echo"]) as tools:
        assert [t.name for t in tools] == ["k__echo"]


async def test_per_server_policies_override_the_shared_ones(tmp_path: Path) -> None:
    config = {"mcpServers": {"a": kitchen(), "b": kitchen()}}
    async with await load_mcp_tools_from_config(
        config,
        include=["echo"],
        max_output_chars=3,
        servers={"b": {"include": ["add"], "prefix": "bee", "needs_approval": True}},
    ) as tools:
        assert [t.name for t in tools] == ["a__echo", "bee__add"]
        assert tools[0].needs_approval is False and tools[1].needs_approval is True
        cut = await tools[0].execute({"message": "abcdefgh"})
        assert cut.text.startswith("abc") and "defgh" not in cut.text


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"command": "x", "autoApprove": []}, "server 'bad': unknown key 'autoApprove'"),
        ({"args": ["x"]}, "server 'bad': needs \"command\""),
        ({"command": "x", "url": "http://h/mcp"}, 'has both "command" and "url"'),
        ({"command": "x", "headers": {}}, "'headers' applies to url servers"),
        ({"url": "http://h/mcp", "env": {}}, "'env' applies to stdio servers"),
        ({"type": "websocket", "url": "ws://h"}, "unknown transport 'websocket'"),
        ({"type": "http", "command": "x"}, 'a streamable-http server needs "url"'),
        ({"type": "sse", "transport": "http", "url": "http://h"}, "disagree"),
        ({"command": "x", "args": "--flag"}, "args must be a list of strings"),
        ({"command": ["x"]}, "command must be a string"),
        ({"url": "ftp://h/mcp"}, "server 'bad': HttpServer needs an http:// or https:// URL"),
        ({"command": ""}, "server 'bad': StdioServer needs a command"),
        ({"url": "${CUBEPI_TEST_MISSING}"}, "server 'bad': url uses ${CUBEPI_TEST_MISSING}, but"),
        ({"command": "x", "env": {"K": "${input:token}"}}, "env.K: unsupported placeholder ${input:token}"),
        ({"command": "x", "disabled": "yes"}, "server 'bad': \"disabled\" must be true or false"),
    ],
)
async def test_bad_entries_name_the_key_and_the_server(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError) as caught:
        await load_mcp_tools_from_config({"mcpServers": {"bad": entry}})
    assert message in str(caught.value)


async def test_a_missing_variable_names_it_and_the_server_and_shows_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUBEPI_TEST_TOKEN", SECRET)
    monkeypatch.delenv("CUBEPI_TEST_MISSING", raising=False)
    path = write(
        tmp_path,
        {
            "gh": {
                "url": "https://example.invalid/mcp?key=${CUBEPI_TEST_TOKEN}",
                "headers": {"A": "${CUBEPI_TEST_TOKEN}", "B": "Bearer ${CUBEPI_TEST_MISSING}"},
            }
        },
    )
    with pytest.raises(UserError) as caught:
        await load_mcp_tools_from_config(path)
    text = str(caught.value)
    assert "server 'gh'" in text and "CUBEPI_TEST_MISSING" in text and "headers.B" in text
    assert str(path) in text
    assert SECRET not in text


async def test_bad_files_and_policies_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read the MCP config"):
        await load_mcp_tools_from_config(tmp_path / "nope.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"mcpServers": {"a": }')
    with pytest.raises(UserError, match=r"not valid JSON: .* \(line 1, column 22\)"):
        await load_mcp_tools_from_config(broken)
    with pytest.raises(UserError, match='no "mcpServers" object'):
        await load_mcp_tools_from_config({"tools": []})

    config = {"mcpServers": {"a": kitchen()}}
    with pytest.raises(UserError, match="prefixes each server's tools with its name"):
        await load_mcp_tools_from_config(config, prefix="x")
    with pytest.raises(UserError, match="servers= names 'b', which the config does not have"):
        await load_mcp_tools_from_config(config, servers={"b": {}})
    with pytest.raises(UserError, match="unknown policy 'incude' for server 'a'"):
        await load_mcp_tools_from_config(config, servers={"a": {"incude": ["echo"]}})
    with pytest.raises(UserError, match="unknown policy 'retry'"):
        await load_mcp_tools_from_config(config, retry=2)


async def test_a_failing_server_is_named_and_nothing_is_left_running(leaks: LeakChecker) -> None:
    config = {
        "mcpServers": {
            "good": kitchen(),
            "broken": {"command": PYTHON, "args": [str(SERVERS / "crasher.py")]},
        }
    }
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools_from_config(config, servers={"good": {"prespawn": True}})
    assert "server 'broken' of the MCP config" in str(caught.value)
    assert "FATAL missing configuration KITCHEN_TOKEN" in (caught.value.stderr or "")
    await leaks.assert_clean()


async def test_a_server_failing_after_others_loaded_closes_them(leaks: LeakChecker) -> None:
    # "silent" never answers initialize: it fails on its startup timeout, after "good" has loaded
    # (and started its spare server process, which must be reaped).
    config = {
        "mcpServers": {
            "good": kitchen(),
            "silent": {"command": PYTHON, "args": ["-c", "import sys; sys.stdin.read()"]},
        }
    }
    with pytest.raises(MCPTimeoutError) as caught:
        await load_mcp_tools_from_config(
            config, servers={"good": {"prespawn": True}, "silent": {"startup_timeout": 5}}
        )
    assert "server 'silent' of the MCP config" in str(caught.value)
    assert caught.value.phase in ("startup", "initialize")
    await (
        leaks.assert_clean()
    )  # now, while the loop (which would reap an unclosed list's spare at its end) runs


async def test_a_policy_one_server_refuses_is_named(kitchen_http: RunningServer) -> None:
    config = {"mcpServers": {"web": {"url": kitchen_http.url}}}
    with pytest.raises(UserError, match="server 'web' of the MCP config: prespawn=True applies to stdio"):
        await load_mcp_tools_from_config(config, prespawn=True)


async def test_colliding_names_are_refused(leaks: LeakChecker) -> None:
    config = {"mcpServers": {"a": kitchen(), "b": kitchen()}}
    with pytest.raises(UserError, match="two tools are named 'same__echo'"):
        await load_mcp_tools_from_config(
            config,
            include=["echo"],
            servers={"a": {"prefix": "same", "prespawn": True}, "b": {"prefix": "same", "prespawn": True}},
        )
    await leaks.assert_clean()


def test_cli_tools_and_call_read_the_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _need_everything()
    path = write(tmp_path, {"kitchen": kitchen(), "every": {"command": str(EVERYTHING), "args": ["stdio"]}})

    assert main(["tools", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"tools from {path}:" in out
    assert "kitchen__add(a: int, b: int)" in out and "every__echo(message: str)" in out

    assert main(["call", "--config", str(path), "every__get-sum", '{"a": 40, "b": 2}']) == 0
    assert "42" in capsys.readouterr().out

    assert main(["call", "--config", str(path), "echo", "{}"]) == 2
    err = capsys.readouterr().err
    assert f"{path} has no tool 'echo'" in err and "kitchen__echo" in err

    assert main(["tools", "--config", str(path), "--url", "http://127.0.0.1:1/mcp"]) == 2
    assert "--config reads the servers from the file; drop --url" in capsys.readouterr().err

    assert main(["tools", "--config", str(tmp_path / "missing.json")]) == 2
    assert "cannot read the MCP config" in capsys.readouterr().err


async def test_app_only_tools_of_every_server_stay_out_of_the_list_and_survive_a_refresh(
    leaks: LeakChecker,
) -> None:
    config = {
        "mcpServers": {
            "k": kitchen(),
            "w": {"command": PYTHON, "args": [str(SERVERS / "whoami.py")]},
        }
    }
    async with await load_mcp_tools_from_config(config, servers={"k": {"include": ["echo"]}}) as tools:
        assert [t.name for t in tools] == ["k__echo", "w__whoami"]
        assert [t.name for t in tools.app_tools] == ["w__panel"]
        assert await tools.refresh(force=True) == ToolChanges()  # nothing failed to load, nothing changed
        assert [t.name for t in tools] == ["k__echo", "w__whoami"]
        assert '"panel": true' in (await tools.app_tools[0].execute({})).text
    await leaks.assert_clean()
