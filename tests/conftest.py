"""Shared fixtures: free ports, real MCP servers over HTTP (started and stopped here), a leak checker."""

from __future__ import annotations

import contextlib
import http.server
import importlib.util
import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import types
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import pytest

from cubepi.mcp import ToolChanges
from cubepi.mcp._calls.ownership import IDLE_GRACE
from cubepi.tools import ToolUpdate

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

TESTS = Path(__file__).parent
SERVERS = TESTS / "servers"
NODE_BIN = TESTS / "node_modules" / ".bin"
EVERYTHING = NODE_BIN / "mcp-server-everything"
FILESYSTEM = NODE_BIN / "mcp-server-filesystem"
KITCHEN = SERVERS / "kitchen.py"
PYTHON = sys.executable
HTTP_FAULTS = TESTS / "faults" / "servers" / "http_faults.py"  # one misbehaviour per path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def plain_http_server(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """A plain (not MCP) HTTP server on a free port of 127.0.0.1, served from a thread for the block;
    yields its base URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _wait_for_port(port: int, process: subprocess.Popen[bytes], limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server did not listen on {port} within {limit} s")


@dataclass
class RunningServer:
    """An HTTP MCP server started by a fixture."""

    url: str
    port: int
    process: subprocess.Popen[bytes]


StartServer = Callable[..., RunningServer]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """The suite runs under asyncio (anyio would run each test under every backend installed);
    tests/mcp/test_trio.py runs under trio."""
    return "asyncio"


@pytest.fixture(scope="session")
def http_server_factory() -> Iterator[StartServer]:
    """Start HTTP MCP servers on 127.0.0.1 (a free port, passed as ``PORT``); all stopped at session end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(command: list[str], path: str, env: dict[str, str] | None = None) -> RunningServer:
        port = free_port()
        process = subprocess.Popen(
            command,
            env={**os.environ, "PORT": str(port), **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(process)
        _wait_for_port(port, process)
        return RunningServer(url=f"http://127.0.0.1:{port}{path}", port=port, process=process)

    yield start
    for process in started:
        process.terminate()
    for process in started:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _need_node() -> None:
    if not EVERYTHING.exists():
        pytest.skip("test servers not installed: npm ci --prefix tests")


@pytest.fixture(scope="session")
def everything_http(http_server_factory: StartServer) -> RunningServer:
    """server-everything over Streamable HTTP (``/mcp``)."""
    _need_node()
    return http_server_factory([str(EVERYTHING), "streamableHttp"], "/mcp")


@pytest.fixture(scope="session")
def everything_sse(http_server_factory: StartServer) -> RunningServer:
    """server-everything over the SSE transport (``/sse``); it does not speak Streamable HTTP."""
    _need_node()
    return http_server_factory([str(EVERYTHING), "sse"], "/sse")


@pytest.fixture(scope="session")
def kitchen_http(http_server_factory: StartServer) -> RunningServer:
    """tests/servers/kitchen.py over Streamable HTTP (``/mcp``)."""
    return http_server_factory([PYTHON, str(KITCHEN), "streamable-http"], "/mcp")


@pytest.fixture(scope="session")
def kitchen_sse(http_server_factory: StartServer) -> RunningServer:
    """tests/servers/kitchen.py over SSE (``/sse``)."""
    return http_server_factory([PYTHON, str(KITCHEN), "sse"], "/sse")


class LeakChecker:
    """Child processes and TCP connections of this process, compared with a baseline."""

    def __init__(self) -> None:
        import psutil

        self._me = psutil.Process()
        self.baseline_children = self.children()
        self.baseline_connections = self.connections()

    def children(self) -> set[int]:
        return {child.pid for child in self._me.children(recursive=True) if _alive(child)}

    def connections(self) -> set[tuple[object, ...]]:
        found = set()
        for conn in self._me.net_connections(kind="tcp"):
            if conn.raddr and conn.status not in ("TIME_WAIT", "CLOSE_WAIT", "LISTEN"):
                found.add((conn.fd, conn.laddr, conn.raddr))
        return found

    def new_children(self) -> set[int]:
        return self.children() - self.baseline_children

    def new_connections(self) -> set[tuple[object, ...]]:
        return self.connections() - self.baseline_connections

    async def assert_clean(self, wait: float = 3.0) -> None:
        """Fail if a child process or a TCP connection started since the baseline is still there.

        Polls for `wait` seconds plus the grace a loaded list gives its idle connections, with the event
        loop running (its keeper tasks close what a list leaves idle)."""
        deadline = time.monotonic() + wait + IDLE_GRACE
        while time.monotonic() < deadline:
            if not self.new_children() and not self.new_connections():
                return
            await anyio.sleep(0.05)
        assert not self.new_children(), f"child processes left running: {self.new_children()}"
        assert not self.new_connections(), f"connections left open: {self.new_connections()}"


def _alive(process: object) -> bool:
    import psutil

    try:
        return process.status() != psutil.STATUS_ZOMBIE  # type: ignore[attr-defined,no-any-return]
    except psutil.Error:
        return False


async def wait_until(predicate: Callable[[], object], limit: float = 20.0) -> None:
    """Wait (polling, bounded) until `predicate()` is true: an event outside the loop, such as a process
    ending or a file appearing."""
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await anyio.sleep(0.05)


@pytest.fixture
async def leaks() -> AsyncIterator[LeakChecker]:
    """A baseline of children and connections taken now; checked again when the test ends."""
    checker = LeakChecker()
    yield checker
    await checker.assert_clean()


@dataclass
class HttpFaults:
    """The running tests/faults/servers/http_faults.py: `base` is http://127.0.0.1:PORT, `other` the second
    origin."""

    base: str
    other: str
    record_file: Path
    process: subprocess.Popen[bytes]

    def url(self, path: str) -> str:
        return self.base + path

    def records(self) -> list[dict[str, Any]]:
        lines = self.record_file.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def clear(self) -> None:
        self.record_file.write_text("", encoding="utf-8")


@pytest.fixture(scope="session")
def http_faults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpFaults]:
    """tests/faults/servers/http_faults.py on two free ports of 127.0.0.1 (the second is another origin)."""
    port, other = free_port(), free_port()
    record_file = tmp_path_factory.mktemp("http_faults") / "requests.jsonl"
    record_file.write_text("", encoding="utf-8")
    process = subprocess.Popen(
        [PYTHON, str(HTTP_FAULTS), str(port), str(other), str(record_file)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    try:
        _wait_for_port(port, process, limit=20)
        _wait_for_port(other, process, limit=20)
        yield HttpFaults(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{other}", record_file, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Updates:
    """The messages a call reports (its `on_update`), with an event for the one a test waits for."""

    def __init__(self) -> None:
        self.messages: list[str | None] = []
        self._waiting: dict[str, anyio.Event] = {}

    def __call__(self, update: ToolUpdate) -> None:
        self.messages.append(update.message)
        event = self._waiting.get(update.message or "")
        if event is not None:
            event.set()

    async def wait_for(self, message: str, limit: float = 30.0) -> None:
        if message not in self.messages:
            with anyio.fail_after(limit):
                await self._waiting.setdefault(message, anyio.Event()).wait()


class Bearer(httpx2.Auth):
    """A token auth (what an OAuth provider does, without the dance)."""

    def __init__(self, token: str) -> None:
        self.token = token

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


async def kill(pid: int) -> None:
    """SIGKILL the server `pid` and wait (bounded) until it has died."""
    import psutil

    process = psutil.Process(pid)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _alive(process):
        assert time.monotonic() < deadline, f"server {pid} still running after SIGKILL"
        await anyio.sleep(0.01)


class Recorder:
    """An `on_tools_changed` callback (async; `sync` is the same as a plain function) whose calls a test
    can await."""

    def __init__(self, *, fail: bool = False) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[ToolChanges](math.inf)
        self.fail = fail

    def sync(self, changes: ToolChanges) -> None:
        self.send.send_nowait(changes)
        if self.fail:
            raise RuntimeError("the callback broke")

    async def __call__(self, changes: ToolChanges) -> None:
        self.sync(changes)

    async def next(self, limit: float = 20.0) -> ToolChanges:
        with anyio.fail_after(limit):
            return await self.receive.receive()


def import_file(path: Path) -> types.ModuleType:
    """Import a module from its file, registered under its own name (as an import would be)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


MYPY_CACHES = TESTS.parent / ".mypy_cache"
MYPY_STRICT = (PYTHON, "-m", "mypy", "--strict", "--follow-imports=silent")
MYPY_WARM_IMPORTS = (
    "from cubepi.codegen import UNSET, GeneratedClient, Number, Unset, raw_result, run_sync\n"
    "from cubepi.errors import ToolCallError\n"
    "from cubepi.mcp import HttpServer, StdioServer\n"
    "from pydantic import BaseModel, ConfigDict, Field\n"
)


def mypy(folder: Path, *files: str) -> subprocess.CompletedProcess[str]:
    """`mypy --strict` on files in `folder`, as in a project of their own that imports this checkout's
    cubepi (its errors not reported), with this worker's cache warmed (see `warm_mypy_cache`)."""
    _warming().join()
    return _mypy_strict(folder, _worker_cache(), *files)


def warm_mypy_cache() -> None:
    """Make this worker's mypy cache warm: a cold `mypy --strict` over cubepi, mcp and pydantic takes a
    minute of CPU, so it runs once per machine (under a lock, whichever worker comes first) into a shared
    template that each worker then copies; two mypy runs never write one cache."""
    import fcntl
    import shutil
    import tempfile

    MYPY_CACHES.mkdir(exist_ok=True)
    template = MYPY_CACHES / "codegen-tests"
    with open(MYPY_CACHES / "codegen-tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (template / "warm").exists():
            with tempfile.TemporaryDirectory() as folder:
                (Path(folder) / "warm_up.py").write_text(MYPY_WARM_IMPORTS)
                _mypy_strict(Path(folder), template, "warm_up.py")
            (template / "warm").touch()
        if not _worker_cache().exists():
            shutil.copytree(template, _worker_cache())


def _mypy_strict(folder: Path, cache: Path, *files: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MYPY_STRICT, "--cache-dir", str(cache), *files],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "MYPYPATH": str(TESTS.parent)},
        check=False,
    )


def _worker_cache() -> Path:
    return MYPY_CACHES / f"codegen-tests-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"


_warm_up: list[threading.Thread] = []


def _warming() -> threading.Thread:
    """The warm-up of this worker's cache, started once (at collection when a collected test uses mypy)."""
    if not _warm_up:
        _warm_up.append(threading.Thread(target=warm_mypy_cache, name="mypy-warm-up", daemon=True))
        _warm_up[0].start()
    return _warm_up[0]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "mypy: runs mypy --strict (conftest.mypy); its cache warms at collection"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Start the warm-up beside the tests before them; a test that waits for it gets minutes (a cold
    mypy run is CPU-bound, and slow on two loaded cores)."""
    typed = [item for item in items if item.get_closest_marker("mypy")]
    for item in typed:
        item.add_marker(pytest.mark.timeout(600))
    if typed:
        _warming()


def pytest_sessionfinish() -> None:
    if _warm_up:
        _warm_up[0].join()


class Storage:
    """The SDK's `TokenStorage` in memory, with a pre-registered client (if any)."""

    def __init__(self, client_info: OAuthClientInformationFull | None = None) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info = client_info

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info
