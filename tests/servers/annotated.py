"""A FastMCP server for policies and connections: annotated tools, counters kept in files, client features.

Counters live in files named by the caller, so they survive the server process: a stateless call (a new
process each time) or a reconnect can be counted. Run: python annotated.py [stdio|streamable-http|sse].
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp import types
from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations
from pydantic import BaseModel

server = FastMCP("annotated")

READ_ONLY = ToolAnnotations(readOnlyHint=True)
IDEMPOTENT = ToolAnnotations(readOnlyHint=False, idempotentHint=True, destructiveHint=True)
DESTRUCTIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True)
ADDITIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=False)


def _bump(path: str) -> int:
    file = Path(path)
    count = int(file.read_text()) + 1 if file.exists() else 1
    file.write_text(str(count))
    return count


def _flaky(path: str, failures: int) -> str:
    count = _bump(path)
    if count <= failures:
        os._exit(1)  # the server dies mid-call: a transport failure for the client
    return f"call {count}"


@server.tool(annotations=READ_ONLY)
def flaky_read(path: str, failures: int = 0) -> str:
    """Read-only. Counts calls in `path`; the server process dies on the first `failures` calls."""
    return _flaky(path, failures)


@server.tool(annotations=IDEMPOTENT)
def flaky_idempotent(path: str, failures: int = 0) -> str:
    """Idempotent. Counts calls in `path`; the server process dies on the first `failures` calls."""
    return _flaky(path, failures)


@server.tool()
def flaky_write(path: str, failures: int = 0) -> str:
    """No annotations. Counts calls in `path`; the server process dies on the first `failures` calls."""
    return _flaky(path, failures)


@server.tool(annotations=READ_ONLY)
def refuse(path: str) -> str:
    """Read-only. Counts calls in `path`, then reports an error (isError)."""
    count = _bump(path)
    raise ValueError(f"refused (call {count})")


@server.tool(annotations=READ_ONLY)
def count(path: str) -> int:
    """How many calls the counter in `path` has seen."""
    file = Path(path)
    return int(file.read_text()) if file.exists() else 0


@server.tool(annotations=READ_ONLY, structured_output=False)
def big(size: int, blocks: int = 1) -> list[types.ContentBlock]:
    """`blocks` text blocks of `size` characters each ("a", "b", ...)."""
    return [types.TextContent(type="text", text=chr(ord("a") + i % 26) * size) for i in range(blocks)]


class Report(BaseModel):
    rows: int
    status: str


@server.tool(annotations=READ_ONLY)
def report(rows: int) -> Report:
    """A structured report (structuredContent plus its JSON as text)."""
    return Report(rows=rows, status="ok")


@server.tool(annotations=READ_ONLY)
def peek(name: str) -> str:
    """Read-only."""
    return f"peeked at {name}"


@server.tool(annotations=DESTRUCTIVE)
def delete(name: str) -> str:
    """Destructive."""
    return f"deleted {name}"


@server.tool(annotations=ADDITIVE)
def append(name: str) -> str:
    """Not read-only, but only additive (destructiveHint false)."""
    return f"appended to {name}"


@server.tool()
def plain(name: str) -> str:
    """No annotations: per the MCP spec, not read-only and destructive."""
    return f"plain {name}"


_in_flight = 0
_peak = 0


@server.tool(annotations=READ_ONLY)
async def hold(seconds: float) -> str:
    """Stay in flight for `seconds` (the server records the most calls in flight at once)."""
    global _in_flight, _peak
    _in_flight += 1
    _peak = max(_peak, _in_flight)
    try:
        await anyio.sleep(seconds)
    finally:
        _in_flight -= 1
    return "held"


@server.tool(annotations=READ_ONLY)
def peak() -> int:
    """The most `hold` calls that were in flight at once; resets it."""
    global _peak
    seen, _peak = _peak, 0
    return seen


@server.tool(annotations=READ_ONLY)
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
async def chatty(ctx: Context) -> str:  # type: ignore[type-arg]
    """Send two log messages to the client, then answer."""
    await ctx.info("starting the chat")
    await ctx.warning("almost done")
    return "chatted"


@server.tool()
async def ask(question: str, ctx: Context) -> str:  # type: ignore[type-arg]
    """Ask the client's model (sampling) and return its answer."""
    result = await ctx.session.create_message(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))],
        max_tokens=20,
    )
    content = result.content
    return content.text if isinstance(content, types.TextContent) else str(content)


class Confirmation(BaseModel):
    confirm: bool


@server.tool()
async def confirm(action: str, ctx: Context) -> str:  # type: ignore[type-arg]
    """Ask the user (elicitation) to confirm `action`."""
    answer = await ctx.elicit(f"Really {action}?", Confirmation)
    if answer.action == "accept":
        return f"{action}: confirmed={answer.data.confirm}"
    return f"{action}: {answer.action}"


@server.tool()
async def roots(ctx: Context) -> list[str]:  # type: ignore[type-arg]
    """The client's roots (roots/list)."""
    listed = await ctx.session.list_roots()
    return [str(root.uri) for root in listed.roots]


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport != "stdio":
        server.settings.host = "127.0.0.1"
        server.settings.port = int(os.environ["PORT"])
        server.settings.log_level = "WARNING"
    server.run(transport)  # type: ignore[arg-type]
