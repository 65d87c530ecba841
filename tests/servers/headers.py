"""An MCPServer with a parameter mirrored into an HTTP header (``x-mcp-header``, SEP-2243).

Run: ``python headers.py`` (stdio) or ``python headers.py http`` (Streamable HTTP on ``PORT``, at ``/mcp``).
On 2026-07-28 Streamable HTTP the server checks that a ``tools/call`` carries ``Mcp-Param-Region`` with the
``region`` argument's value, and refuses it (``HEADER_MISMATCH``) otherwise.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

server = MCPServer("headers", log_level="WARNING")


@server.tool()
def regional(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})], ctx: Context
) -> str:
    """The region argument, and the Mcp-Param-Region header the server received with it."""
    headers = ctx.headers
    seen = headers.get("mcp-param-region", "<none>") if headers is not None else "<not http>"
    return f"{region} (header: {seen})"


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        server.run(transport="streamable-http", port=int(os.environ["PORT"]))
    else:
        server.run()
