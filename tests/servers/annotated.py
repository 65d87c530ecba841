"""An MCPServer for policies and connections: annotated tools, counters kept in files, client features.

Counters live in files named by the caller, so they survive the server process: a stateless call (a new
process each time) or a reconnect can be counted. Run: python annotated.py [stdio|streamable-http|sse]
(over HTTP on 127.0.0.1:$PORT, Streamable HTTP at /mcp, SSE at /sse). It speaks both protocol eras.

`ask`, `confirm` and `roots` get the client's answer through resolvers (`Resolve`): a server-to-client
request in the handshake era, an `InputRequiredResult` the client answers and retries in 2026-07-28.
`chatty`'s log messages reach a 2026-07-28 client only if its request opts in to a log level.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Annotated

import anyio
from mcp import types
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import ToolAnnotations
from pydantic import BaseModel

# `chatty` uses the logging capability on purpose, though 2026-07-28 deprecates it.
warnings.filterwarnings("ignore", message="The logging capability", category=MCPDeprecationWarning)

server = MCPServer("annotated")

READ_ONLY = ToolAnnotations(read_only_hint=True)
IDEMPOTENT = ToolAnnotations(read_only_hint=False, idempotent_hint=True, destructive_hint=True)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False)


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
    raise ToolError(f"refused (call {count})")


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
async def chatty(ctx: Context) -> str:
    """Send two log messages to the client, then answer."""
    await ctx.info("starting the chat")
    await ctx.warning("almost done")
    return "chatted"


def _sample(question: str) -> Sample:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))
    return Sample([message], max_tokens=20)


@server.tool()
async def ask(question: str, answer: Annotated[types.CreateMessageResult, Resolve(_sample)]) -> str:
    """Ask the client's model (sampling) and return its answer."""
    content = answer.content
    return content.text if isinstance(content, types.TextContent) else str(content)


class Confirmation(BaseModel):
    confirm: bool


def _confirmation(action: str) -> Elicit[Confirmation]:
    return Elicit(f"Really {action}?", Confirmation)


@server.tool()
async def confirm(
    action: str, answer: Annotated[ElicitationResult[Confirmation], Resolve(_confirmation)]
) -> str:
    """Ask the user (elicitation) to confirm `action`."""
    if isinstance(answer, AcceptedElicitation):
        return f"{action}: confirmed={answer.data.confirm}"
    return f"{action}: {answer.action}"


def _roots() -> ListRoots:
    return ListRoots()


@server.tool()
async def roots(listed: Annotated[types.ListRootsResult, Resolve(_roots)]) -> list[str]:
    """The client's roots (roots/list)."""
    return [str(root.uri) for root in listed.roots]


@server.tool()
async def survey(
    question: str,
    answer: Annotated[types.CreateMessageResult, Resolve(_sample)],
    listed: Annotated[types.ListRootsResult, Resolve(_roots)],
) -> str:
    """Ask the client's model (sampling) and for its roots (roots/list) in one call; both in the result."""
    content = answer.content
    text = content.text if isinstance(content, types.TextContent) else str(content)
    return f"{text} | roots: {', '.join(str(root.uri) for root in listed.roots)}"


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
    else:
        server.settings.log_level = "WARNING"
        server.run(transport, host="127.0.0.1", port=int(os.environ["PORT"]))  # type: ignore[call-overload]
