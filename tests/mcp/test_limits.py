"""The readers behind `max_response_bytes` and the session-end bound, piece by piece (no server).

The end-to-end cases, against a hostile server, are in tests/faults/test_hostile.py.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import anyio
import httpx2
import pytest
from anyio.abc import ByteReceiveStream
from mcp.shared.exceptions import MCPError as SdkError

from cubepi import UserError
from cubepi.mcp import HttpServer
from cubepi.mcp._calls.limits import ResponseTooLarge, check_response_bytes, sse_limit_hit
from cubepi.mcp._errors import describe_failure
from cubepi.mcp._transports import http as http_module
from cubepi.mcp._transports.http import _bounded_type, _client_type
from cubepi.mcp._transports.stdio import StdioProcess, tracking
from cubepi.mcp._transports.stdio_stdout import _LineAligned


class Chunks(ByteReceiveStream):
    """A byte stream that hands out `chunks` one per read, then ends."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = list(chunks)
        self.closed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self.chunks:
            raise anyio.EndOfStream
        return self.chunks.pop(0)

    async def aclose(self) -> None:
        self.closed = True


async def read_all(stream: ByteReceiveStream) -> list[bytes]:
    got = []
    while True:
        try:
            got.append(await stream.receive())
        except anyio.EndOfStream:
            return got


# -- the stdio line reader -----------------------------------------------------------------------------------


async def test_lines_split_across_reads_come_out_whole() -> None:
    stream = _LineAligned(Chunks(b"a", b"b\nc", b"d\ne\n", b"tail"))
    assert await read_all(stream) == [b"ab\n", b"cd\ne\n", b"tail"]


async def test_a_line_of_exactly_the_limit_passes_one_byte_more_fails() -> None:
    assert await read_all(_LineAligned(Chunks(b"xx", b"xxx\n"), limit=5)) == [b"xxxxx\n"]
    stream = _LineAligned(Chunks(b"xx", b"xxxx", b"\n"), limit=5)
    with pytest.raises(ResponseTooLarge) as caught:
        await stream.receive()
    assert caught.value.limit == 5
    with pytest.raises(anyio.ClosedResourceError):  # later reads end at once (the SDK's drain stops)
        await stream.receive()


async def test_a_line_without_a_newline_fails_before_it_is_all_read() -> None:
    inner = Chunks(*[b"x" * 10] * 100)
    stream = _LineAligned(inner, limit=25)
    with pytest.raises(ResponseTooLarge):
        await stream.receive()
    assert len(inner.chunks) == 97  # three reads: 10, 20, 30 > 25


async def test_every_line_in_one_read_is_bounded() -> None:
    for chunk in (b"a\n" + b"x" * 9 + b"\nb\n", b"x" * 9 + b"\nb\n"):
        with pytest.raises(ResponseTooLarge):
            await _LineAligned(Chunks(chunk), limit=5).receive()
    assert await read_all(_LineAligned(Chunks(b"a\nxxxxx\nb\n"), limit=5)) == [b"a\nxxxxx\nb\n"]
    with pytest.raises(ResponseTooLarge):  # a middle line one byte past the limit
        await _LineAligned(Chunks(b"a\nxxxxxx\nb\n"), limit=5).receive()


async def test_the_rest_after_the_last_newline_counts_toward_the_next_line() -> None:
    stream = _LineAligned(Chunks(b"a\nxxx", b"xxx\n"), limit=5)
    assert await stream.receive() == b"a\n"
    with pytest.raises(ResponseTooLarge):
        await stream.receive()


async def test_no_limit_means_no_bound_and_close_reaches_the_pipe() -> None:
    inner = Chunks(b"x" * 1000, b"\n")
    stream = _LineAligned(inner)
    assert await read_all(stream) == [b"x" * 1000 + b"\n"]
    await stream.aclose()
    assert inner.closed


# -- max_response_bytes: the setting and its error ----------------------------------------------------------


def test_the_setting_is_a_positive_int_or_none() -> None:
    assert check_response_bytes(None) is None
    assert check_response_bytes(1) == 1
    for bad in (0, -5, 2.0, False, "10"):
        with pytest.raises(UserError, match="max_response_bytes"):
            check_response_bytes(bad)


@pytest.mark.parametrize(
    ("limit", "shown"),
    [(512, "512 bytes"), (2048, "2 KiB"), (4 << 20, "4 MiB"), (3 << 29, "1.5 GiB"), (1023, "1023 bytes")],
)
def test_the_error_names_the_limit_and_how_to_raise_it(limit: int, shown: str) -> None:
    text = str(ResponseTooLarge(limit))
    assert f"max_response_bytes={limit} ({shown})" in text
    assert "raise it" in text and "max_response_bytes=None" in text


