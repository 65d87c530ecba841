"""Lockfiles (issue 35): lock a server, change it, load against the lock with each policy; `cubepi lock
--check`; a list built from the lockfile alone sends no listing."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from conftest import PYTHON, SERVERS

from cubepi.cli import main
from cubepi.errors import UserError
from cubepi.mcp import (
    DriftWarning,
    StdioServer,
    load_mcp_tools,
    load_mcp_tools_from_config,
    load_mcp_tools_from_lock,
)

VERSIONED = str(SERVERS / "versioned.py")


@pytest.fixture
def served(tmp_path: Path) -> tuple[Path, Path, StdioServer]:
    """The version file, the request log, and the server reading both."""
    version, log = tmp_path / "version", tmp_path / "requests"
    version.write_text("1")
    server = StdioServer(PYTHON, [VERSIONED], env={"VERSION_FILE": str(version), "REQUEST_LOG": str(log)})
    return version, log, server


def _lock(tmp_path: Path, version: Path, log: Path) -> Path:
    out = tmp_path / "cubepi.lock"
    env = ["--env", f"VERSION_FILE={version}", "--env", f"REQUEST_LOG={log}"]
    assert main(["lock", "-o", str(out), *env, "--", PYTHON, VERSIONED]) == 0
    return out


async def _alock(tmp_path: Path, version: Path, log: Path) -> Path:
    return await anyio.to_thread.run_sync(_lock, tmp_path, version, log)


def test_the_lockfile_pins_definitions_and_hides_env_values(
    tmp_path: Path, served: tuple[Path, Path, StdioServer]
) -> None:
    version, log, _ = served
    text = _lock(tmp_path, version, log).read_text()
    assert text.endswith("}\n") and str(version) not in text and str(log) not in text
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n"
    (entry,) = data["servers"]
    assert entry["config"]["env"] == {"REQUEST_LOG": "${REQUEST_LOG}", "VERSION_FILE": "${VERSION_FILE}"}
    assert [tool["definition"]["name"] for tool in entry["tools"]] == ["greet", "old"]
    assert entry["tools"][0]["definition"]["description"] == "Greet someone by name."
    assert all(tool["sha256"].startswith("sha256:") for tool in entry["tools"])
    assert entry["protocol"]["version"]
    # Locking again gives the same bytes.
    again = tmp_path / "again.lock"
    env = ["--env", f"VERSION_FILE={version}", "--env", f"REQUEST_LOG={log}"]
    assert main(["lock", "-o", str(again), *env, "--", PYTHON, VERSIONED]) == 0
    assert again.read_text() == text


async def test_no_drift_loads_every_tool_without_warning(
    tmp_path: Path, served: tuple[Path, Path, StdioServer]
) -> None:
    version, log, server = served
    lock = await _alock(tmp_path, version, log)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DriftWarning)
        tools = await load_mcp_tools(server, lock=lock)
    assert [t.name for t in tools] == ["greet", "old"] and not tools.drift


async def test_refuse_leaves_out_changed_and_new_tools(
    tmp_path: Path, served: tuple[Path, Path, StdioServer]
) -> None:
    version, log, server = served
    lock = await _alock(tmp_path, version, log)
    version.write_text("2")
    with pytest.warns(DriftWarning) as caught:
        tools = await load_mcp_tools(server, lock=lock)
    assert [t.name for t in tools] == []
    assert tools.drift is not None
    assert (tools.drift.changed, tools.drift.added, tools.drift.removed) == (("greet",), ("added",), ("old",))
    messages = [str(w.message) for w in caught]
    assert any("'greet' changed" in m and "left out" in m for m in messages)
    assert any("'old' was removed" in m for m in messages)


async def test_a_connection_loaded_against_the_lock_reports_the_drift(
    tmp_path: Path, served: tuple[Path, Path, StdioServer]
) -> None:
    version, log, server = served
    lock = await _alock(tmp_path, version, log)
    version.write_text("2")
    async with server.connect() as conn:
        with pytest.warns(DriftWarning):
            tools = await load_mcp_tools(conn, lock=lock, on_drift="warn")
        assert tools.drift is not None
        assert (tools.drift.changed, tools.drift.added, tools.drift.removed) == (
            ("greet",),
            ("added",),
            ("old",),
        )
        assert sorted(t.name for t in tools) == ["added", "greet"]


async def test_warn_keeps_changed_tools(tmp_path: Path, served: tuple[Path, Path, StdioServer]) -> None:
    version, log, server = served
    lock = await _alock(tmp_path, version, log)
    version.write_text("2")
    with pytest.warns(DriftWarning) as caught:
        tools = await load_mcp_tools(server, lock=lock, on_drift="warn")
    assert any(re.search("'greet' changed.*kept", str(w.message)) for w in caught)
    assert sorted(t.name for t in tools) == ["added", "greet"]
    assert not any(t.needs_approval for t in tools)
    result = await next(t for t in tools if t.name == "greet").execute({"name": "Ada"})
    assert "greet v2" in result.content[0].text  # type: ignore[union-attr]


async def test_approve_requires_approval_for_changed_tools_only(
    tmp_path: Path, served: tuple[Path, Path, StdioServer]
) -> None:
    version, log, server = served
    lock = await _alock(tmp_path, version, log)
    version.write_text("2")
    with pytest.warns(DriftWarning):
        tools = await load_mcp_tools(server, lock=lock, on_drift="approve")
    approval = {t.name: t.needs_approval for t in tools}
    assert approval == {"added": True, "greet": True}
    with pytest.warns(DriftWarning):
        chosen = await load_mcp_tools(server, lock=lock, on_drift="approve", include=["added"])
    assert [(t.name, t.needs_approval) for t in chosen] == [("added", True)]


async def test_bad_lock_options_are_user_errors(
    tmp_path: Path, served: tuple[Path, Path, StdioServer]
) -> None:
    version, log, server = served
    lock = await _alock(tmp_path, version, log)
    with pytest.raises(UserError, match="on_drift must be one of"):
        await load_mcp_tools(server, lock=lock, on_drift="ignore")  # type: ignore[arg-type]
    (tmp_path / "bad.lock").write_text("{}")
    with pytest.raises(UserError, match="not a cubepi lockfile"):
        await load_mcp_tools(server, lock=tmp_path / "bad.lock")
    with pytest.raises(UserError, match="cannot read"):
        await load_mcp_tools(server, lock=tmp_path / "missing.lock")


def test_check_fails_on_drift_and_passes_without(
    tmp_path: Path,
    served: tuple[Path, Path, StdioServer],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    version, log, _ = served
    lock = _lock(tmp_path, version, log)
    capsys.readouterr()
    monkeypatch.setenv("VERSION_FILE", str(version))
    monkeypatch.setenv("REQUEST_LOG", str(log))
    assert main(["lock", "--check", str(lock)]) == 0  # the servers of the lockfile, ${NAME} from the env
    assert "every tool matches" in capsys.readouterr().out
    version.write_text("2")
    assert main(["lock", "--check", str(lock)]) == 1
    out = capsys.readouterr().out
    assert "'greet' changed" in out and "'added' is new" in out and "'old' was removed" in out
    env = ["--env", f"VERSION_FILE={version}", "--env", f"REQUEST_LOG={log}"]
    assert main(["lock", "--check", str(lock), *env, "--", PYTHON, VERSIONED]) == 1


async def test_a_list_from_the_lockfile_sends_no_listing(
    tmp_path: Path, served: tuple[Path, Path, StdioServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    version, log, _ = served
    lock = await _alock(tmp_path, version, log)
    log.write_text("")
    monkeypatch.setenv("VERSION_FILE", str(version))
    monkeypatch.setenv("REQUEST_LOG", str(log))
    async with await load_mcp_tools_from_lock(lock) as tools:
        assert [t.name for t in tools] == ["greet", "old"]
        assert tools[0].description == "Greet someone by name."
        assert not any(t.needs_approval for t in tools)  # no approval unless asked for
        assert log.read_text() == ""  # built from the lockfile: nothing sent
        result = await tools[0].execute({"name": "Ada"})
        assert "greet v1" in result.content[0].text  # type: ignore[union-attr]
    assert log.read_text().split() == ["tools/call"]


async def test_a_lockfile_reference_missing_from_the_environment_is_named(
    tmp_path: Path, served: tuple[Path, Path, StdioServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    version, log, _ = served
    lock = await _alock(tmp_path, version, log)
    monkeypatch.delenv("REQUEST_LOG", raising=False)
    with pytest.raises(UserError, match="environment has no REQUEST_LOG"):
        await load_mcp_tools_from_lock(lock)


async def test_a_config_loaded_against_the_lock_reports_the_drift(
    tmp_path: Path, served: tuple[Path, Path, StdioServer]
) -> None:
    version, log, _ = served
    lock = await _alock(tmp_path, version, log)
    version.write_text("2")
    env = {"VERSION_FILE": str(version), "REQUEST_LOG": str(log)}
    config = {"mcpServers": {"v": {"command": PYTHON, "args": [VERSIONED], "env": env}}}
    with pytest.warns(DriftWarning):
        tools = await load_mcp_tools_from_config(config, lock=lock)
    async with tools:
        assert [t.name for t in tools] == []
        drift = tools.drift
        assert drift is not None
        assert (drift.changed, drift.added, drift.removed) == (("greet",), ("added",), ("old",))
