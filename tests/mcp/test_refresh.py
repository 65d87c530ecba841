"""Tool lists that change: `refresh()` in place, the server's cache hints, and connections that follow."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import PYTHON, SERVERS, LeakChecker, Recorder, StartServer

import cubepi.mcp._transports.http as opening
from cubepi.errors import UserError
from cubepi.mcp import (
    HttpServer,
    MCPToolList,
    StdioServer,
    ToolChanges,
    load_mcp_tools,
    load_mcp_tools_from_config,
)
from cubepi.mcp._lists.following import LISTEN_RETRIES

CHANGING = SERVERS / "changing.py"
ERAS = {"2026-07-28": "auto", "handshake": "legacy"}

MakeServer = Callable[..., "StdioServer | HttpServer"]


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=list(ERAS))
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_server(http_server_factory: StartServer, tmp_path: Path, transport: str, era: str) -> MakeServer:
    """A changing.py server of the test's transport and era; its added tools live in a file of its own."""

    def make(**env: str) -> StdioServer | HttpServer:
        env = {"STATE": str(tmp_path / "tools.json"), **env}
        if transport == "stdio":
            return StdioServer(PYTHON, [str(CHANGING)], env=env, protocol=ERAS[era])
        running = http_server_factory([PYTHON, str(CHANGING), "http"], "/mcp", env=env)
        return HttpServer(running.url, protocol=ERAS[era])

    return make


@pytest.fixture
def posts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The JSON-RPC method of every POST the lists' HTTP clients send."""
    import json

    seen: list[str] = []
    make = opening.http_client

    def recording(server: Any) -> Any:
        client = make(server)

        async def record(request: Any) -> None:
            if request.method == "POST":
                seen.append(json.loads(request.content).get("method", "?"))

        client.event_hooks["request"].append(record)
        return client

    monkeypatch.setattr(opening, "http_client", recording)
    return seen


@pytest.fixture
def changing_http(http_server_factory: StartServer, tmp_path: Path) -> Callable[..., str]:
    """Start changing.py over Streamable HTTP with `env` (its added tools in a file of its own); its URL."""

    def start(**env: str) -> str:
        env = {"STATE": str(tmp_path / f"{len(list(tmp_path.iterdir()))}.json"), **env}
        return http_server_factory([PYTHON, str(CHANGING), "http"], "/mcp", env=env).url

    return start


def _names(tools: list[Any]) -> list[str]:
    return [tool.name for tool in tools]


def _kept(tools: list[Any], before: list[Any]) -> bool:
    """Whether the first tools of `tools` are the very objects of `before`."""
    return all(new is old for new, old in zip(tools[: len(before)], before, strict=True))


def _tool(tools: list[Any], name: str) -> Any:
    return next(tool for tool in tools if tool.name == name)


async def _add(tools: list[Any], name: str, description: str, *, prefix: str = "") -> None:
    result = await _tool(tools, f"{prefix}add_tool").execute({"name": name, "description": description})
    assert not result.is_error, result.text


async def _remove(tools: list[Any], name: str, *, prefix: str = "") -> None:
    result = await _tool(tools, f"{prefix}remove_tool").execute({"name": name})
    assert not result.is_error, result.text


# -- refresh() -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("transport", "era"),
    [("http", "2026-07-28"), ("http", "handshake"), ("stdio", "2026-07-28")],
    indirect=True,
)
async def test_refresh_updates_the_list_in_place(make_server: MakeServer) -> None:
    async with await load_mcp_tools(make_server()) as tools:
        before = list(tools)
        assert _names(tools) == ["stable", "add_tool", "remove_tool"]
        nothing = await tools.refresh()
        assert nothing == ToolChanges() and not nothing

        await _add(tools, "extra", "first")
        changes = await tools.refresh()
        assert changes == ToolChanges(added=("extra",)) and changes
        assert _names(tools) == ["stable", "add_tool", "remove_tool", "extra"]
        assert _kept(tools, before)  # unchanged tools are the same objects
        result = await _tool(tools, "extra").execute({"text": "hi"})
        assert result.text == "extra: hi"

        first = _tool(tools, "extra")
        await _add(tools, "extra", "second")
        assert await tools.refresh() == ToolChanges(changed=("extra",))
        second = _tool(tools, "extra")
        assert second is not first and second.description == "second" and first.description == "first"
        assert _kept(tools, before)

        await _remove(tools, "extra")
        assert await tools.refresh() == ToolChanges(removed=("extra",))
        assert _names(tools) == ["stable", "add_tool", "remove_tool"]
        assert _kept(tools, before) and len(tools) == len(before)