def test_the_sdk_event_bound_reads_as_the_same_error() -> None:
    found = sse_limit_hit("SSE stream failed: Server-sent event exceeded the 4096 byte limit.")
    assert found is not None and found.limit == 4096
    assert sse_limit_hit("SSE stream ended without a response") is None
    sdk = SdkError(-32000, "SSE stream failed: Server-sent event exceeded the 4096 byte limit.")
    assert describe_failure(sdk) == str(ResponseTooLarge(4096))
    assert describe_failure(ResponseTooLarge(7)) == str(ResponseTooLarge(7))
    # A server's own error that happens to say so is the server's answer, not cubepi's limit.
    server_said = SdkError(-32603, "my event exceeded the 10 byte limit")
    assert "max_response_bytes" not in describe_failure(server_said)


# -- HTTP: the body bound and the session-end bound ---------------------------------------------------------


class Slow(httpx2.AsyncByteStream):
    def __init__(self, *chunks: bytes, pause: float = 0.0) -> None:
        self.chunks = chunks
        self.pause = pause
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            await anyio.sleep(self.pause)
            yield chunk

    async def aclose(self) -> None:
        self.closed = True


async def test_a_body_of_exactly_the_limit_passes_one_byte_more_fails() -> None:
    bounded = _bounded_type()
    assert b"".join([part async for part in bounded(Slow(b"ab", b"cde"), 5)]) == b"abcde"
    with pytest.raises(ResponseTooLarge, match="max_response_bytes=5 "):
        async for _ in bounded(Slow(b"ab", b"cdef"), 5):
            pass
    inner = Slow(b"x")
    await bounded(inner, 5).aclose()
    assert inner.closed


@pytest.mark.parametrize(
    ("content_type", "limit", "wrapped"),
    [
        ("application/json", 10, True),
        ("text/event-stream; charset=utf-8", 10, False),
        ("text/html", None, False),
    ],
)
async def test_the_client_bounds_bodies_but_not_event_streams(
    content_type: str, limit: int | None, wrapped: bool
) -> None:
    async def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": content_type}, stream=Slow(b"x" * 20))

    async with client_with(httpx2.MockTransport(answer), limit) as client:
        response = await client.send(client.build_request("POST", "http://127.0.0.1:9/mcp"), stream=True)
        assert (type(response.stream) is _bounded_type()) is wrapped
        if wrapped:
            with pytest.raises(ResponseTooLarge):
                await response.aread()


def client_with(handler: httpx2.MockTransport, limit: int | None = None) -> httpx2.AsyncClient:
    client = _client_type()(transport=handler)
    client.guard(limit)
    return client  # type: ignore[no-any-return]


async def test_ending_a_session_is_bounded_in_all_body_included(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_module, "HTTP_CLOSE_GRACE", 0.5)

    async def drip(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, stream=Slow(*[b"x"] * 30, pause=0.05))  # every read within 0.05 s

    async with client_with(httpx2.MockTransport(drip)) as client:
        started = time.monotonic()
        with pytest.raises(httpx2.ReadTimeout, match=r"ending the session took longer than 0\.5 s"):
            await client.send(client.build_request("DELETE", "http://127.0.0.1:9/mcp"), stream=True)
        assert time.monotonic() - started < 3
        started = time.monotonic()  # other requests are the client's business: not bounded here
        response = await client.send(client.build_request("GET", "http://127.0.0.1:9/mcp"), stream=True)
        assert await response.aread() == b"x" * 30
        assert time.monotonic() - started >= 0.5


async def test_a_prompt_session_end_returns_its_answer_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_module, "HTTP_CLOSE_GRACE", 5.0)

    async def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(204 if request.method == "DELETE" else 200, stream=Slow(b"done"))

    async with client_with(httpx2.MockTransport(answer)) as client:
        response = await client.send(client.build_request("DELETE", "http://127.0.0.1:9/mcp"), stream=True)
        assert response.status_code == 204 and response.is_stream_consumed
        assert response.content == b"done"


async def test_a_body_past_the_limit_is_closed_not_left_holding_its_connection() -> None:
    """A body read for the caller (not streamed) that goes past the limit raises, and the response is closed:
    its connection goes back, rather than waiting, half read, for the garbage collector."""
    bodies: list[Slow] = []

    async def answer(request: httpx2.Request) -> httpx2.Response:
        bodies.append(Slow(b"x" * 8, b"x" * 8))
        return httpx2.Response(200, headers={"content-type": "application/json"}, stream=bodies[-1])

    async with client_with(httpx2.MockTransport(answer), 10) as client:
        with pytest.raises(ResponseTooLarge, match="max_response_bytes=10 "):
            await client.send(client.build_request("POST", "http://127.0.0.1:9/mcp"))
        assert bodies[0].closed


