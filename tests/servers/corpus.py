"""A low-level MCP server (stdio, both eras) serving the tools of one corpus file (``CORPUS_FILE``, a
tests/schema/corpus file) whose every call answers with the exact arguments received, as structured
content ``{"arguments": ...}``. Output schemas are left out (the answers would not match them)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

DEFINITIONS = json.loads(Path(os.environ["CORPUS_FILE"]).read_text())["tools"]
TOOLS = [types.Tool.model_validate({k: v for k, v in d.items() if k != "outputSchema"}) for d in DEFINITIONS]


async def list_tools(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[], structured_content={"arguments": params.arguments or {}})


server: Server = Server("corpus", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
