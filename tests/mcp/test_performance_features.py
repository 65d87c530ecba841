"""Stateless calls made cheap: the list's shared HTTP client, `prespawn=True`, lazy models, closing lists.

Behaviour only (what is built, reused, spawned and reaped), never timings: benchmarks/calls.py measures.
"""

from __future__ import annotations

import functools
import gc
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from conftest import KITCHEN, PYTHON, LeakChecker, RunningServer

from cubepi import AgentTool, UserError, tool
from cubepi.mcp import (
    HttpServer,
    MCPToolList,
    StdioServer,
    _session,
    _tool,
    load_mcp_tools,
    load_mcp_tools_http,
    load_mcp_tools_stdio,
)

# A server that says which process answered and how many calls that process served, plus a catalog.
COUNTER = '''
import os
import sys
from mcp.server.fastmcp import FastMCP

server = FastMCP("counter")
served = 0

@server.tool()
def whoami() -> str:
    """The pid of this process and how many calls it has served, this one included."""
    global served
    served += 1
    return f"{os.getpid()} {served}"

for i in range(int(os.environ.get("CATALOG", "0"))):
    def make(i: int):
        def fn(x: int, label: str = "", flags: list[str] | None = None) -> str:
            return f"{i}:{x}"
        fn.__name__ = f"tool_{i:03d}"
        fn.__doc__ = f"Catalog tool number {i}."
        return fn
    server.tool()(make(i))

if os.environ.get("DIE_ON_LIST"):  # once that file exists, a client asking for the tools ends the server
    from mcp import types

    handlers = server._mcp_server.request_handlers
    listing = handlers[types.ListToolsRequest]

    async def list_or_die(request):
        if request is not None and os.path.exists(os.environ["DIE_ON_LIST"]):  # None: its own tool cache
            os._exit(3)
        return await listing(request)

    handlers[types.ListToolsRequest] = list_or_die

if __name__ == "__main__":
    server.run("stdio")
'''


@pytest.fixture(scope="module")
def counter_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("servers") / "counter.py"
    path.write_text(COUNTER)
    return path


def counter_server(script: Path, **env: str) -> StdioServer:
    return StdioServer(PYTHON, [str(script)], env=env or None)


def children() -> set[int]:
    found = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                found.add(child.pid)
        except psutil.Error:
            pass
    return found


