"""An MCPServer with one tool per thing cubepi must handle.

Run: python kitchen.py [stdio|streamable-http|sse]. It speaks both protocol eras: 2026-07-28
(`server/discover`, then self-describing requests) and the `initialize` handshake. Over HTTP it listens on
127.0.0.1:$PORT (Streamable HTTP at /mcp, SSE at /sse). `KITCHEN_START_DELAY` (seconds) delays the start.
"""

from __future__ import annotations

import base64
import os
import sys
import time

import anyio
from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

server = MCPServer("kitchen")

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


@server.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(structured_output=False)
def image() -> list[types.ContentBlock]:
    """A tiny PNG and a caption."""
    return [
        types.TextContent(type="text", text="a 1x1 png"),
        types.ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"),
    ]


@server.tool(structured_output=False)
def audio() -> list[types.ContentBlock]:
    """One second of silence (fake WAV bytes)."""
    data = base64.b64encode(b"\0" * 2048).decode()
    return [types.AudioContent(type="audio", data=data, mime_type="audio/wav")]


@server.tool(structured_output=False)
def resources() -> list[types.ContentBlock]:
    """A resource link, an embedded text resource, an embedded image and an embedded binary blob."""
    return [
        types.ResourceLink(type="resource_link", name="readme", uri="file:///srv/README.md"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri="memo://note", mime_type="text/plain", text="the note"),
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(
                uri="memo://pixel", mime_type="image/png", blob=base64.b64encode(PNG).decode()
            ),
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(
                uri="memo://data.bin",
                mime_type="application/octet-stream",
                blob=base64.b64encode(b"x" * 3000).decode(),
            ),
        ),
    ]


class Weather(BaseModel):
    city: str
    temperature: float
    conditions: str


@server.tool()
def weather(city: str) -> Weather:
    """Structured weather for a city."""
    return Weather(city=city, temperature=21.5, conditions="sunny")


@server.tool()
def fail(reason: str = "it broke") -> str:
    """Always fails (the server reports isError)."""
    raise ToolError(reason)  # an anticipated failure: its text reaches the client (a crash's would not)


@server.tool()
async def progress(steps: int, ctx: Context) -> str:
    """Report progress `steps` times, then finish."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        await anyio.sleep(0.01)
    return f"done after {steps} steps"


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Say "sleeping" (a progress notification), sleep, then answer."""
    await ctx.report_progress(0, None, "sleeping")
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def crash(message: str = "fatal: the kitchen is on fire") -> str:
    """Print to stderr and kill the server process mid-call."""
    print(message, file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def context(names: list[str]) -> dict[str, object]:
    """The server's working directory, and the values of some environment variables (None if unset)."""
    return {"cwd": os.getcwd(), "env": {name: os.environ.get(name) for name in names}}


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of an HTTP request header as the server received it ("<none>" if absent)."""
    headers = ctx.headers
    return str(headers.get(name, "<none>")) if headers is not None else "<not http>"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


if __name__ == "__main__":
    delay = float(os.environ.get("KITCHEN_START_DELAY", "0"))
    if delay:
        time.sleep(delay)
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
    else:
        server.settings.log_level = "WARNING"
        server.run(transport, host="127.0.0.1", port=int(os.environ["PORT"]))  # type: ignore[call-overload]
