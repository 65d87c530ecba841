"""A low-level MCP server whose `record` tool answers with the exact arguments it received.

`record` has a schema a typed function must carry: names that are not Python names (``from``,
``max-results``), an enum with a default, a number, an integer with a default, a nested object, an array,
a nullable string. It answers with structured content only (no text): ``{"arguments": <what arrived>}``.
`refuse` answers ``isError`` with its `reason`. Stdio only; it speaks both protocol eras.

For typed clients (`cubepi codegen`): `nest` takes nested objects (a list of closed objects, a recursive
`$defs` tree, an `anyOf` of two objects) and answers with the arguments' JSON text exactly as it
arrived (keys in the order sent); `weather` has an `outputSchema` and answers with the `report` it was
given as its structured content (and the same as text), so a test chooses what comes back.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

RECORD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "from": {"type": "string", "description": "Where the trip starts."},
        "max-results": {"type": "integer", "default": 10, "description": "How many results at most."},
        "style": {"type": "string", "enum": ["plain", "excited"], "default": "plain"},
        "ratio": {"type": "number"},
        "when": {
            "type": "object",
            "properties": {"day": {"type": "integer"}, "note": {"type": "string"}},
            "required": ["day"],
        },
        "tags": {"type": "array", "items": {"type": "string"}},
        "note": {"type": ["string", "null"]},
    },
    "required": ["from"],
}

NEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "$defs": {
        "Node": {
            "type": "object",
            "properties": {
                "value": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
            },
            "required": ["value"],
        }
    },
    "properties": {
        "path": {"type": "string"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                "required": ["oldText", "newText"],
                "additionalProperties": False,
            },
        },
        "tree": {"$ref": "#/$defs/Node"},
        "shape": {
            "anyOf": [
                {"type": "object", "properties": {"radius": {"type": "number"}}, "required": ["radius"]},
                {"type": "object", "properties": {"side": {"type": "integer"}}, "required": ["side"]},
            ]
        },
        "ratio": {"type": "number"},
    },
    "required": ["path"],
}

WEATHER_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "temperature": {"type": "number"},
        "conditions": {"type": "string"},
        "wind": {
            "type": "object",
            "properties": {"speed": {"type": "number"}, "unit": {"enum": ["kmh", "mph"]}},
            "required": ["speed"],
        },
    },
    "required": ["temperature", "conditions"],
}

TOOLS = [
    types.Tool(name="record", description="Record the arguments received.", input_schema=RECORD_SCHEMA),
    types.Tool(
        name="refuse",
        description="Always fails, saying why.",
        input_schema={"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]},
    ),
    types.Tool(name="nest", description="Answer with the arguments' JSON as sent.", input_schema=NEST_SCHEMA),
    types.Tool(
        name="weather",
        description="Answer with the report given.",
        input_schema={"type": "object", "properties": {"report": {"type": "object"}}, "required": ["report"]},
        output_schema=WEATHER_OUTPUT,
    ),
]


async def list_tools(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "refuse":
        reason = str(arguments.get("reason"))
        return types.CallToolResult(content=[types.TextContent(type="text", text=reason)], is_error=True)
    if params.name == "nest":
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(arguments))])
    if params.name == "weather":
        report = arguments.get("report")
        text = types.TextContent(type="text", text=json.dumps(report))
        return types.CallToolResult(content=[text], structured_content=report)
    return types.CallToolResult(content=[], structured_content={"arguments": arguments})


server: Server = Server("recorder", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
