"""A low-level MCP server for session behaviour: cancellation, progress, output schemas, env, stderr.

Run: ``python behaviour.py`` (stdio). With ``BEHAVIOUR_RECORD=<file>`` every message it receives is appended
to that file as one JSON line, as it came over the wire (so tests can see ``notifications/cancelled``). Its
tools are listed on two pages; ``shaped`` (with an outputSchema) is on the second. ``BEHAVIOUR_PAGES=cycle``
makes the cursors cycle.

It speaks both protocol eras (`Server.run` serves either). What gets recorded differs by era: a handshake
client sends ``initialize`` and ``notifications/initialized`` first; a 2026-07-28 client sends
``server/discover`` and carries its protocol version, client info and capabilities in every request's
``params._meta`` instead. ``tools/call``, ``notifications/cancelled`` and ``_meta.progressToken`` look the
same in both.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"count": {"type": "integer"}, "label": {"type": "string"}},
    "required": ["count"],
}


def _tool(name: str, description: str, properties: dict[str, Any], **extra: Any) -> types.Tool:
    return types.Tool(
        name=name,
        description=description,
        input_schema={"type": "object", "properties": properties},
        **extra,
    )


PAGES = [
    [
        _tool("hang", "Never answers.", {}),
        _tool(
            "ticking",
            "Sends a progress notification every `interval` seconds for `seconds`, then answers.",
            {"seconds": {"type": "number"}, "interval": {"type": "number"}},
        ),
        _tool(
            "context",
            "The cwd and some env values.",
            {"names": {"type": "array", "items": {"type": "string"}}},
        ),
    ],
    [
        _tool(
            "shaped",
            "Output that matches its outputSchema (mode good), does not (bad) or is missing (none).",
            {"mode": {"type": "string"}},
            output_schema=OUTPUT_SCHEMA,
        ),
        _tool("noisy", "Prints `lines` lines on stderr, then answers.", {"lines": {"type": "integer"}}),
    ],
]


async def list_tools(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    cursor = params.cursor if params else None
    index = int(cursor) if cursor else 0
    if os.environ.get("BEHAVIOUR_PAGES") == "cycle":  # pages 0 -> 1 -> 0 -> 1 ...: cursors "1", "0", "1"
        return types.ListToolsResult(tools=PAGES[index], next_cursor=str((index + 1) % len(PAGES)))
    more = index + 1 < len(PAGES)
    return types.ListToolsResult(tools=PAGES[index], next_cursor=str(index + 1) if more else None)


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


async def _run_tool(ctx: ServerRequestContext, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    if name == "hang":
        await anyio.sleep_forever()
    if name == "ticking":
        seconds = float(arguments.get("seconds", 1))
        interval = float(arguments.get("interval", 0.2))
        ticks = 0
        with anyio.move_on_after(seconds):
            while True:
                await anyio.sleep(interval)
                ticks += 1
                # Sent against the request's progressToken; nothing is sent when the request has none.
                await ctx.session.report_progress(ticks, None, f"tick {ticks}")
        return types.CallToolResult(content=_text(f"ticked {ticks} times"))
    if name == "context":
        names = arguments.get("names") or []
        found = {"cwd": os.getcwd(), "env": {key: os.environ.get(key) for key in names}}
        return types.CallToolResult(content=_text(json.dumps(found)), structured_content=found)
    if name == "shaped":
        mode = arguments.get("mode", "good")
        if mode == "none":
            return types.CallToolResult(content=_text("three things (no structure)"))
        structured = {"count": 3, "label": "things"} if mode == "good" else {"count": "three", "label": 3}
        # Passed through as is: the SDK's low-level server does not check it against the outputSchema.
        return types.CallToolResult(content=_text("three things"), structured_content=structured)
    if name == "noisy":
        for line in range(int(arguments.get("lines", 3))):
            print(f"noise line {line}", file=sys.stderr, flush=True)
        return types.CallToolResult(content=_text("made some noise"))
    raise ValueError(f"unknown tool {name}")


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    """Runs the tool; arguments are not checked against the input schemas (tests send odd ones on purpose)."""
    try:
        return await _run_tool(ctx, params.name, params.arguments or {})
    except Exception as error:  # an error result, as the 1.x SDK's low-level server made of an exception
        return types.CallToolResult(content=_text(str(error)), is_error=True)


server: Server = Server("behaviour", on_list_tools=list_tools, on_call_tool=call_tool)


def _append(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")


async def main() -> None:
    print("behaviour server starting", file=sys.stderr, flush=True)
    record = os.environ.get("BEHAVIOUR_RECORD")
    async with stdio_server() as (read, write):
        if not record:
            await server.run(read, write, server.create_initialization_options())
            return
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def tee() -> None:
            async with send:
                async for message in read:
                    if not isinstance(message, Exception):
                        line = message.message.model_dump(by_alias=True, mode="json", exclude_none=True)
                        _append(record, json.dumps(line))
                    await send.send(message)

        async with anyio.create_task_group() as group:
            group.start_soon(tee)
            await server.run(receive, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
