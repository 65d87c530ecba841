"""An MCPServer that takes its time to answer its first request (``initialize`` or ``server/discover``).

Run: ``python slow_init.py [stdio|streamable-http]``. The process starts at once, but answers the first
request only after ``SLOW_INIT_SECONDS`` (never when unset): over stdio its lifespan (loading a model, say)
runs first; over HTTP (on ``PORT``, at ``/mcp``) every ``initialize`` or ``server/discover`` POST waits
that long. ``SLOW_INIT_IF=<path>``: it waits only once that file exists (a server that stops starting after
its first runs). Then it lists one tool, ``echo``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

STDIO = (sys.argv[1] if len(sys.argv) > 1 else "stdio") == "stdio"


async def wait() -> None:
    gate = os.environ.get("SLOW_INIT_IF")
    if gate is not None and not await anyio.Path(gate).exists():
        return
    seconds = os.environ.get("SLOW_INIT_SECONDS")
    if seconds is None:
        await anyio.sleep_forever()
    await anyio.sleep(float(seconds))


@asynccontextmanager
async def lifespan(_: MCPServer) -> AsyncIterator[None]:
    await wait()
    yield


server = MCPServer("slow-init", lifespan=lifespan if STDIO else None, log_level="WARNING")


@server.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


def slow_to_start(inner: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    """`inner`, with every initialize / server/discover POST held back by `wait()`."""

    async def app(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await inner(scope, receive, send)
            return
        messages = [await receive()]
        while messages[-1].get("more_body"):
            messages.append(await receive())
        body = b"".join(message.get("body", b"") for message in messages)
        if b'"initialize"' in body or b'"server/discover"' in body:
            await wait()
        pending = iter(messages)

        async def replay() -> Any:
            return next(pending, None) or await receive()

        await inner(scope, replay, send)

    return app


if __name__ == "__main__":
    if STDIO:
        server.run("stdio")
    else:
        import uvicorn

        app = slow_to_start(server.streamable_http_app())
        uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