def test_the_client_keeps_the_server_limit() -> None:
    from cubepi.mcp._transports.http import http_client

    client = http_client(HttpServer("http://127.0.0.1:9/mcp", max_response_bytes=123))
    assert isinstance(client, _client_type()) and client._limit == 123


async def test_a_tracked_server_process_gets_the_line_bound_and_reports_its_exit() -> None:
    import sys

    import mcp.client.stdio as sdk_stdio

    info = StdioProcess(max_line=5)
    assert info.returncode is None
    with tracking(info):
        process = await sdk_stdio._create_platform_compatible_process(
            command=sys.executable, args=["-c", "print('x' * 20); raise SystemExit(3)"]
        )
    assert info.process is process and process.pid > 0
    # What the SDK's shutdown looks for to close the asyncio transport (else a warning at exit).
    assert getattr(getattr(process, "_process", None), "_transport", None) is not None
    wrapped = sdk_stdio._create_platform_compatible_process
    with tracking(StdioProcess()):  # installing again wraps nothing twice
        assert sdk_stdio._create_platform_compatible_process is wrapped
    assert process.stdout is not None and process.stdin is not None and process.stderr is None
    with pytest.raises(ResponseTooLarge):
        await process.stdout.receive()
    assert await process.wait() == 3
    assert info.returncode == 3 and process.returncode == 3
    await process.aclose()
    with pytest.raises(anyio.ClosedResourceError):  # closing reached the pipes
        await process.stdin.send(b"x")
    # Outside the block, the SDK's processes are its own.
    spawn = sdk_stdio._create_platform_compatible_process
    untracked = await spawn(command=sys.executable, args=["-c", "pass"])
    assert untracked is not info.process
    await untracked.wait()
    await untracked.aclose()


@pytest.mark.parametrize("stop", ["terminate", "kill", "send_signal"])
async def test_a_tracked_process_passes_signals_on(stop: str) -> None:
    import signal
    import sys

    import mcp.client.stdio as sdk_stdio

    with tracking(StdioProcess()) as info:
        process = await sdk_stdio._create_platform_compatible_process(
            command=sys.executable, args=["-c", "import time; time.sleep(60)"]
        )
    assert info.process is process
    if stop == "send_signal":
        process.send_signal(signal.SIGTERM)
    else:
        getattr(process, stop)()
    with anyio.fail_after(20):
        code = await process.wait()
    assert code == (-signal.SIGKILL if stop == "kill" else -signal.SIGTERM)
    await process.aclose()


def test_the_defaults_say_what_they_are() -> None:
    from cubepi.mcp._calls.limits import DEFAULT_MAX_RESPONSE_BYTES, SAME_AS_SERVER

    assert DEFAULT_MAX_RESPONSE_BYTES == 64 * 1024 * 1024
    assert repr(SAME_AS_SERVER) == "SAME_AS_SERVER"


async def test_a_probe_cancelled_before_its_first_step_is_closed_not_left_unawaited() -> None:
    """The start-up probe starts from a loop timer (`_calls.limits._Later`); when the loop ends (its tasks are
    cancelled natively) right after the timer fired, the probe's task is cancelled before it ran, and its
    coroutine is closed as the block ends, not left for the garbage collector to warn about ("coroutine ...
    was never awaited")."""
    import asyncio
    import inspect

    from cubepi.mcp._calls.limits import _Later

    ran = anyio.Event()

    async def probe() -> None:
        ran.set()

    with _Later() as later:
        async with anyio.create_task_group() as group:
            later.start(group, 3600, probe)
            before = asyncio.all_tasks()
            later._start(group, probe)  # the timer firing
            later.cancel()
            for task in asyncio.all_tasks() - before:
                task.cancel()  # as the loop's end cancels every task
        assert not ran.is_set()
        assert later._work is not None
        assert inspect.getcoroutinestate(later._work) == inspect.CORO_CREATED
    assert inspect.getcoroutinestate(later._work) == inspect.CORO_CLOSED


async def test_a_probe_that_ran_is_left_as_it_finished() -> None:
    from cubepi.mcp._calls.limits import _Later

    ran = anyio.Event()

    async def probe() -> None:
        ran.set()

    with _Later() as later:
        async with anyio.create_task_group() as group:
            later.start(group, 0, probe)
            with anyio.fail_after(20):
                await ran.wait()
    assert ran.is_set()
