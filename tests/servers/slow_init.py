"""A FastMCP server that takes its time in initialize: its lifespan (loading a model, say) runs first.

Run: ``python slow_init.py [stdio|streamable-http]``. The process starts and reads the client's
``initialize`` at once, but answers it only after ``SLOW_INIT_SECONDS`` (never when unset). Then it
lists one tool, ``echo``. Over HTTP it listens on ``PORT``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp.server.fastmcp import FastMCP


@asynccontextmanager
async def lifespan(_: FastMCP) -> AsyncIterator[None]:
    seconds = os.environ.get("SLOW_INIT_SECONDS")
    if seconds is None:
        await anyio.sleep_forever()
    else:
        await anyio.sleep(float(seconds))
    yield


server = FastMCP("slow-init", lifespan=lifespan)


@server.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport != "stdio":
        server.settings.host = "127.0.0.1"
        server.settings.port = int(os.environ["PORT"])
        server.settings.log_level = "WARNING"
    server.run(transport)  # type: ignore[arg-type]
