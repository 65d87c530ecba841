"""An MCP server that takes a while to exit once its stdin closes, and writes a marker as it does.

Run: ``python slow_exit.py`` (stdio, both protocol eras). Tools: ``pid`` (the server's process id) and
``add(a, b)``. Once stdin closes the server waits, then writes the file ``<SLOW_EXIT_MARKERS>/<pid>`` and
exits. What it waits for:

- ``SLOW_EXIT_GO=<file>``: until that file exists (a test decides when the server may end: an event, not a
  guessed delay);
- else ``SLOW_EXIT_DELAY`` seconds (default 0.6).

``SLOW_EXIT_MODE=deaf``: the server ignores its stdin closing and never exits by itself (SIGTERM ends it);
``stubborn``: it ignores SIGTERM too (only SIGKILL ends it). Neither writes a marker.
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


def _wait() -> None:
    go = os.environ.get("SLOW_EXIT_GO")
    if go:
        while not Path(go).exists():
            time.sleep(0.01)
    else:
        time.sleep(float(os.environ.get("SLOW_EXIT_DELAY", "0.6")))


def main() -> None:
    mode = os.environ.get("SLOW_EXIT_MODE", "")
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    server.run("stdio")
    if mode in ("deaf", "stubborn"):
        while True:
            time.sleep(3600)
    _wait()
    markers = os.environ.get("SLOW_EXIT_MARKERS")
    if markers:
        Path(markers, str(os.getpid())).write_text("exited\n")


if __name__ == "__main__":
    main()
