"""Three replicas of one server behind a round-robin TCP proxy (each new connection goes to the next
replica). On the 2026-07-28 revision every stateless call is one self-contained request: all succeed,
whichever replica answers. A handshake-era session lives in the replica that initialized it, so a
persistent `connect()` whose requests reach another replica fails: it needs session affinity."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
from collections import Counter
from collections.abc import AsyncIterator, Iterator

import anyio
import anyio.abc
import pytest
from conftest import KITCHEN, PYTHON, LeakChecker, _wait_for_port, free_port

from cubepi import MCPError
from cubepi.mcp import HttpServer, load_mcp_tools


@pytest.fixture(scope="module")
def replicas() -> Iterator[list[int]]:
    """Three kitchen servers over Streamable HTTP (both eras), on free ports of 127.0.0.1."""
    started: list[tuple[int, subprocess.Popen[bytes]]] = []
    try:
        for _ in range(3):
            port = free_port()
            process = subprocess.Popen(
                [PYTHON, str(KITCHEN), "streamable-http"],
                env={**os.environ, "PORT": str(port)},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            started.append((port, process))
        for port, process in started:
            _wait_for_port(port, process)
        yield [port for port, _ in started]
    finally:
        for _, process in started:
            process.terminate()
        for _, process in started:
            process.wait(10)


@contextlib.asynccontextmanager
async def round_robin(ports: list[int]) -> AsyncIterator[tuple[str, Counter[int]]]:
    """A TCP proxy on a free port of 127.0.0.1 sending each new connection to the next of `ports`; yields
    its URL and how many connections each port got."""
    served: Counter[int] = Counter()
    upstreams = itertools.cycle(ports)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)

    async def pump(source: anyio.abc.SocketStream, sink: anyio.abc.SocketStream) -> None:
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            while True:
                await sink.send(await source.receive())

    async def handle(client: anyio.abc.SocketStream) -> None:
        port = next(upstreams)
        served[port] += 1
        async with (
            client,
            await anyio.connect_tcp("127.0.0.1", port) as upstream,
            anyio.create_task_group() as both,
        ):

            async def one_way(source: anyio.abc.SocketStream, sink: anyio.abc.SocketStream) -> None:
                await pump(source, sink)
                both.cancel_scope.cancel()  # either side closed: close both

            both.start_soon(one_way, client, upstream)
            both.start_soon(one_way, upstream, client)

    async with listener, anyio.create_task_group() as proxy:
        proxy.start_soon(listener.serve, handle)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        yield f"http://127.0.0.1:{port}/mcp", served
        proxy.cancel_scope.cancel()


async def test_stateless_calls_any_replica(replicas: list[int], leaks: LeakChecker) -> None:
    async with (
        round_robin(replicas) as (url, served),
        await load_mcp_tools(HttpServer(url), include=["add"], max_concurrency=6) as tools,
    ):
        results: dict[int, str] = {}

        async def call(n: int) -> None:
            results[n] = (await tools[0].execute({"a": n, "b": 1000})).text

        async with anyio.create_task_group() as calls:
            for n in range(30):
                calls.start_soon(call, n)
    assert results == {n: str(n + 1000) for n in range(30)}
    assert len(served) == 3, f"every replica answered some calls: {dict(served)}"


async def test_handshake_session_needs_affinity(replicas: list[int]) -> None:
    """Concurrent calls on one handshake-era connection open more TCP connections; those the proxy sends
    to another replica carry a session id that replica never issued: "Session not found" (HTTP 404)."""
    async with (
        round_robin(replicas) as (url, served),
        HttpServer(url, protocol="legacy", transport="streamable-http").connect() as conn,
    ):
        tools = await load_mcp_tools(conn, include=["add"])
        outcomes: list[str | BaseException] = []

        async def call(n: int) -> None:
            try:
                outcomes.append((await tools[0].execute({"a": n, "b": 1})).text)
            except MCPError as exc:
                outcomes.append(exc)

        async with anyio.create_task_group() as calls:
            for n in range(6):
                calls.start_soon(call, n)
    failures = [item for item in outcomes if isinstance(item, MCPError)]
    assert failures, f"every call reached the replica holding the session: {outcomes}, {dict(served)}"
    assert all("Session not found" in str(item) for item in failures), failures
    # Straight to one replica (affinity), the same calls succeed.
    async with HttpServer(f"http://127.0.0.1:{replicas[0]}/mcp", protocol="legacy").connect() as conn:
        tools = await load_mcp_tools(conn, include=["add"])
        assert [(await tools[0].execute({"a": n, "b": 1})).text for n in range(3)] == ["1", "2", "3"]
