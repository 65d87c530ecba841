"""An MCPServer whose tool list changes: tools that add, remove and redefine other tools.

Run: ``python changing.py`` (stdio) or ``python changing.py http`` (Streamable HTTP on ``PORT``, at ``/mcp``).

- ``add_tool(name, description)`` adds a tool ``name`` (it echoes its ``text``), or redefines it when it
  exists; ``remove_tool(name)`` removes it. Both then say the list changed:
  ``notifications/tools/list_changed`` on the call's own stream (handshake era) and a ``ToolsListChanged``
  event for ``subscriptions/listen`` streams (2026-07-28).
- The added tools are kept in the JSON file ``STATE`` (when set), so that a fresh stdio process (a stateless
  call) sees the tools an earlier one added.
- ``TTL_MS`` (and ``SCOPE``, default ``private``) set the cache hints of ``tools/list`` results (2026-07-28).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp import types
from mcp.server import CacheHint
from mcp.server.mcpserver import Context, MCPServer

STATE = Path(os.environ["STATE"]) if os.environ.get("STATE") else None
TTL_MS = os.environ.get("TTL_MS")
hints = (
    {"tools/list": CacheHint(ttl_ms=int(TTL_MS), scope=os.environ.get("SCOPE", "private"))}  # type: ignore[arg-type]
    if TTL_MS
    else None
)

server = MCPServer("changing", log_level="WARNING", cache_hints=hints)


def _added() -> dict[str, str]:
    if STATE is None or not STATE.exists():
        return {}
    return dict(json.loads(STATE.read_text()))


def _save(added: dict[str, str]) -> None:
    if STATE is not None:
        STATE.write_text(json.dumps(added))


def _install(name: str, description: str) -> None:
    def echo(text: str = "") -> str:
        return f"{name}: {text}"

    server.add_tool(echo, name=name, description=description)


async def _changed(ctx: Context[Any, Any]) -> None:
    await ctx.session.send_notification(
        types.ToolListChangedNotification(), related_request_id=ctx.request_id
    )
    await ctx.notify_tools_changed()


@server.tool()
def stable(text: str) -> str:
    """A tool that never changes."""
    return text


@server.tool()
async def add_tool(name: str, description: str, ctx: Context[Any, Any]) -> str:
    """Add (or redefine) a tool that echoes its text, and say the list changed."""
    added = _added()
    if name in {tool.name for tool in await server.list_tools()}:
        server.remove_tool(name)
    _install(name, description)
    added[name] = description
    _save(added)
    await _changed(ctx)
    return f"added {name}"


@server.tool()
async def remove_tool(name: str, ctx: Context[Any, Any]) -> str:
    """Remove a tool added by add_tool, and say the list changed."""
    added = _added()
    server.remove_tool(name)
    added.pop(name, None)
    _save(added)
    await _changed(ctx)
    return f"removed {name}"


for _name, _description in _added().items():
    _install(_name, _description)


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        server.run(transport="streamable-http", port=int(os.environ["PORT"]))
    else:
        server.run()
