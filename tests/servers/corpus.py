"""Low-level MCP servers (both protocol eras) serving the tools of tests/schema/corpus files, whose every
call answers with the exact arguments received, as structured content ``{"arguments": ..., "tool": <the
name called>, "transport": "stdio" | "http"}``. Output schemas are left out (the answers would not match
them).

Run: ``CORPUS_FILE=<file> python corpus.py`` (stdio, the tools of one file), or ``python corpus.py http``
(Streamable HTTP on ``PORT``: the tools of every corpus file ``<name>.json`` at ``/<name>/mcp``, one
process for all, so that hundreds of calls cost no process start each).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

CORPUS = Path(__file__).parent.parent / "schema" / "corpus"


def corpus_server(path: Path, transport: str) -> Server:
    """A server listing the tools of the corpus file `path` and answering each call with its arguments."""
    definitions: list[dict[str, Any]] = json.loads(path.read_text())["tools"]
    tools = [
        types.Tool.model_validate({k: v for k, v in d.items() if k != "outputSchema"}) for d in definitions
    ]

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return types.CallToolResult(
            content=[],
            structured_content={
                "arguments": params.arguments or {},
                "tool": params.name,
                "transport": transport,
            },
        )

    return Server(f"corpus-{path.stem}", on_list_tools=list_tools, on_call_tool=call_tool)


async def stdio_main() -> None:
    server = corpus_server(Path(os.environ["CORPUS_FILE"]), "stdio")
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def http_main() -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    apps = {
        path.stem: corpus_server(path, "http").streamable_http_app() for path in sorted(CORPUS.glob("*.json"))
    }

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for app in apps.values():
                await stack.enter_async_context(app.router.lifespan_context(app))
            yield

    root = Starlette(routes=[Mount(f"/{name}", app=app) for name, app in apps.items()], lifespan=lifespan)
    uvicorn.run(root, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        http_main()
    else:
        anyio.run(stdio_main)
