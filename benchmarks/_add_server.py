"""A minimal MCP server for throughput: one tool, ``add(a, b)``, over Streamable HTTP on 127.0.0.1:$PORT
(``/mcp``). It speaks the 2026-07-28 revision (and the handshake era); each request is answered alone."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("add", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]))  # type: ignore[call-overload]
