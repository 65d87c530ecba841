"""A stdio `MCPServer` (both protocol eras) with a catalog of ``CATALOG`` (default 100) tools, for the
loading benchmark."""

from __future__ import annotations

import os
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer

server = MCPServer("catalog")


def make(i: int) -> Callable[..., str]:
    def fn(query: str, limit: int = 10, tags: list[str] | None = None, exact: bool = False) -> str:
        return f"{i}:{query}"

    fn.__name__ = f"tool_{i:03d}"
    fn.__doc__ = f"Catalog tool number {i}: searches something, returns a line."
    return fn


for number in range(int(os.environ.get("CATALOG", "100"))):
    server.tool()(make(number))

if __name__ == "__main__":
    server.run("stdio")
