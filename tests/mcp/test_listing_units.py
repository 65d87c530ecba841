"""A session's listing (mcp/_calls/listings.py), asked of real stdio servers through a list's runner: the
pages followed in order, the shortest ``ttlMs`` (2026-07-28 only), the nameless and repeated tools skipped
with a warning, a repeated cursor, a failure or timeout named as the listing's, and no SDK import until a
listing runs."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import PYTHON, SERVERS, LeakChecker

from cubepi import MCPError, MCPTimeoutError
from cubepi.mcp import StdioServer
from cubepi.mcp._calls.limits import Timeouts
from cubepi.mcp._calls.listings import list_pages, list_tools
from cubepi.mcp._calls.runner import Stateless

STDIO_FAULTS = Path(__file__).parents[1] / "faults" / "servers" / "stdio_faults.py"
ERAS = ["auto", "legacy"]


def runner(server: StdioServer, timeout: float = 30, startup_timeout: float = 30) -> Stateless:
    return Stateless(server, Timeouts.from_options(timeout, startup_timeout), owned=False)


def faults(mode: str, protocol: str = "auto") -> StdioServer:
    return StdioServer(sys.executable, [str(STDIO_FAULTS), mode], protocol=protocol)


@pytest.mark.parametrize("protocol", ERAS)
async def test_every_page_is_listed_in_order(protocol: str, leaks: LeakChecker) -> None:
    server = StdioServer(PYTHON, [str(SERVERS / "paged.py")], protocol=protocol)
    tools, _ = await runner(server).request(list_tools)
    assert [tool.name for tool in tools] == [f"tool_{i}" for i in range(7)]


@pytest.mark.parametrize(("protocol", "ttl"), [("auto", 1234), ("legacy", None)])
async def test_the_ttl_hint_counts_on_2026_07_28_only(
    protocol: str, ttl: int | None, tmp_path: Path, leaks: LeakChecker
) -> None:
    """changing.py marks its listing fresh for 1234 ms; a handshake-era listing has no hint (None, not 0)."""
    env = {"TTL_MS": "1234", "STATE": str(tmp_path / "tools.json")}
    server = StdioServer(PYTHON, [str(SERVERS / "changing.py")], env=env, protocol=protocol)
    tools, got = await runner(server).request(list_tools)
    assert got == ttl
    assert [tool.name for tool in tools] == ["stable", "add_tool", "remove_tool"]


async def test_a_2026_listing_with_no_ttl_hint_is_not_fresh(leaks: LeakChecker) -> None:
    """stdio_faults.py answers ``ttlMs: 0``: the shortest hint is 0 (stale at once), not None."""
    _, ttl = await runner(faults("ok")).request(list_tools)
    assert ttl == 0


@pytest.mark.parametrize("protocol", ERAS)
async def test_nameless_and_repeated_tools_are_skipped_with_a_warning(
    protocol: str, caplog: pytest.LogCaptureFixture, leaks: LeakChecker
) -> None:
    server = faults("names", protocol)
    with caplog.at_level(logging.WARNING, logger="cubepi.mcp"):
        tools, _ = await runner(server).request(list_tools)
    assert [(tool.name, tool.description) for tool in tools] == [
        ("dup", "first dup"),
        ("has space", "spaced name"),
        ("echo", "a normal one"),
    ]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"skipping a second tool named 'dup' listed by {server.describe()} (keeping the first)",
        f"skipping a tool without a name listed by {server.describe()}",
    ]


async def test_a_repeated_cursor_is_an_error_naming_it_and_the_count(leaks: LeakChecker) -> None:
    """stdio_faults.py gives one tool a page, each with ``nextCursor: "page-2"``: page two repeats it."""
    server = faults("cursor_same")
    with pytest.raises(MCPError) as caught:
        await runner(server).request(list_tools)
    assert not isinstance(caught.value, MCPTimeoutError)
    assert str(caught.value) == (
        f"listing the tools of {server.describe()} failed: the server repeated the pagination cursor "
        "'page-2' after 2 tools"
    )
    assert caught.value.server == server.describe()


async def test_any_paginated_listing_is_asked_by_its_method_and_field(leaks: LeakChecker) -> None:
    """`list_pages` serves any paginated listing: kitchen.py offers no resource templates."""
    server = StdioServer(PYTHON, [str(SERVERS / "kitchen.py")])
    assert await runner(server).request(list_pages, "list_resource_templates", "resource_templates") == []


@pytest.mark.parametrize("protocol", ERAS)
async def test_a_server_dying_while_listing_names_the_listing(protocol: str, leaks: LeakChecker) -> None:
    server = faults("crash_list", protocol)
    with pytest.raises(MCPError) as caught:
        await runner(server).request(list_tools)
    assert not isinstance(caught.value, MCPTimeoutError)
    assert str(caught.value).startswith(f"listing the tools of {server.describe()} failed")
    assert "failure while listing" in (caught.value.stderr or "")


@pytest.mark.parametrize("protocol", ERAS)
async def test_an_unanswered_listing_is_a_list_timeout(protocol: str, leaks: LeakChecker) -> None:
    with pytest.raises(MCPTimeoutError) as caught:
        await runner(faults("hang_list", protocol), timeout=1).request(list_tools)
    assert (caught.value.phase, caught.value.limit) == ("list", 1.0)


def test_the_listing_module_imports_without_the_sdk() -> None:
    """`import cubepi.mcp` works without the mcp extra: the listing imports the SDK only when it runs."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["mcp"] = None  # as if the extra were not installed
        from cubepi.mcp._calls.listings import list_pages, list_tools
        print(list_tools.__name__, list_pages.__name__)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "list_tools list_pages"
