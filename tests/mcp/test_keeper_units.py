"""`_calls.ownership` one behaviour at a time: a `Lease` (borrowed, cancelled, failed, interrupted while
starting, an HTTP one interrupted within its grace or past it), the keeper's idle grace counted on a clock
that moves only when the test says so, and when a loop that did not load a list gets a spare.

Leases open real sessions (`Opening`) to the servers in tests/servers; no keeper owns them here but the
test's own task group.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import pytest
from conftest import PYTHON, SERVERS, LeakChecker, RunningServer

from cubepi.mcp import HttpServer, MCPTimeoutError, StdioServer, _errors, load_mcp_tools
from cubepi.mcp._calls import ownership as _keeper
from cubepi.mcp._calls.limits import Timeouts
from cubepi.mcp._calls.ownership import Keeper, Lease
from cubepi.mcp._calls.protocol import Learned
from cubepi.mcp._calls.session import Interrupted, Opening, Session
from cubepi.mcp._transports import http as _http
from cubepi.mcp._transports.choice import transport_for

ANNOTATED = SERVERS / "annotated.py"
CRASHER = SERVERS / "crasher.py"
SLOW_INIT = SERVERS / "slow_init.py"


def opening_of(server: StdioServer | HttpServer, timeout: float = 30.0) -> Opening:
    return Opening(server, Timeouts.from_options(timeout), Learned(), {}, transport_for(server))


async def call(session: Session, name: str, arguments: dict[str, Any]) -> str:
    result = await session.client.call_tool(name, arguments)
    return "".join(getattr(block, "text", "") for block in result.content)


async def owned(lease: Lease, group: anyio.abc.TaskGroup) -> list[Lease]:
    """Start `lease`'s owner in `group`; the list it fills once the owner says the lease closed."""
    told: list[Lease] = []
    group.start_soon(lease.own, told.append)
    return told


# -- a lease ----------------------------------------------------------------------------------------------


async def test_borrow_runs_the_work_and_returns_once_the_session_has_closed(leaks: LeakChecker) -> None:
    lease = opening_of(StdioServer(PYTHON, [str(ANNOTATED)])).leased("pid")
    async with anyio.create_task_group() as group:
        told = await owned(lease, group)
        assert (await lease.borrow(call, "pid", {})).isdigit()
        assert lease.closed.is_set() and lease.session is None and not leaks.new_children()
        assert told == [lease]
    assert lease.failure is None
    await leaks.assert_clean()


async def test_a_cancelled_borrower_returns_once_the_session_has_closed(leaks: LeakChecker) -> None:
    lease = opening_of(StdioServer(PYTHON, [str(ANNOTATED)])).leased("hold")
    started = anyio.Event()

    async def hold(session: Session) -> str:
        started.set()
        return await call(session, "hold", {"seconds": 600})

    async with anyio.create_task_group() as group:
        await owned(lease, group)
        with anyio.CancelScope() as scope:

            async def cancel_once_started() -> None:
                await started.wait()
                scope.cancel()

            group.start_soon(cancel_once_started)
            await lease.borrow(hold)
        assert scope.cancelled_caught
        assert lease.closed.is_set() and not leaks.new_children()
    await leaks.assert_clean()


async def test_a_start_up_that_failed_is_raised_as_it_came(leaks: LeakChecker) -> None:
    lease = opening_of(StdioServer(PYTHON, [str(CRASHER)])).leased("pid")
    async with anyio.create_task_group() as group:
        told = await owned(lease, group)
        with pytest.raises(Exception) as caught:
            await lease.borrow(call, "pid", {})
        assert caught.value is lease.failure and not isinstance(caught.value, AssertionError)
        assert await lease.settle() and told == [lease]
    await leaks.assert_clean()


async def test_an_interrupted_start_up_ends_without_waiting_for_its_limit(leaks: LeakChecker) -> None:
    # The server never answers its first request; the start-up limit is 90 s.
    lease = opening_of(StdioServer(PYTHON, [str(SLOW_INIT)], protocol="legacy"), timeout=90).leased()
    async with anyio.create_task_group() as group:
        await owned(lease, group)
        deadline = time.monotonic() + 30
        while not leaks.new_children():
            assert time.monotonic() < deadline, "the server did not start"
            await anyio.sleep(0.01)
        lease.interrupt()
        with anyio.fail_after(30):
            await lease.closed.wait()
        with pytest.raises(Exception) as caught:
            await lease.borrow(call, "echo", {"message": "never"})
        assert caught.value is lease.failure
        assert [type(leaf) for leaf in _errors.leaves(caught.value)] == [Interrupted]
    await leaks.assert_clean()


async def test_a_start_up_that_ran_out_of_time_stays_a_timeout(leaks: LeakChecker) -> None:
    lease = opening_of(StdioServer(PYTHON, [str(SLOW_INIT)], protocol="legacy"), timeout=1).leased()
    async with anyio.create_task_group() as group:
        await owned(lease, group)
        with pytest.raises(MCPTimeoutError):
            await lease.borrow(call, "echo", {"message": "never"})
        assert await lease.settle()
        assert isinstance(lease.failure, MCPTimeoutError)
    await leaks.assert_clean()


