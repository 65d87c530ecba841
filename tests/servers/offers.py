"""An MCPServer offering resources, templates, prompts and instructions (and one tool).

Run: python offers.py [stdio|streamable-http]. It speaks both protocol eras; over HTTP it listens on
127.0.0.1:$PORT (/mcp). It has: text, image and binary resources, a resource list served in pages of 3,
a template with several variables, a prompt with arguments and an embedded resource, a resource of 2 MB
(`offers://huge`). `OFFERS_NO_INSTRUCTIONS=1`: it sends no instructions. `OFFERS_LOG=<path>`: each
request's method is appended to that file, one a line (to count requests). `OFFERS_SLOW=<method>`: requests
of that method are answered after a minute.
"""

from __future__ import annotations

import base64
import os
import sys
from typing import Any

import anyio
from mcp import types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import Message, UserMessage

INSTRUCTIONS = "Offers: read offers://readme first. Notes are at offers://users/{user}/notes/{note}."
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
PAGE = 3


async def log_requests(ctx: Any, call_next: Any) -> Any:
    path = os.environ.get("OFFERS_LOG")
    if path:
        async with await anyio.open_file(path, "a") as log:
            await log.write(f"{ctx.method}\n")
    if ctx.method == os.environ.get("OFFERS_SLOW"):
        await anyio.sleep(60)
    return await call_next(ctx)


class PagedServer(MCPServer):
    """An MCPServer whose resources/list answers in pages of `PAGE`."""

    async def _handle_list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        everything = await self.list_resources()
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + PAGE
        return types.ListResourcesResult(
            resources=everything[start:end], next_cursor=str(end) if end < len(everything) else None
        )


server = PagedServer(
    "offers",
    instructions=None if os.environ.get("OFFERS_NO_INSTRUCTIONS") else INSTRUCTIONS,
    middleware=[log_requests],
)


@server.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


@server.resource("offers://readme", mime_type="text/plain", description="What this server offers.")
def readme() -> str:
    return "This server offers notes and files."


@server.resource("offers://pixel.png", mime_type="image/png")
def pixel() -> bytes:
    return PNG


@server.resource("offers://data.bin", mime_type="application/octet-stream")
def data() -> bytes:
    return bytes(range(256)) * 4


@server.resource("offers://huge", mime_type="text/plain")
def huge() -> str:
    return "x" * 2_000_000


for index in range(4):

    def make(index: int) -> Any:
        def item() -> str:
            return f"item {index}"

        item.__name__ = f"item_{index}"
        return item

    server.resource(f"offers://items/{index}", mime_type="text/plain")(make(index))


@server.resource(
    "offers://users/{user}/notes/{note}", mime_type="text/plain", description="A note of a user, by id."
)
def note(user: str, note: str) -> str:
    return f"note {note} of {user}"


@server.prompt()
def review(topic: str, tone: str = "plain") -> list[Message]:
    """Review a topic, with the readme attached."""
    return [
        UserMessage(f"Review {topic} in a {tone} tone."),
        UserMessage(
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="offers://readme", mime_type="text/plain", text="This server offers notes and files."
                ),
            )
        ),
    ]


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run(transport, host="127.0.0.1", port=int(os.environ["PORT"]))  # type: ignore[call-overload]