async def test_refresh_keeps_the_policies_of_the_load(
    tmp_path: Path, changing_http: Callable[..., str]
) -> None:
    state = tmp_path / "seeded.json"
    state.write_text('{"doomed": "goes away"}')
    server = HttpServer(changing_http(STATE=str(state)))
    tools = await load_mcp_tools(server, prefix="c", include=["add_tool", "remove_tool", "doomed"])
    assert _names(tools) == ["c__add_tool", "c__remove_tool", "c__doomed"]
    await _add(tools, "extra", "not included", prefix="c__")
    await _remove(tools, "doomed", prefix="c__")
    # A tool `include` named that the server dropped is no longer an error; the new one is not included.
    assert await tools.refresh() == ToolChanges(removed=("c__doomed",))
    assert _names(tools) == ["c__add_tool", "c__remove_tool"]


async def test_refresh_keeps_tools_the_caller_added(changing_http: Callable[..., str]) -> None:
    from cubepi import tool

    @tool
    def mine() -> str:
        """A hand-written tool."""
        return "mine"

    tools = await load_mcp_tools(HttpServer(changing_http()))
    tools.append(mine)
    del tools[0]  # "stable", dropped by the caller: a refresh does not bring it back
    await _add(tools, "extra", "d")
    assert await tools.refresh() == ToolChanges(added=("extra",))
    assert _names(tools) == ["add_tool", "remove_tool", "mine", "extra"]


async def test_a_fresh_listing_sends_nothing(changing_http: Callable[..., str], posts: list[str]) -> None:
    server = HttpServer(changing_http(TTL_MS="600000", SCOPE="public"))
    async with await load_mcp_tools(server) as tools:
        await _add(tools, "extra", "d")
        posts.clear()
        assert await tools.refresh() == ToolChanges()  # the server said the listing stays fresh 10 minutes
        assert posts == []
        assert await tools.refresh(force=True) == ToolChanges(added=("extra",))
        assert posts == ["tools/list"]