class Answers:
    """The (method, status) of every answer the sessions' HTTP clients got."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, int]] = []
        make = _http.http_client

        def watched(server: HttpServer) -> Any:
            client = make(server)

            async def record(response: Any) -> None:
                self.seen.append((response.request.method, response.status_code))

            client.event_hooks["response"].append(record)
            return client

        monkeypatch.setattr(_http, "http_client", watched)

    def deletes(self) -> list[int]:
        return [status for method, status in self.seen if method == "DELETE"]


@pytest.mark.parametrize("grace", [30.0, 0.0])
async def test_an_interrupted_http_session_ends_within_its_grace(
    grace: float, kitchen_http: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted, a handshake-era session gets `grace` seconds to end (its DELETE); with none it is cut
    short, which is no failure of the session."""
    answers = Answers(monkeypatch)
    server = HttpServer(kitchen_http.url, protocol="legacy")
    lease = Lease(opening_of(server).leasing, grace=grace)
    async with anyio.create_task_group() as group:
        await owned(lease, group)
        with anyio.fail_after(30):
            await lease.ready.wait()
        assert lease.session is not None
        lease.interrupt()
        with anyio.fail_after(30):
            await lease.closed.wait()
    assert lease.failure is None
    assert answers.deletes() == ([200] if grace else [])


# -- the keeper's idle grace, on a clock that moves when told ----------------------------------------------


class FrozenClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock stands still until `now` is set: timers fire when the test moves it."""

    now = 1000.0

    def time(self) -> float:
        return self.now


async def until(done: Callable[[], bool], what: str) -> None:
    """Let the loop run (its clock standing still) until `done()`, for at most 30 real seconds."""
    deadline = time.monotonic() + 30
    while not done():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0)


async def settled() -> None:
    """Let every task that can run without the clock moving run."""
    for _ in range(200):
        await asyncio.sleep(0)


async def idle_grace(loop: FrozenClockLoop, url: str) -> list[float]:
    sockets = LeakChecker()
    keeper = Keeper()
    keeper.launch(loop)
    await keeper.ready.wait()
    closes: list[float] = []
    client = await keeper.lend_client(lambda: _http.http_client(HttpServer(url)))
    closing = client.close_idle

    async def counted() -> None:
        closes.append(loop.time())
        await closing()

    client.close_idle = counted
    await client.get(url)  # a real request: its connection stays in the client's pool
    assert sockets.new_connections()
    start = loop.now
    keeper.give_back()
    await settled()
    assert not closes, "closed before the grace"

    loop.now = start + 0.5  # a second call, half a grace later
    assert await keeper.lend_client(lambda: _http.http_client(HttpServer(url))) is client
    keeper.give_back()
    await settled()
    loop.now = start + _keeper.IDLE_GRACE  # the grace of the first call is over, not of the second
    await settled()
    assert not closes, "closed a grace after the first call, not the last"

    loop.now = start + 0.5 + _keeper.IDLE_GRACE
    await until(lambda: bool(closes), "the idle connections were not closed a grace after the last call")
    assert closes == [start + 0.5 + _keeper.IDLE_GRACE]
    await until(lambda: not sockets.new_connections(), "the idle connection is still open")

    # A call, then the keeper stops as its grace runs out, the closer woken but not run yet: the keeper
    # closes the client, not its idle connections first.
    await keeper.lend_client(lambda: _http.http_client(HttpServer(url)))
    keeper.give_back()
    await settled()
    loop.now += _keeper.IDLE_GRACE
    await asyncio.sleep(0)  # the loop's next turn fires the closer's timer
    await asyncio.sleep(0)
    keeper.stop()
    await until(lambda: keeper.finished, "the keeper did not stop")
    await keeper.aclose()
    assert client.is_closed
    return closes


def test_idle_connections_close_a_grace_after_the_last_call(kitchen_http: RunningServer) -> None:
    loop = FrozenClockLoop()
    try:
        closes = loop.run_until_complete(idle_grace(loop, kitchen_http.url))
    finally:
        loop.close()
    assert len(closes) == 1, "stopping closes the client, not its idle connections again"


# -- spares in a loop that did not load the list ----------------------------------------------------------


def test_a_loop_that_did_not_load_the_list_keeps_a_spare_once_it_has_called_twice() -> None:
    """``execute_sync`` runs a loop per call: a spare started after its one call would only be killed."""
    leaks = LeakChecker()
    server = StdioServer(PYTHON, [str(ANNOTATED)])
    tools = anyio.run(lambda: load_mcp_tools(server, prespawn=True, include=["pid"]))

    async def elsewhere() -> list[bool]:
        ready = []
        for _ in range(2):
            assert (await tools[0].execute({})).text.isdigit()
            ready.append(await tools._shared.wait_spare())
        await tools.aclose()
        return ready

    assert anyio.run(elsewhere) == [False, True]
    anyio.run(leaks.assert_clean)
