"""The recorder server (tests/servers/recorder.py) for the tests of `AgentTool.as_function()`."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from cubepi import AgentTool
from cubepi.mcp import StdioServer, load_mcp_tools

RECORDER = StdioServer(sys.executable, [str(Path(__file__).parents[1] / "servers" / "recorder.py")])


@asynccontextmanager
async def recorder_tools() -> AsyncIterator[dict[str, AgentTool]]:
    """The recorder's tools over one connection: a call is a request, not a new server process."""
    async with RECORDER.connect() as connection:
        yield {t.name: t for t in await load_mcp_tools(connection)}