async def test_a_fresh_listing_is_reused_for_its_ttl_capped_at_a_day(
    changing_http: Callable[..., str], posts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import types

    import cubepi.mcp._lists.toollist as toollist

    day = 24 * 60 * 60
    server = HttpServer(changing_http(TTL_MS=str(2 * day * 1000)))  # two days: a client keeps one at most
    async with await load_mcp_tools(server) as tools:
        await _add(tools, "extra", "d")
        posts.clear()
        ahead = 0.0  # the lists' clock runs `ahead` seconds ahead of the real one (waiting a day is no test)
        monkeypatch.setattr(
            toollist, "time", types.SimpleNamespace(monotonic=lambda: time.monotonic() + ahead)
        )
        ahead = day - 50  # less than a day since the listing, however slow this machine
        assert await tools.refresh() == ToolChanges() and posts == []
        ahead = day + 1  # more than a day: stale, though the server said two
        assert await tools.refresh() == ToolChanges(added=("extra",)) and posts == ["tools/list"]


@pytest.mark.parametrize(
    ("protocol", "ttl_ms"), [("auto", 50), ("legacy", 600_000)], ids=["stale", "handshake-era-no-hints"]
)
async def test_a_stale_or_unhinted_listing_is_asked_again(
    changing_http: Callable[..., str], posts: list[str], protocol: str, ttl_ms: int
) -> None:
    server = HttpServer(changing_http(TTL_MS=str(ttl_ms)), protocol=protocol)
    async with await load_mcp_tools(server) as tools:
        loaded = time.monotonic()
        await _add(tools, "extra", "d")
        if protocol == "auto":  # the listing was taken before `loaded`: stale `ttl_ms` after
            await anyio.sleep(max(loaded + ttl_ms / 1000 - time.monotonic(), 0) + 0.001)
        posts.clear()
        assert await tools.refresh() == ToolChanges(added=("extra",))
        assert "tools/list" in posts


async def test_refresh_of_a_config_list_merges_each_servers_changes(
    changing_http: Callable[..., str],
) -> None:
    config = {"mcpServers": {name: {"url": changing_http()} for name in ("one", "two")}}
    async with await load_mcp_tools_from_config(config) as tools:
        before = list(tools)
        await _add(tools, "extra", "d", prefix="two__")
        await _add(tools, "more", "d", prefix="one__")
        changes = await tools.refresh()
        assert sorted(changes.added) == ["one__more", "two__extra"] and not changes.removed
        assert _names(tools)[: len(before)] == _names(before)
        assert sorted(_names(tools)[len(before) :]) == ["one__more", "two__extra"]
        assert _kept(tools, before)
        await _remove(tools, "more", prefix="one__")
        assert await tools.refresh() == ToolChanges(removed=("one__more",))
        assert "one__more" not in _names(tools)


async def test_refresh_needs_a_loaded_open_list() -> None:
    with pytest.raises(UserError, match="not loaded from an MCP server"):
        await MCPToolList().refresh()
    tools = await load_mcp_tools(StdioServer(PYTHON, [str(CHANGING)]))
    await tools.aclose()
    with pytest.raises(UserError, match="closed"):
        await tools.refresh()


# -- connections follow the server -----------------------------------------------------------------------


@contextlib.contextmanager
def _logged(words: str) -> Iterator[anyio.Event]:
    """An event set once cubepi logs a message containing `words`."""
    seen = anyio.Event()

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if words in record.getMessage():
                seen.set()

    watch = Watch()
    logger = logging.getLogger("cubepi.mcp")
    logger.addHandler(watch)
    try:
        yield seen
    finally:
        logger.removeHandler(watch)


async def test_a_connection_follows_the_servers_tools(
    make_server: MakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="cubepi.mcp")
    server = make_server()
    leaks = LeakChecker()  # after an HTTP server started
    changed = Recorder()
    async with server.connect(on_tools_changed=changed) as conn:
        tools = await load_mcp_tools(conn)
        prefixed = await load_mcp_tools(conn, prefix="p")
        before = list(tools)

        await _add(tools, "extra", "d")
        assert await changed.next() == ToolChanges(added=("extra", "p__extra"))
        assert _names(tools) == ["stable", "add_tool", "remove_tool", "extra"]
        assert _names(prefixed)[-1] == "p__extra"
        assert _kept(tools, before)
        assert (await _tool(tools, "extra").execute({"text": "x"})).text == "extra: x"

        await _remove(tools, "extra")
        assert await changed.next() == ToolChanges(removed=("extra", "p__extra"))
        assert _names(tools) == _names(before)
    await leaks.assert_clean()  # the session and its listen stream are closed
    assert not caplog.records, [record.getMessage() for record in caplog.records]  # nothing went wrong


async def test_a_sync_callback_is_told_too(make_server: MakeServer) -> None:
    changed = Recorder()
    async with make_server().connect(on_tools_changed=changed.sync) as conn:
        tools = await load_mcp_tools(conn)
        await _add(tools, "extra", "d")
        assert await changed.next() == ToolChanges(added=("extra",))


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
async def test_errors_in_the_callback_are_logged(
    make_server: MakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    changed = Recorder(fail=True)
    caplog.set_level(logging.ERROR, logger="cubepi.mcp")
    async with make_server().connect(on_tools_changed=changed) as conn:
        tools = await load_mcp_tools(conn)
        await _add(tools, "extra", "d")
        assert await changed.next() == ToolChanges(added=("extra",))
        assert "on_tools_changed raised" in caplog.text and "the callback broke" in caplog.text
        # The connection goes on, and keeps following.
        await _remove(tools, "extra")
        assert await changed.next() == ToolChanges(removed=("extra",))
        assert (await _tool(tools, "stable").execute({"text": "still here"})).text == "still here"


@pytest.mark.parametrize("transport", ["http"], indirect=True)
@pytest.mark.parametrize("era", ["2026-07-28"], indirect=True)
async def test_a_callback_alone_follows_the_server(make_server: MakeServer) -> None:
    server = make_server()
    changed = Recorder()
    async with server.connect(on_tools_changed=changed):
        # No list loaded from the connection: its listen stream is open for the callback alone, which
        # is told of a change another client made (with nothing changed in any list).
        async with await load_mcp_tools(server) as tools:
            await _add(tools, "extra", "d")
        assert await changed.next() == ToolChanges()


@pytest.mark.parametrize("transport", ["http"], indirect=True)
@pytest.mark.parametrize("era", ["2026-07-28"], indirect=True)
async def test_a_change_right_after_the_block_opens_is_told(make_server: MakeServer) -> None:
    # The block starts once the server has acknowledged the listen stream: a change another client makes
    # at once (its list loaded beforehand, so the change is one request away) is not missed.
    server = make_server()
    changed = Recorder()
    async with await load_mcp_tools(server) as tools, server.connect(on_tools_changed=changed):
        await _add(tools, "extra", "d")
        assert await changed.next() == ToolChanges()


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
@pytest.mark.parametrize("era", ["2026-07-28"], indirect=True)
async def test_a_reconnected_connection_follows_its_new_session(
    make_server: MakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    import psutil

    leaks = LeakChecker()
    changed = Recorder()
    async with make_server().connect(on_tools_changed=changed, auto_reconnect=True) as conn:
        tools = await load_mcp_tools(conn)
        [pid] = leaks.new_children()
        server = psutil.Process(pid)
        caplog.set_level(logging.WARNING, logger="cubepi.mcp")
        with _logged("stopped following") as stopped:
            server.kill()
            await anyio.to_thread.run_sync(server.wait, 10)
            with anyio.fail_after(10):  # the dead session's listen stream ends, and the log says so
                await stopped.wait()
        assert (await _tool(tools, "stable").execute({"text": "again"})).text == "again"
        assert conn.reconnects == 1
        await _add(tools, "extra", "d")
        while (changes := await changed.next()) != ToolChanges(added=("extra",)):
            assert changes == ToolChanges(), changes  # the reconnect's own refresh: nothing changed
        assert _names(tools)[-1] == "extra"
    stopped = [record.getMessage() for record in caplog.records if "stopped following" in record.getMessage()]
    assert all("until the connection reopens" in message for message in stopped), stopped
    await leaks.assert_clean()


# -- following when the server's listen stream or listing fails -----------------------------------------


def _faulty(tmp_path: Path, protocol: str = "auto", **env: str) -> StdioServer:
    """changing.py over stdio with its fault tools (`drop_listen`, `listens`, `fail_listing`, ...)."""
    env = {"STATE": str(tmp_path / "tools.json"), "FAULTS": "1", **env}
    return StdioServer(PYTHON, [str(CHANGING)], env=env, protocol=protocol)


async def _call(tools: list[Any], name: str, **arguments: Any) -> str:
    result = await _tool(tools, name).execute(arguments)
    assert not result.is_error, result.text
    return result.text


async def test_a_dropped_listen_stream_is_listened_to_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="cubepi.mcp")
    changed = Recorder()
    async with _faulty(tmp_path).connect(on_tools_changed=changed) as conn:
        tools = await load_mcp_tools(conn)
        # More drops than LISTEN_RETRIES, each after the stream told a change: each time the connection
        # listens again, and refreshes (the change made while the stream was down was not told).
        for drop in range(LISTEN_RETRIES + 1):
            await _add(tools, f"told{drop}", "d")
            assert await changed.next() == ToolChanges(added=(f"told{drop}",))
            await _call(tools, "drop_listen", hidden=f"hidden{drop}")
            assert await changed.next() == ToolChanges(added=(f"hidden{drop}",))
        assert await _call(tools, "listens") == str(LISTEN_RETRIES + 2)
        assert _names(tools)[-2:] == [f"told{LISTEN_RETRIES}", f"hidden{LISTEN_RETRIES}"]
    assert not caplog.records, [record.getMessage() for record in caplog.records]


async def test_following_stops_when_the_listen_stream_keeps_dropping(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="cubepi.mcp")
    changed = Recorder()
    async with _faulty(tmp_path).connect(on_tools_changed=changed) as conn:
        tools = await load_mcp_tools(conn)
        with _logged("stopped following") as stopped:
            # The open stream drops, and so does every stream opened again, right after it is acknowledged.
            await _call(tools, "drop_listen", then=LISTEN_RETRIES)
            with anyio.fail_after(20):
                await stopped.wait()
        assert await _call(tools, "listens") == str(1 + LISTEN_RETRIES)  # listened again LISTEN_RETRIES times
        assert await _call(tools, "stable", text="still here") == "still here"  # the connection goes on
    [message] = [record.getMessage() for record in caplog.records]
    assert "stopped following the tool list of" in message and "graceful close" in message, message
    assert "until the connection reopens" not in message  # no auto_reconnect


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_a_refresh_that_fails_is_logged_and_following_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, protocol: str
) -> None:
    caplog.set_level(logging.WARNING, logger="cubepi.mcp")
    changed = Recorder()
    async with _faulty(tmp_path, protocol).connect(on_tools_changed=changed) as conn:
        tools = await load_mcp_tools(conn)
        await _call(tools, "fail_listing", times=1)
        await _add(tools, "extra", "d")
        assert await changed.next() == ToolChanges()  # the list could not be refreshed
        assert "refreshing the tools of" in caplog.text and "the listing is broken" in caplog.text
        assert "extra" not in _names(tools)
        await _add(tools, "more", "d")
        assert await changed.next() == ToolChanges(added=("extra", "more"))


async def test_a_server_without_list_changed_is_not_listened_to(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="cubepi.mcp")
    async with _faulty(tmp_path, NO_LISTEN="1").connect() as conn:
        tools = await load_mcp_tools(conn)
        assert await _call(tools, "stable", text="works") == "works"
    assert not caplog.records, [record.getMessage() for record in caplog.records]


async def test_a_list_waits_for_the_listen_stream_up_to_its_limit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="cubepi.mcp")
    async with _faulty(tmp_path, HOLD_LISTEN="1").connect(timeout=5, startup_timeout=60) as conn:
        with _logged("did not acknowledge subscriptions/listen within 5 s") as late:
            tools = await load_mcp_tools(conn)
            assert late.is_set()  # the load waited for the acknowledgement, up to the list's limit
        await _call(tools, "release_listen")
        again = await load_mcp_tools(conn)  # returns once the stream is acknowledged
        await _add(tools, "extra", "d")  # from then on, both lists follow
        with anyio.fail_after(20):
            while not ("extra" in _names(tools) and "extra" in _names(again)):  # noqa: ASYNC110 (no callback: polled)
                await anyio.sleep(0.05)


