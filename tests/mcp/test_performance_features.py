"""Stateless calls made cheap: the list's shared HTTP client, `prespawn=True`, lazy models, closing lists.

Behaviour only (what is built, reused, spawned and reaped, and which HTTP requests a call costs), never
timings: benchmarks/calls.py measures. HTTP tests run in both protocol eras: a 2026-07-28 server (kitchen
answers ``server/discover``) and ``protocol="legacy"`` (a fresh initialized session per call).
"""

from __future__ import annotations

import functools
import gc
import inspect
import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from conftest import KITCHEN, PYTHON, LeakChecker, RunningServer, wait_until

from cubepi import AgentTool, UserError, tool
from cubepi.mcp import (
    HttpServer,
    MCPToolList,
    StdioServer,
    load_mcp_tools,
    load_mcp_tools_http,
    load_mcp_tools_stdio,
)
from cubepi.mcp._lists import tool as _tool
from cubepi.mcp._transports import http as _http

ERAS = ["auto", "legacy"]  # kitchen answers server/discover (2026-07-28); "legacy" forces the handshake

# A server that says which process answered and how many calls that process served, plus a catalog.
COUNTER = '''
import os
from mcp.server.mcpserver import MCPServer


async def die_on_list(ctx, call_next):  # once that file exists, a client asking for the tools ends the server
    marker = os.environ.get("DIE_ON_LIST")
    if marker and ctx.method == "tools/list" and os.path.exists(marker):
        os._exit(3)
    return await call_next(ctx)


server = MCPServer("counter", middleware=[die_on_list])
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


# -- what went over the wire ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One HTTP request a list's client sent, once the server answered it."""

    method: str  # GET, POST, DELETE
    rpc: str | None  # a POST's JSON-RPC method (None: the client's answer to a server request)
    session: str | None  # the mcp-session-id it carried, or (initialize) was given
    status: int


def exchange(response: Any) -> tuple[str, str | None, str | None, int]:
    """An answered request as an `Exchange`'s fields (also run, as source, by the subprocess test)."""
    request = response.request
    rpc = json.loads(request.content).get("method") if request.method == "POST" else None
    session = request.headers.get("mcp-session-id") or response.headers.get("mcp-session-id")
    return (request.method, rpc, session, response.status_code)


class HttpLog:
    """Every HTTP client the MCP sessions build, and every request they sent (in answer order)."""

    def __init__(self) -> None:
        self.clients: list[Any] = []
        self.exchanges: list[Exchange] = []

    def watch(self, client: Any) -> None:
        async def record(response: Any) -> None:
            self.exchanges.append(Exchange(*exchange(response)))

        client.event_hooks["response"].append(record)
        self.clients.append(client)

    def since(self, mark: int) -> list[Exchange]:
        return self.exchanges[mark:]


def sessions(exchanges: list[Exchange]) -> list[str]:
    """The session ids the server gave out (its answers to ``initialize``), in order."""
    return [e.session for e in exchanges if e.rpc == "initialize" and e.session is not None]


def ended(exchanges: list[Exchange]) -> dict[str, int]:
    """The status of each session's DELETE, by session id."""
    return {e.session: e.status for e in exchanges if e.method == "DELETE" and e.session is not None}


@pytest.fixture
def http_log(monkeypatch: pytest.MonkeyPatch) -> Iterator[HttpLog]:
    """Watch every HTTP client the MCP sessions build (`cubepi.mcp._transports.http.http_client`)."""
    log = HttpLog()
    real = _http.http_client

    def watched(server: HttpServer) -> Any:
        client = real(server)
        log.watch(client)
        return client

    monkeypatch.setattr(_http, "http_client", watched)
    yield log


def by_name(tools: list[AgentTool]) -> dict[str, AgentTool]:
    return {t.name: t for t in tools}


async def cancel_once_started(slow: AgentTool) -> None:
    """Call kitchen's `slow` and cancel it when its first progress arrives (the call is in flight)."""
    with anyio.CancelScope() as scope:
        await slow.execute({"seconds": 60}, on_update=lambda _: scope.cancel())
    assert scope.cancelled_caught


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


# -- HTTP: one client per list, and what a call costs --------------------------------------------------------


@pytest.mark.parametrize(
    ("transport", "protocol"), [("streamable-http", "auto"), ("streamable-http", "legacy"), ("sse", "auto")]
)
async def test_http_calls_share_one_client(
    transport: str,
    protocol: str,
    kitchen_http: RunningServer,
    kitchen_sse: RunningServer,
    http_log: HttpLog,
) -> None:
    url = kitchen_http.url if transport == "streamable-http" else kitchen_sse.url
    server = HttpServer(url, transport=transport, protocol=protocol)  # type: ignore[arg-type]
    async with await load_mcp_tools(server) as tools:
        echo = by_name(tools)["echo"]
        for i in range(3):
            assert (await echo.execute({"message": f"m{i}"})).text == f"m{i}"
        results = await _gather([echo.execute({"message": str(i)}) for i in range(5)])
        assert sorted(r.text for r in results) == [str(i) for i in range(5)]
        assert len(http_log.clients) == 1  # the listing and eight calls, one client
        assert not http_log.clients[0].is_closed
    assert http_log.clients[0].is_closed


async def test_a_2026_http_call_is_one_post_and_its_progress_arrives(
    kitchen_http: RunningServer, http_log: HttpLog
) -> None:
    # The protocol is found once, at load (server/discover); every call adopts it: no handshake, no
    # session, no GET stream, no DELETE. Progress comes on the call's own POST.
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http")
    loading = [(e.method, e.rpc, e.session) for e in http_log.exchanges]
    assert loading == [("POST", "server/discover", None), ("POST", "tools/list", None)]
    mark = len(http_log.exchanges)
    updates: list[Any] = []
    result = await by_name(tools)["progress"].execute({"steps": 3}, on_update=updates.append)
    assert not result.is_error and result.text == "done after 3 steps"
    assert [(u.progress, u.total) for u in updates] == [(1, 3), (2, 3), (3, 3)]
    assert http_log.since(mark) == [Exchange("POST", "tools/call", None, 200)]
    mark = len(http_log.exchanges)
    assert (await by_name(tools)["echo"].execute({"message": "again"})).text == "again"
    assert http_log.since(mark) == [Exchange("POST", "tools/call", None, 200)]  # nothing found again
    await tools.aclose()


async def test_every_legacy_http_session_is_ended(kitchen_http: RunningServer, http_log: HttpLog) -> None:
    # A handshake-era call gets a fresh initialized session, and ends it (its DELETE, answered) whatever
    # the call's outcome: a result, an error result, a cancellation.
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http", protocol="legacy")
    named = by_name(tools)
    mark = len(http_log.exchanges)
    assert (await named["echo"].execute({"message": "one"})).text == "one"
    results = await _gather([named["echo"].execute({"message": str(i)}) for i in range(4)])
    assert sorted(r.text for r in results) == ["0", "1", "2", "3"]
    updates: list[Any] = []
    assert not (await named["progress"].execute({"steps": 2}, on_update=updates.append)).is_error
    assert len(updates) == 2  # progress arrives in this era too
    assert (await named["fail"].execute({})).is_error
    await cancel_once_started(named["slow"])
    calls = http_log.since(mark)
    await tools.aclose()
    opened = sessions(calls)
    assert len(set(opened)) == len(opened) == 8  # one session per call, none reused
    assert ended(calls) == {session: 200 for session in opened}
    for session in opened:
        posts = [e.rpc for e in calls if e.session == session and e.method == "POST"]
        assert posts[:3] == ["initialize", "notifications/initialized", "tools/call"]


@pytest.mark.parametrize("protocol", ERAS)
async def test_an_idle_http_list_keeps_no_socket_open(
    protocol: str, kitchen_http: RunningServer, http_log: HttpLog, leaks: LeakChecker
) -> None:
    # The shared client keeps a call's idle connections for the next call (IDLE_GRACE), then closes
    # them: whatever the calls' outcome, a list between calls soon holds no socket, and is still usable.
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http", protocol=protocol)
    named = by_name(tools)
    await leaks.assert_clean()  # the listing's connections (waits IDLE_GRACE plus a margin)
    assert (await named["echo"].execute({"message": "hi"})).text == "hi"
    await leaks.assert_clean()
    assert (await named["fail"].execute({})).is_error
    await leaks.assert_clean()
    await _gather([named["echo"].execute({"message": str(i)}) for i in range(3)])
    await leaks.assert_clean()
    await cancel_once_started(named["slow"])
    await leaks.assert_clean()
    assert len(http_log.clients) == 1 and not http_log.clients[0].is_closed  # the client itself is kept
    assert (await named["echo"].execute({"message": "later"})).text == "later"
    await tools.aclose()


async def test_the_idle_closer_waits_for_the_next_call(
    kitchen_http: RunningServer, http_log: HttpLog, leaks: LeakChecker
) -> None:
    # Once a list's idle connections are closed, its closer sleeps until a call returns the client again:
    # an idle list costs no CPU.
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http")
    echo = by_name(tools)["echo"]
    assert (await echo.execute({"message": "hi"})).text == "hi"
    await leaks.assert_clean()
    [client] = http_log.clients
    closes: list[None] = []
    closing = client.close_idle

    async def counted() -> None:
        closes.append(None)
        await closing()

    client.close_idle = counted
    for _ in range(200):
        await anyio.lowlevel.checkpoint()
    assert not closes, f"the idle closer ran {len(closes)} times with no call in between"
    assert (await echo.execute({"message": "again"})).text == "again"
    await leaks.assert_clean()
    assert len(closes) == 1, "the call's idle connection is closed once"
    await tools.aclose()


async def test_back_to_back_2026_calls_reuse_one_warm_connection(
    kitchen_http: RunningServer, leaks: LeakChecker
) -> None:
    # A call that follows another within IDLE_GRACE reuses its connection: one POST, no connect.
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http")
    echo = by_name(tools)["echo"]
    warm = leaks.new_connections()
    assert len(warm) == 1  # discover and tools/list, on one connection
    for i in range(3):
        assert (await echo.execute({"message": str(i)})).text == str(i)
        assert leaks.new_connections() == warm
    await tools.aclose()
    assert not leaks.new_connections()  # closing the list closes it at once


async def test_a_warm_connection_is_kept_a_grace_after_the_last_call_not_the_first(
    kitchen_http: RunningServer, leaks: LeakChecker, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Calls closer together than the grace keep one connection however long they go on: the closer counts
    # from the last call's end (calls back to back do not wake it), then closes it.
    from cubepi.mcp._calls import ownership as _keeper

    monkeypatch.setattr(_keeper, "IDLE_GRACE", 4.0)
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http")
    echo = by_name(tools)["echo"]
    warm = leaks.new_connections()
    for i in range(3):  # the third call comes 5 s after the first one ended, 2.5 s after the second
        assert (await echo.execute({"message": str(i)})).text == str(i)
        assert leaks.new_connections() == warm, f"call {i} found its warm connection closed"
        await anyio.sleep(2.5)
    await leaks.assert_clean(wait=4.0)
    await tools.aclose()


@pytest.mark.parametrize("protocol", ERAS)
async def test_a_cancelled_http_call_returns_once_its_session_has_ended(
    protocol: str, kitchen_http: RunningServer, http_log: HttpLog
) -> None:
    # A call cut short by its caller returns only once it is over on the wire: its one request
    # (2026-07-28) or its session, ended (handshake era: the DELETE sent and answered).
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http", protocol=protocol)
    mark = len(http_log.exchanges)
    await cancel_once_started(by_name(tools)["slow"])
    calls = http_log.since(mark)
    if protocol == "legacy":
        opened = sessions(calls)
        assert len(opened) == 1 and ended(calls) == {opened[0]: 200}
    else:
        assert calls == [Exchange("POST", "tools/call", None, 200)]  # no session to end
    assert (await by_name(tools)["echo"].execute({"message": "still"})).text == "still"
    await tools.aclose()


async def test_calls_after_aclose_raise_user_error(kitchen_http: RunningServer) -> None:
    tools = await load_mcp_tools_http(kitchen_http.url, transport="streamable-http")
    echo = next(t for t in tools if t.name == "echo")
    await tools.aclose()
    with pytest.raises(UserError, match="closed"):
        await echo.execute({"message": "hi"})


def test_execute_sync_in_other_loops_uses_its_own_client(
    kitchen_http: RunningServer, http_log: HttpLog
) -> None:
    # Loaded in one loop (since ended), called with execute_sync (a loop per call): still works.
    leaks = LeakChecker()
    tools = anyio.run(load_mcp_tools_http, kitchen_http.url)
    echo = next(t for t in tools if t.name == "echo")
    assert echo.execute_sync({"message": "one"}).text == "one"
    assert echo.execute_sync({"message": "two"}).text == "two"

    async def in_a_new_loop() -> str:
        made = len(http_log.clients)
        first = await echo.execute({"message": "three"})
        second = await echo.execute({"message": "four"})
        assert len(http_log.clients) == made + 1  # both calls used this loop's one shared client
        await tools.aclose()
        await leaks.assert_clean()  # which aclose closed
        return first.text + second.text

    assert anyio.run(in_a_new_loop) == "threefour"


def _run_script(script: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *flags, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("protocol", ERAS)
def test_an_unclosed_http_list_is_harmless_at_exit(protocol: str, kitchen_http: RunningServer) -> None:
    """Never closed, the loop ending right after the calls, in dev mode with ResourceWarning as errors: no
    warning, no traceback; every call was answered, and (handshake era) every session got its DELETE."""
    script = (
        "from __future__ import annotations\n"
        + inspect.getsource(exchange)
        + textwrap.dedent(
            f"""
        import asyncio
        import json
        from cubepi.mcp import load_mcp_tools_http
        from cubepi.mcp._transports import http as _http

        make = _http.http_client

        def recording(server):
            client = make(server)

            async def record(response):
                print("exchange", json.dumps(exchange(response)), flush=True)

            client.event_hooks["response"].append(record)
            return client

        _http.http_client = recording

        async def main():
            tools = await load_mcp_tools_http(
                {kitchen_http.url!r}, transport="streamable-http", protocol={protocol!r}
            )
            echo = next(t for t in tools if t.name == "echo")
            await echo.execute({{"message": "hi"}})
            await asyncio.gather(*(echo.execute({{"message": str(i)}}) for i in range(3)))

        asyncio.run(main())
        """
        )
    )
    done = _run_script(script, "-X", "dev", "-W", "error::ResourceWarning")
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
    exchanges = [
        Exchange(*json.loads(line.split(" ", 1)[1]))
        for line in done.stdout.splitlines()
        if line.startswith("exchange ")
    ]
    calls = [e for e in exchanges if e.rpc == "tools/call"]
    assert len(calls) == 4 and all(e.status == 200 for e in calls)
    if protocol == "legacy":
        opened = sessions(exchanges)
        assert len(set(opened)) == 5 and ended(exchanges) == {s: 200 for s in opened}  # listing + 4 calls
    else:
        assert all(e.method == "POST" and e.session is None for e in exchanges)  # no session to end
        assert len(exchanges) == 6  # discover, tools/list, four calls


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
    assert tools._shared is not None and await tools._shared.wait_spare()
    # one spare, started after the listing; the listing's server ends beside the caller
    await wait_until(lambda: len(leaks.new_children()) == 1)
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


async def test_without_prespawn_no_spare_is_kept(counter_script: Path, leaks: LeakChecker) -> None:
    async with await load_mcp_tools(counter_server(counter_script)) as tools:
        pid, served = (await tools[0].execute({})).text.split()
        assert served == "1"
        assert not await tools._shared.wait_spare(), "no spare is started without prespawn=True"
        await wait_until(lambda: not _running(int(pid)) and not leaks.new_children())  # its server ended
    assert tools._shared.spawned == 0


async def test_a_handshake_era_spare_with_a_short_timeout_is_used(
    counter_script: Path, leaks: LeakChecker
) -> None:
    # The spare's warm-up listing is bounded by `timeout` alone once the server has started (a handshake-era
    # server has answered `initialize` by then): one second is enough for it, so the call takes that spare.
    server = StdioServer(PYTHON, [str(counter_script)], protocol="legacy")
    async with await load_mcp_tools(server, prespawn=True, timeout=1, startup_timeout=30) as tools:
        assert await tools._shared.wait_spare(), "the spare started and warmed up within the timeout"
        spare = next(iter(leaks.new_children()))
        pid, served = (await tools[0].execute({})).text.split()
        assert (int(pid), served) == (spare, "1")
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
    processes = LeakChecker()
    for _ in range(2):
        assert whoami.execute_sync({}).text.split()[1] == "1"
    assert tools._shared is not None
    spawned = tools._shared.spawned

    async def later() -> list[str]:
        replies = [(await whoami.execute({})).text for _ in range(2)]  # the second call starts a spare
        assert tools._shared is not None
        assert await tools._shared.wait_spare()
        replies.append((await whoami.execute({})).text)
        await tools.aclose()
        return replies

    assert spawned == 1  # only the one started at load; execute_sync's loops started none
    replies = anyio.run(later)
    assert all(text.split()[1] == "1" for text in replies)
    assert len({text.split()[0] for text in replies}) == 3
    assert not processes.new_children()
