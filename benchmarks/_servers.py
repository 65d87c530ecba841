"""Bench helpers: the test servers, HTTP ones started on 127.0.0.1 on a free port and stopped on exit."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
EVERYTHING = TESTS / "node_modules" / ".bin" / "mcp-server-everything"
KITCHEN = TESTS / "servers" / "kitchen.py"
CATALOG = Path(__file__).resolve().parent / "_catalog.py"
MINIMAL = Path(__file__).resolve().parent / "_minimal.py"
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def http_server(command: list[str], path: str) -> Iterator[str]:
    """Start an HTTP MCP server (port in ``PORT``), yield its URL, stop it."""
    port = free_port()
    process = subprocess.Popen(
        command,
        env={**os.environ, "PORT": str(port)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{command[0]} exited with {process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
