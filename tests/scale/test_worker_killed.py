"""A worker killed (SIGKILL) in the middle of a stdio call: the server it started reads end-of-file on its
stdin and exits within seconds, and the same call sent from another worker succeeds."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import anyio
import psutil
import pytest
import scale_tools
from conftest import KITCHEN, PYTHON

from cubepi.mcp import StdioServer, load_mcp_tools

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")


def worker(payload: bytes, env: dict[str, str]) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [PYTHON, str(Path(scale_tools.__file__))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert process.stdin is not None
    process.stdin.write(payload)
    process.stdin.close()
    return process


def wait_for(what: str, check: object, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"no {what} within {limit} s"
        time.sleep(0.05)


def test_killed_worker_leaves_no_server(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    server = StdioServer(PYTHON, [str(KITCHEN)], env={scale_tools.MARK: mark})
    tools = anyio.run(lambda: load_mcp_tools(server, include=["slow"], timeout=60))
    payload = pickle.dumps((tools, "slow", {"seconds": 3}))
    started = tmp_path / "call-started"
    env = {**scale_tools.worker_env(), "SCALE_PROGRESS_FILE": str(started)}

    first = worker(payload, env)
    wait_for("progress from the call", started.exists)  # the server is mid-call (it said "sleeping")
    servers = scale_tools.marked_processes(mark)
    assert len(servers) == 1 and servers[0].ppid() == first.pid
    os.kill(first.pid, signal.SIGKILL)
    assert first.wait(10) == -signal.SIGKILL
    _, alive = psutil.wait_procs(servers, timeout=10)
    assert not alive, "the server of a killed worker is still running"
    assert scale_tools.marked_processes(mark) == []

    second = subprocess.run(
        [PYTHON, str(Path(scale_tools.__file__))],
        input=payload,
        capture_output=True,
        env=scale_tools.worker_env(),
        timeout=60,
        check=True,
    )
    assert second.stdout.decode().strip() == "slept 3.0"
    assert scale_tools.marked_processes(mark) == []
