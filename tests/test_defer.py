"""Deferred catalogs: `search_tools` finds, `call_tool` runs with the target's own validation and policies."""

from __future__ import annotations

import json

import pytest

from cubepi import UserError, tool
from cubepi.defer import defer_tools


@tool
def read_file(path: str) -> str:
    """Read a text file from disk."""
    return f"content of {path}"


@tool
def list_directory(path: str) -> list[str]:
    """List the entries of a directory."""
    return ["a.txt", "b.txt"]


@tool(needs_approval=lambda p: p.path.startswith("/etc"))  # type: ignore[attr-defined]
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def catalog() -> list:  # type: ignore[type-arg]
    return [read_file, list_directory, delete_file]


async def test_search_ranks_name_matches_and_returns_schemas() -> None:
    search, _, prompt = defer_tools(catalog())
    result = await search.execute({"query": "read a file"})
    hits = json.loads(result.text)
    assert hits[0]["name"] == "read_file"
    assert hits[0]["parameters"]["properties"]["path"]["type"] == "string"
    assert "read_file" in prompt and "list_directory" in prompt and "delete_file" in prompt


async def test_search_limit_and_no_match() -> None:
    search, _, _ = defer_tools(catalog())
    assert len(json.loads((await search.execute({"query": "file", "limit": 1})).text)) == 1
    none = await search.execute({"query": "weather forecast"})
    assert not none.is_error
    assert "No tool matches" in none.text and "read_file" in none.text


async def test_call_tool_runs_the_target_with_its_validation() -> None:
    _, call, _ = defer_tools(catalog())
    ok = await call.execute({"name": "read_file", "arguments": {"path": "/tmp/x"}})
    assert ok.text == "content of /tmp/x"
    bad = await call.execute({"name": "read_file", "arguments": {"path": 3}})
    assert bad.is_error and "Invalid arguments for tool 'read_file'" in bad.text
    unknown = await call.execute({"name": "read_fil", "arguments": {}})
    assert unknown.is_error and "Did you mean read_file" in unknown.text


def test_call_tool_keeps_the_targets_approval_policy() -> None:
    _, call, _ = defer_tools(catalog())
    needs = call.parameters.model_validate({"name": "delete_file", "arguments": {"path": "/etc/passwd"}})
    fine = call.parameters.model_validate({"name": "delete_file", "arguments": {"path": "/tmp/x"}})
    other = call.parameters.model_validate({"name": "read_file", "arguments": {"path": "/etc/passwd"}})
    assert call.requires_approval(needs)
    assert not call.requires_approval(fine)
    assert not call.requires_approval(other)


def test_collisions_are_refused_naming_both_origins() -> None:
    with pytest.raises(UserError, match="two tools are named 'read_file'"):
        defer_tools([read_file, read_file.replace(origin="second server")])
    with pytest.raises(UserError, match="read_file"):
        defer_tools(catalog(), direct=[read_file.replace(origin="direct list")])
    with pytest.raises(UserError, match="search_tools"):
        defer_tools([*catalog(), read_file.replace(name="search_tools")])
    with pytest.raises(UserError, match="at least one"):
        defer_tools([])


def test_the_two_tools_concatenate_with_direct_tools() -> None:
    deferred = defer_tools(catalog())
    tools = [*deferred.tools, list_directory.replace(name="ls")]
    assert [t.name for t in tools] == ["search_tools", "call_tool", "ls"]
