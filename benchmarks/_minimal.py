"""The smallest useful MCP server: one tool, ``add(a: int, b: int) -> int``, both protocol eras.

Run: ``python _minimal.py [stdio|streamable-http]``; over HTTP it listens on 127.0.0.1:$PORT (at /mcp). With
so little work on the server, what a client spends per call shows.
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("minimal")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
    else:
        server.settings.log_level = "WARNING"
        server.run(transport, host="127.0.0.1", port=int(os.environ["PORT"]))  # type: ignore[call-overload]
