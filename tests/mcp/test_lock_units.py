"""Lockfile entries without a server: what a lockfile keeps of a config (never a secret), what a config
read back from it is, which entry a server matches, and what a bad lockfile says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import types

from cubepi.errors import UserError
from cubepi.mcp import HttpServer, StdioServer, load_mcp_tools_from_lock
from cubepi.mcp._calls.protocol import Learned, Protocol
from cubepi.mcp._lists.from_lock import locked_server
from cubepi.mcp._lockfile import (
    FORMAT,
    LockedServer,
    compare,
    definition,
    definition_hash,
    dumps,
    learned_of,
    matching,
    read_lock,
    server_entry,
)

TOOL = {"name": "add", "description": "Add.", "inputSchema": {"type": "object"}}


def entry_of(name: str, server: StdioServer | HttpServer, learned: Learned | None = None) -> LockedServer:
    lock = {"cubepi_lock": FORMAT, "servers": [server_entry(name, server, learned or Learned(), [TOOL])]}
    return read_lock(json.loads(dumps(lock)))[0]


def test_a_stdio_config_keeps_its_shape_and_no_secret(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server = StdioServer(
        "python", ["s.py"], env={"API_KEY": "s3cret"}, cwd=tmp_path, inherit_env=True, protocol="2026-07-28"
    )
    entry = entry_of("s", server)
    assert "s3cret" not in json.dumps(entry.config)
    assert entry.config == {
        "type": "stdio",
        "command": "python",
        "args": ["s.py"],
        "env": {"API_KEY": "${API_KEY}"},
        "cwd": str(tmp_path),
        "inherit_env": True,
        "protocol": "2026-07-28",
    }
    monkeypatch.setenv("API_KEY", "from-env")
    back = locked_server(entry)
    assert isinstance(back, StdioServer)
    assert (back.command, list(back.args), dict(back.env or {}), back.inherit_env, back.protocol) == (
        "python",
        ["s.py"],
        {"API_KEY": "from-env"},
        True,
        "2026-07-28",
    )
    plain = entry_of("p", StdioServer("python", ["s.py"]))
    assert plain.config == {"type": "stdio", "command": "python", "args": ["s.py"]}
    assert locked_server(plain).inherit_env is False  # type: ignore[union-attr]


def test_an_http_config_drops_credentials_query_and_header_values(monkeypatch: pytest.MonkeyPatch) -> None:
    server = HttpServer(
        "https://user:pw@[::1]:8443/mcp?token=t0k#frag",
        headers={"X-Api-Key": "k3y"},
        transport="streamable-http",
    )
    entry = entry_of("h", server)
    text = json.dumps(entry.config)
    assert not any(secret in text for secret in ("pw", "user", "t0k", "k3y", "frag"))
    assert entry.config == {
        "type": "http",
        "url": "https://[::1]:8443/mcp",
        "transport": "streamable-http",
        "headers": {"X-Api-Key": "${X_API_KEY}"},
    }
    monkeypatch.setenv("X_API_KEY", "k3y")
    back = locked_server(entry)
    assert isinstance(back, HttpServer)
    assert (back.url, dict(back.headers or {}), back.transport) == (  # type: ignore[arg-type]
        "https://[::1]:8443/mcp",
        {"X-Api-Key": "k3y"},
        "streamable-http",
    )
    bare = entry_of("b", HttpServer("http://127.0.0.1/mcp"))
    assert bare.config == {"type": "http", "url": "http://127.0.0.1/mcp", "transport": "auto"}
    assert locked_server(bare).headers is None  # type: ignore[union-attr]


def test_a_reference_missing_from_the_environment_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET_HERE", raising=False)
    entry = LockedServer("x", {"type": "stdio", "command": "c", "env": {"A": "${NOT_SET_HERE}"}}, None, {})
    with pytest.raises(UserError, match=r"env 'A' is \$\{NOT_SET_HERE\} in the lockfile.*NOT_SET_HERE"):
        locked_server(entry)
    literal = LockedServer("x", {"type": "stdio", "command": "c", "env": {"A": "plain"}}, None, {})
    assert dict(locked_server(literal).env or {}) == {"A": "plain"}  # type: ignore[union-attr]
    with pytest.raises(UserError, match="server 'x' of the lockfile has a malformed config"):
        locked_server(LockedServer("x", {"type": "http"}, None, {}))


def test_matching_takes_the_same_server_else_the_only_one() -> None:
    one = entry_of("one", StdioServer("python", ["a.py"]))
    two = entry_of("two", StdioServer("python", ["b.py"]))
    web = entry_of("web", HttpServer("http://127.0.0.1:9/mcp"))
    assert matching([one, two, web], StdioServer("python", ["b.py"])).name == "two"
    assert matching([one, two, web], HttpServer("http://127.0.0.1:9/mcp")).name == "web"
    assert matching([one], StdioServer("node", ["other.js"])).name == "one"
    with pytest.raises(UserError, match="pins no server like"):
        matching([one, two], StdioServer("node", ["other.js"]))


def test_bad_lockfiles_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read lockfile"):
        read_lock(tmp_path / "missing.lock")
    (tmp_path / "bad.lock").write_text("{not json")
    with pytest.raises(UserError, match="is not JSON"):
        read_lock(tmp_path / "bad.lock")
    with pytest.raises(UserError, match="is not a cubepi lockfile"):
        read_lock({"cubepi_lock": FORMAT + 1, "servers": []})
    with pytest.raises(UserError, match="has no list of servers"):
        read_lock({"cubepi_lock": FORMAT, "servers": {}})
    with pytest.raises(UserError, match="malformed server entry"):
        read_lock({"cubepi_lock": FORMAT, "servers": [{"name": "s", "tools": [{}]}]})


def test_the_protocol_found_is_learned_back() -> None:
    discover = types.DiscoverResult.model_validate(
        {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "s", "version": "1"},
        }
    )
    learned = Learned(protocol=Protocol("2026-07-28", discover), transport="streamable-http")
    server = HttpServer("http://127.0.0.1/mcp")
    task_only = {**TOOL, "name": "slow", "execution": {"taskSupport": "required"}}
    lock = {"cubepi_lock": FORMAT, "servers": [server_entry("s", server, learned, [TOOL, task_only])]}
    assert "null" not in dumps(lock)  # the discover result without its empty fields
    entry = read_lock(lock)[0]
    back = learned_of(entry)
    assert set(back.definitions) == {"slow"}  # a call of it needs its definition; of add, not
    assert back.protocol is not None and back.protocol.version == "2026-07-28"
    assert back.protocol.discover == discover
    assert back.transport == "streamable-http"
    assert learned_of(entry_of("n", HttpServer("http://127.0.0.1/mcp"))).protocol is None


def test_compare_and_hashes() -> None:
    entry = entry_of("s", StdioServer("python", ["a.py"]))
    same: list[dict[str, Any]] = [dict(TOOL)]
    assert not compare(entry, same)
    changed = compare(entry, [{**TOOL, "description": "Subtract."}, {"name": "new"}])
    assert (changed.changed, changed.added, changed.removed) == (("add",), ("new",), ())
    assert compare(entry, []).removed == ("add",)
    assert definition_hash(definition(TOOL)) == definition_hash(definition({**TOOL, "extra": 1}))
    assert definition_hash(definition(TOOL)) != definition_hash(definition({**TOOL, "title": "T"}))


async def test_a_list_from_a_lockfile_names_and_checks_as_a_load_would() -> None:
    one = server_entry("calc", StdioServer("python", ["a.py"]), Learned(), [TOOL])
    two = server_entry("more", StdioServer("python", ["b.py"]), Learned(), [TOOL])
    single = {"cubepi_lock": FORMAT, "servers": [one]}
    async with await load_mcp_tools_from_lock(single, prefix="p") as tools:
        assert [tool.name for tool in tools] == ["p__add"]
        assert not hasattr(tools, "servers")  # one server: a plain list
    with pytest.raises(UserError, match="nope"):
        await load_mcp_tools_from_lock(single, include=["nope"])  # one server: include names its tools
    both = {"cubepi_lock": FORMAT, "servers": [one, two]}
    async with await load_mcp_tools_from_lock(both, include=["add", "nope"]) as tools:
        assert [tool.name for tool in tools] == ["calc__add", "more__add"]
        assert list(tools.servers) == ["calc", "more"]  # type: ignore[attr-defined]
    once = (name for name in ["add"])  # read once, for every server
    async with await load_mcp_tools_from_lock(both, include=once) as tools:
        assert [tool.name for tool in tools] == ["calc__add", "more__add"]
    with pytest.raises(UserError, match="drop prefix"):
        await load_mcp_tools_from_lock(both, prefix="p")
    with pytest.raises(UserError, match="tasks must be True or False"):
        await load_mcp_tools_from_lock(single, tasks="yes")  # type: ignore[arg-type]
