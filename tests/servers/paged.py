"""A low-level MCP server whose tools/list is paginated (3 pages); `PAGED_MODE=loop` repeats a cursor."""

from __future__ import annotations

import os

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

server: Server = Server("paged")
TOOLS = [
    types.Tool(
        name=f"tool_{index}",
        description=f"Tool number {index}.",
        inputSchema={"type": "object", "properties": {"x": {"type": "integer"}}},
    )
    for index in range(7)
]
PAGE = 3


@server.list_tools()
async def list_tools(request: types.ListToolsRequest) -> types.ListToolsResult:
    await anyio.sleep(float(os.environ.get("PAGED_LIST_DELAY", "0")))
    cursor = request.params.cursor if request.params else None
    if os.environ.get("PAGED_MODE") == "loop":
        return types.ListToolsResult(tools=TOOLS[:PAGE], nextCursor="again")
    start = int(cursor) if cursor else 0
    end = start + PAGE
    return types.ListToolsResult(tools=TOOLS[start:end], nextCursor=str(end) if end < len(TOOLS) else None)


@server.call_tool()
async def call_tool(name: str, arguments: dict[str, object]) -> list[types.TextContent]:
    return [types.TextContent(type="text", text=f"{name}({arguments.get('x')})")]


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