async def wait_until(predicate: Any, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await anyio.sleep(0.05)


@pytest.fixture
def client_count(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every httpx client the MCP sessions build."""
    made: list[Any] = []
    real = _session.http_client

    def counting(server: HttpServer) -> Any:
        client = real(server)
        made.append(client)
        return client

    monkeypatch.setattr(_session, "http_client", counting)
    yield made


def record_sessions(client: Any) -> tuple[list[str], list[tuple[str, int]]]:
    """Watch `client`: the session ids its initialize responses give out, and each DELETE (id, status)."""
    opened: list[str] = []
    ended: list[tuple[str, int]] = []

    async def record(response: Any) -> None:
        request = response.request
        if request.method == "POST" and b'"initialize"' in request.content:
            opened.append(response.headers["mcp-session-id"])
        elif request.method == "DELETE":
            ended.append((request.headers["mcp-session-id"], response.status_code))

    client.event_hooks["response"].append(record)
    return opened, ended


# -- the list ------------------------------------------------------------------------------------------------


async def test_a_loaded_list_is_a_list(kitchen_http: RunningServer) -> None:
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http")
    assert isinstance(tools, MCPToolList) and isinstance(tools, list)

    @tool
    def mine(x: int) -> str:
        """Mine."""
        return str(x)

    combined = tools + [mine]  # noqa: RUF005 - concatenation is what users write
    assert isinstance(combined, list) and combined[-1] is mine and len(combined) == len(tools) + 1
    assert [t.name for t in tools[:2]] == [tools[0].name, tools[1].name]
    assert all(isinstance(t, AgentTool) for t in tools)
    await tools.aclose()
    await tools.aclose()  # idempotent
    assert tools.closed


# -- HTTP: one client per list -------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_http_calls_share_one_client(
    transport: str, kitchen_http: RunningServer, kitchen_sse: RunningServer, client_count: list[Any]
) -> None:
    url = kitchen_http.url if transport == "streamable-http" else kitchen_sse.url
    async with await load_mcp_tools(HttpServer(url, transport=transport)) as tools:  # type: ignore[arg-type]
        echo = next(t for t in tools if t.name == "echo")
        for i in range(3):
            assert (await echo.execute({"message": f"m{i}"})).text == f"m{i}"
        results = await _gather([echo.execute({"message": str(i)}) for i in range(5)])
        assert sorted(r.text for r in results) == [str(i) for i in range(5)]
        assert len(client_count) == 1  # the listing and eight calls, one client
        assert not client_count[0].is_closed
    assert client_count[0].is_closed


async def test_stateless_http_sessions_skip_the_get_stream_but_keep_progress(
    kitchen_http: RunningServer, client_count: list[Any]
) -> None:
    # A one-call session has no use for the optional GET stream; the call's progress comes on its POST.
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http")
    requests: list[tuple[str, str | None]] = []  # (method, session id)

    async def record(response: Any) -> None:
        session = response.request.headers.get("mcp-session-id") or response.headers.get("mcp-session-id")
        requests.append((response.request.method, session))

    client_count[0].event_hooks["response"].append(record)
    updates: list[Any] = []
    progress = next(t for t in tools if t.name == "progress")
    result = await progress.execute({"steps": 3}, on_update=updates.append)
    assert not result.is_error and len(updates) == 3
    await tools.aclose()
    call_session = requests[[method for method, _ in requests].index("POST")][1]  # its initialize
    methods = [method for method, session in requests if session == call_session]
    assert methods == ["POST", "POST", "POST", "DELETE"]  # initialize, initialized, tools/call; no GET


async def test_every_stateless_http_session_is_terminated(
    kitchen_http: RunningServer, client_count: list[Any]
) -> None:
    # Each call's session is ended (its DELETE), whatever the call's outcome.
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http")
    opened, ended = record_sessions(client_count[0])
    by_name = {t.name: t for t in tools}
    assert (await by_name["echo"].execute({"message": "one"})).text == "one"
    results = await _gather([by_name["echo"].execute({"message": str(i)}) for i in range(4)])
    assert sorted(r.text for r in results) == ["0", "1", "2", "3"]
    assert (await by_name["fail"].execute({})).is_error  # an error result ends its session too
    with anyio.move_on_after(0.5) as scope:  # and so does a call cancelled mid-flight
        await by_name["slow"].execute({"seconds": 30})
    assert scope.cancelled_caught
    await tools.aclose()
    calls = [end for end in ended if end[0] in opened]
    assert len(set(opened)) == 7 and sorted(calls) == sorted((sid, 200) for sid in opened)


async def test_http_call_leaves_no_socket_open(
    kitchen_http: RunningServer, leaks: LeakChecker, client_count: list[Any]
) -> None:
    # Sharing the client (and its TLS context) keeps the rule: after a call, once its session has ended
    # (its DELETE is answered), no connection of it stays open.
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http")
    opened, ended = record_sessions(client_count[0])
    echo = next(t for t in tools if t.name == "echo")
    assert (await echo.execute({"message": "hi"})).text == "hi"
    await wait_until(lambda: any(sid == opened[0] for sid, _ in ended) and not leaks.new_connections(), 3.0)
    await anyio.sleep(0.2)
    assert not leaks.new_connections()


async def test_a_sessions_requests_share_one_connection(
    kitchen_http: RunningServer, client_count: list[Any]
) -> None:
    # initialize, the initialized notification, the call and the DELETE: one connection, not four.
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http")
    assert tools._resources is not None and tools._resources.http is not None
    await tools._resources.http.sessions.wait_closed()  # the listing's session has ended (its DELETE is done)
    seen: list[tuple[str, str | None, object]] = []  # (method, session id, the connection's stream)

    async def record(response: Any) -> None:
        session = response.request.headers.get("mcp-session-id") or response.headers.get("mcp-session-id")
        seen.append((response.request.method, session, response.extensions.get("network_stream")))

    client_count[0].event_hooks["response"].append(record)
    echo = next(t for t in tools if t.name == "echo")
    assert (await echo.execute({"message": "hi"})).text == "hi"
    await tools.aclose()
    call_session = next(session for method, session, _ in seen if method == "POST")  # its initialize
    streams = [stream for _, session, stream in seen if session == call_session]
    assert len(streams) == 4 and streams[0] is not None
    assert all(stream is streams[0] for stream in streams)


async def test_a_cancelled_http_call_returns_once_its_session_has_ended(
    kitchen_http: RunningServer, client_count: list[Any]
) -> None:
    # A call returns as soon as its result is in, and the list ends its session behind it; a call cut
    # short by its caller waits for that end, as a call without a list does.
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http")
    opened, ended = record_sessions(client_count[0])
    slow = next(t for t in tools if t.name == "slow")
    with anyio.move_on_after(0.5) as scope:
        await slow.execute({"seconds": 30})
    assert scope.cancelled_caught and len(opened) == 1
    assert (opened[0], 200) in ended  # before the list was closed
    await tools.aclose()


async def test_calls_after_aclose_raise_user_error(kitchen_http: RunningServer) -> None:
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http")
    echo = next(t for t in tools if t.name == "echo")
    await tools.aclose()
    with pytest.raises(UserError, match="closed"):
        await echo.execute({"message": "hi"})


def test_execute_sync_in_other_loops_uses_its_own_client(kitchen_http: RunningServer) -> None:
    # Loaded in one loop (since ended), called with execute_sync (a loop per call): still works.
    tools = anyio.run(load_mcp_tools_http, kitchen_http.url)
    echo = next(t for t in tools if t.name == "echo")
    assert echo.execute_sync({"message": "one"}).text == "one"
    assert echo.execute_sync({"message": "two"}).text == "two"

    async def in_a_new_loop() -> str:
        first = await echo.execute({"message": "three"})
        second = await echo.execute({"message": "four"})
        await tools.aclose()
        return first.text + second.text

    assert anyio.run(in_a_new_loop) == "threefour"


def _run_script(script: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *flags, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_an_unclosed_http_list_is_harmless_at_exit(kitchen_http: RunningServer) -> None:
    """Never closed, the loop ending right after the calls, in dev mode with ResourceWarning as errors: no
    warning, no traceback, and every session (the listing's and each call's) still gets its DELETE."""
    done = _run_script(
        f"""
        import asyncio
        from cubepi.mcp import _session, load_mcp_tools_http

        make = _session.http_client

        def recording(server):
            client = make(server)

            async def record(response):
                request = response.request
                if request.method == "POST" and b'"initialize"' in request.content:
                    print("opened", response.headers["mcp-session-id"], flush=True)
                elif request.method == "DELETE":
                    print("ended", request.headers["mcp-session-id"], response.status_code, flush=True)

            client.event_hooks["response"].append(record)
            return client

        _session.http_client = recording

        async def main():
            tools = await load_mcp_tools_http({kitchen_http.url!r}, transport="streamable-http")
            echo = next(t for t in tools if t.name == "echo")
            await echo.execute({{"message": "hi"}})
            await asyncio.gather(*(echo.execute({{"message": str(i)}}) for i in range(3)))

        asyncio.run(main())
        """,
        "-X",
        "dev",
        "-W",
        "error::ResourceWarning",
    )
    assert done.returncode == 0, done.stderr
    for bad in (
        "Traceback",
        "Warning",
        "Task was destroyed",
        "Exception ignored",
        "nclosed",
        "never awaited",
    ):
        assert bad not in done.stderr, done.stderr
    lines = [line.split() for line in done.stdout.splitlines()]
    opened = {line[1] for line in lines if line[0] == "opened"}
    ended = {line[1] for line in lines if line[0] == "ended" and line[2] == "200"}
    assert len(opened) == 5 and ended == opened  # the listing and four calls


def test_an_unclosed_prespawn_list_leaves_no_process(counter_script: Path) -> None:
    """Never closed: the program exits cleanly and no server (spare or used) outlives it."""
    done = _run_script(
        f"""
        import asyncio
        import psutil
        from cubepi.mcp import load_mcp_tools_stdio

        async def main():
            tools = await load_mcp_tools_stdio({PYTHON!r}, [{str(counter_script)!r}], prespawn=True)
            await tools[0].execute({{}})
            await asyncio.sleep(0.2)
            print("pids", " ".join(str(c.pid) for c in psutil.Process().children(recursive=True)))

        asyncio.run(main())
        """
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    pids = [int(p) for p in done.stdout.split("pids", 1)[1].split()]
    assert pids  # the spare (and maybe the used server, closing)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_running(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if _running(p)]


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# -- stdio: prespawn -----------------------------------------------------------------------------------------


async def test_prespawn_keeps_one_spare_and_every_call_gets_a_fresh_one(
    counter_script: Path, leaks: LeakChecker
) -> None:
    tools = await load_mcp_tools(counter_server(counter_script), prespawn=True)
    whoami = tools[0]
    await wait_until(lambda: len(leaks.new_children()) == 1)  # one spare, started after the listing
    spare = next(iter(leaks.new_children()))

    seen = set()
    for _ in range(3):
        await wait_until(lambda: len(leaks.new_children()) == 1)  # used servers are gone, a spare waits
        before = leaks.new_children()
        pid, served = (await whoami.execute({})).text.split()
        assert served == "1"  # a session, and a process, no earlier call used
        assert {int(pid)} == before  # the call used the spare that was waiting
        seen.add(pid)
        await wait_until(lambda p=int(pid): p not in leaks.new_children() and len(leaks.new_children()) == 1)
    assert len(seen) == 3 and str(spare) in seen

    await tools.aclose()
    assert not leaks.new_children()  # aclose waits until every spare is gone
    with pytest.raises(UserError):
        await whoami.execute({})


async def test_a_spare_that_broke_while_waiting_is_replaced_by_a_fresh_session(
    counter_script: Path, tmp_path: Path, leaks: LeakChecker
) -> None:
    # A spare lists the tools once before it is handed out (as the SDK's fresh sessions do); a server that
    # fails that is never given a call, which opens a fresh session instead.
    marker = tmp_path / "die"
    server = counter_server(counter_script, DIE_ON_LIST=str(marker))
    async with await load_mcp_tools(server, prespawn=True) as tools:
        marker.touch()
        await wait_until(lambda: len(leaks.new_children()) == 1)
        spare = next(iter(leaks.new_children()))
        await wait_until(lambda: not _running(spare))  # it exited when asked for its tools
        result = await tools[0].execute({})
        assert not result.is_error, result.text
        pid, served = result.text.split()
        assert served == "1" and int(pid) != spare
    await wait_until(lambda: not leaks.new_children(), 10.0)


async def test_prespawn_back_to_back_and_concurrent_calls(counter_script: Path, leaks: LeakChecker) -> None:
    async with await load_mcp_tools(counter_server(counter_script), prespawn=True) as tools:
        whoami = tools[0]
        first = [(await whoami.execute({})).text for _ in range(3)]  # no waiting for spares in between
        burst = [r.text for r in await _gather([whoami.execute({}) for _ in range(4)])]
        replies = [text.split() for text in first + burst]
        assert all(served == "1" for _, served in replies)
        assert len({pid for pid, _ in replies}) == len(replies)
        assert len(leaks.new_children()) <= 6  # bounded: the calls' own servers and at most one spare
    assert not leaks.new_children()


async def test_prespawn_spare_reaped_when_the_list_is_collected(
    counter_script: Path, leaks: LeakChecker
) -> None:
    tools = await load_mcp_tools_stdio(PYTHON, [str(counter_script)], prespawn=True)
    await wait_until(lambda: len(leaks.new_children()) == 1)
    del tools
    gc.collect()
    await wait_until(lambda: not leaks.new_children())


async def test_prespawn_cancelled_call_closes_its_server(leaks: LeakChecker) -> None:
    tools = await load_mcp_tools(StdioServer(PYTHON, [str(KITCHEN)]), prespawn=True)
    slow = next(t for t in tools if t.name == "slow")
    await wait_until(lambda: len(leaks.new_children()) == 1)
    with anyio.move_on_after(1.0):
        await slow.execute({"seconds": 30})
    await tools.aclose()
    assert not leaks.new_children()


async def test_prespawn_only_for_stdio(kitchen_http: RunningServer) -> None:
    with pytest.raises(UserError, match="stdio"):
        await load_mcp_tools(HttpServer(kitchen_http.url), prespawn=True)


# -- loading: no model built ---------------------------------------------------------------------------------


async def test_a_catalog_of_100_tools_loads_without_building_models(
    counter_script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    real = _tool.schema_to_model

    def counting(schema: Any, *, name: str) -> Any:
        built.append(name)
        return real(schema, name=name)

    monkeypatch.setattr(_tool, "schema_to_model", counting)
    tools = await load_mcp_tools(counter_server(counter_script, CATALOG="100"))
    assert len(tools) == 101
    assert built == []  # listing, names, descriptions, JSON schemas: no model needed
    assert tools[5].json_schema()["properties"]["x"]["type"] == "integer" and built == []
    result = await tools[5].execute({"x": 7})
    assert built == [tools[5].name] and result.text.endswith(":7")


async def _gather(calls: list[Any]) -> list[Any]:
    results: list[Any] = [None] * len(calls)

    async def run(i: int, call: Any) -> None:
        results[i] = await call

    async with anyio.create_task_group() as group:
        for i, call in enumerate(calls):
            group.start_soon(run, i, call)
    return results


def test_prespawn_list_used_from_later_loops(counter_script: Path) -> None:
    """Loaded in a loop since ended: execute_sync starts no spare; a loop that calls twice gets one."""
    tools = anyio.run(functools.partial(load_mcp_tools, counter_server(counter_script), prespawn=True))
    whoami = tools[0]
    before = children()
    for _ in range(2):
        assert whoami.execute_sync({}).text.split()[1] == "1"
    assert tools._resources is not None and tools._resources.spares is not None
    spawned = tools._resources.spares.spawned

    async def later() -> list[str]:
        replies = [(await whoami.execute({})).text for _ in range(2)]  # the second call starts a spare
        assert tools._resources is not None and tools._resources.spares is not None
        assert await tools._resources.spares.wait_ready()
        replies.append((await whoami.execute({})).text)
        await tools.aclose()
        return replies

    assert spawned == 1  # only the one started at load; execute_sync's loops started none
    replies = anyio.run(later)
    assert all(text.split()[1] == "1" for text in replies)
    assert len({text.split()[0] for text in replies}) == 3
    assert children() <= before