async def test_a_list_says_whether_it_is_closed(tmp_path: Path) -> None:
    tools = await load_mcp_tools(
        StdioServer(PYTHON, [str(CHANGING)], env={"STATE": str(tmp_path / "s.json")})
    )
    assert not tools.closed and "closed" not in repr(tools) and "stable" in repr(tools)
    await tools.aclose()
    assert tools.closed and repr(tools).endswith(", closed)")
    # A list loaded from a live connection does not own it: it is never closed, the connection decides.
    async with StdioServer(PYTHON, [str(CHANGING)]).connect() as conn:
        live = await load_mcp_tools(conn)
        assert not live.closed and "closed" not in repr(live)
        await live.aclose()
        assert not live.closed and (await _tool(live, "stable").execute({"text": "on"})).text == "on"


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_refresh_keeps_the_app_only_tools_for_the_app(protocol: str) -> None:
    async with await load_mcp_tools(
        StdioServer(PYTHON, [str(SERVERS / "whoami.py")], protocol=protocol)
    ) as tools:
        assert _names(tools) == ["whoami"] and _names(tools.app_tools) == ["panel"]
        assert await tools.refresh(force=True) == ToolChanges()
        assert _names(tools) == ["whoami"] and _names(tools.app_tools) == ["panel"]
        assert '"panel": true' in (await tools.app_tools[0].execute({})).text
