"""Run one hostile case in a process of its own and report it as one JSON line on stdout.

``python hostile_probe.py CASE_JSON``, where the case names the server (``{"stdio": true}`` or
``{"url": ...}``), the protocol (``"legacy"`` or ``"auto"``), the tool and its arguments, and the
loader's keyword arguments. The report: how long the call took, what it raised, the process's peak
memory (``ru_maxrss``, MiB, against its peak before the call) and whether the list's next call (``echo``)
still worked.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from cubepi.mcp import HttpServer, StdioServer, load_mcp_tools

HOSTILE = Path(__file__).parent / "servers" / "hostile.py"


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


async def probe(case: dict[str, Any]) -> dict[str, Any]:
    protocol = case.get("protocol", "auto")
    server: StdioServer | HttpServer
    if case.get("url"):
        server = HttpServer(case["url"], transport="streamable-http", protocol=protocol)
    else:
        argv = [str(HOSTILE), "stdio", case.get("marker", "")]  # the marker finds the process later
        server = StdioServer(sys.executable, argv, protocol=protocol)
    async with await load_mcp_tools(server, **case.get("policies", {})) as tools:
        named = {tool.name: tool for tool in tools}
        tool = named[case["tool"]]
        before = peak_mib()
        started = time.monotonic()
        outcome: dict[str, Any] = {"raised": None, "message": None}
        try:
            result = await tool.execute(case.get("arguments", {}))
            outcome["chars"] = sum(len(getattr(block, "text", "")) for block in result.content)
        except Exception as exc:
            outcome.update(raised=type(exc).__name__, message=str(exc))
        outcome.update(elapsed=time.monotonic() - started, peak_before=before, peak=peak_mib())
        echo = await named["echo"].execute({"message": "still here"})
        outcome["next_call"] = echo.content[0].text  # type: ignore[union-attr]
    return outcome


if __name__ == "__main__":
    # Should a bound fail, the probe runs out of address space rather than the machine out of memory.
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    print(json.dumps(anyio.run(probe, json.loads(sys.argv[1]))))
