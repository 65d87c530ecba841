"""A low-level MCP server whose tools/list is paginated (3 pages); `PAGED_MODE=loop` repeats a cursor.

`PAGED_LIST_DELAY` (seconds) delays every tools/list answer. Stdio only; it speaks both protocol eras
(`Server.run` serves the `initialize` handshake and 2026-07-28 requests alike).
"""

from __future__ import annotations

import os

import anyio
import jsonschema
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOLS = [
    types.Tool(
        name=f"tool_{index}",
        description=f"Tool number {index}.",
        input_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
    )
    for index in range(7)
]
PAGE = 3


async def list_tools(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    await anyio.sleep(float(os.environ.get("PAGED_LIST_DELAY", "0")))
    cursor = params.cursor if params else None
    if os.environ.get("PAGED_MODE") == "loop":
        return types.ListToolsResult(tools=TOOLS[:PAGE], next_cursor="again")
    start = int(cursor) if cursor else 0
    end = start + PAGE
    return types.ListToolsResult(tools=TOOLS[start:end], next_cursor=str(end) if end < len(TOOLS) else None)


def _text(text: str, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    tool = next((tool for tool in TOOLS if tool.name == params.name), None)
    if tool is None:
        return _text(f"Unknown tool: {params.name}", is_error=True)
    try:  # the arguments are checked against the input schema, as the 1.x SDK's server did by default
        jsonschema.validate(arguments, tool.input_schema)
    except jsonschema.ValidationError as error:
        return _text(f"Input validation error: {error.message}", is_error=True)
    return _text(f"{params.name}({arguments.get('x')})")


server: Server = Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
