"""An MCP server that takes a while to exit once its stdin closes, and writes markers as it does.

Run: ``python slow_exit.py`` (stdio, both protocol eras). Tools: ``pid`` (the server's process id),
``add(a, b)``, and ``flaky`` (with ``SLOW_EXIT_FLAKY=<file>``: the first process called creates the file
and dies mid-call; later ones return their pid). With ``SLOW_EXIT_MARKERS=<dir>`` it writes
``<dir>/<pid>.stdin-closed`` once its stdin has closed, then waits, then writes ``<dir>/<pid>.exited`` and
exits. What it waits for:

- ``SLOW_EXIT_GO=<dir>``: until the file ``<dir>/<pid>`` exists (a test decides when the server may end:
  an event, not a guessed delay);
- else ``SLOW_EXIT_DELAY`` seconds (default 0.6).

``SLOW_EXIT_MODE=deaf``: the server ignores its stdin closing and never exits by itself (SIGTERM ends it);
``stubborn``: it ignores SIGTERM too (only SIGKILL ends it). Neither writes ``.exited``.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("slow-exit", log_level="WARNING")


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def flaky() -> int:
    """This server's process id; the first process called dies instead (see the module docstring)."""
    once = Path(os.environ["SLOW_EXIT_FLAKY"])
    if not once.exists():
        once.write_text("died")
        os._exit(3)
    return os.getpid()


def _mark(what: str) -> None:
    markers = os.environ.get("SLOW_EXIT_MARKERS")
    if markers:
        Path(markers, f"{os.getpid()}.{what}").write_text(what)


def _wait() -> None:
    go = os.environ.get("SLOW_EXIT_GO")
    if go:
        while not Path(go, str(os.getpid())).exists():
            time.sleep(0.01)
    else:
        time.sleep(float(os.environ.get("SLOW_EXIT_DELAY", "0.6")))


def main() -> None:
    mode = os.environ.get("SLOW_EXIT_MODE", "")
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    server.run("stdio")
    _mark("stdin-closed")
    if mode in ("deaf", "stubborn"):
        while True:
            time.sleep(3600)
    _wait()
    _mark("exited")


if __name__ == "__main__":
    main()
