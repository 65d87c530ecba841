"""An MCPServer that says who called: the Authorization header, the request's ``_meta`` and ``user_id``.

Run: ``python whoami.py`` (stdio) or ``python whoami.py http`` (Streamable HTTP on ``PORT``, at ``/mcp``). It
speaks both eras (a client forcing ``protocol="legacy"`` gets handshake sessions). ``panel`` is app-only in
the MCP Apps extension's terms (``_meta.ui.visibility == ["app"]``).
"""

from __future__ import annotations

import json
import os
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("whoami", log_level="WARNING")


def _caller(ctx: Context) -> dict[str, object]:
    headers = ctx.headers or {}
    meta = ctx.request_context.meta
    meta_dict = meta if isinstance(meta, dict) else (meta.model_dump() if meta is not None else {})
    return {
        "authorization": headers.get("authorization"),
        "x_tenant": headers.get("x-tenant"),
        "meta": {k: v for k, v in dict(meta_dict).items() if k != "progressToken"},
    }


@server.tool()
def whoami(user_id: str, ctx: Context, note: str = "") -> str:
    """Who called: the Authorization header, the _meta sent, the user argument, and a note."""
    return json.dumps({**_caller(ctx), "user_id": user_id, "note": note}, sort_keys=True)


@server.tool(meta={"ui": {"visibility": ["app"], "resourceUri": "ui://whoami/panel"}})
def panel(ctx: Context) -> str:
    """Data for the application's panel (app-only: never offered to a model)."""
    return json.dumps({**_caller(ctx), "panel": True}, sort_keys=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        server.run(transport="streamable-http", port=int(os.environ["PORT"]))
    else:
        server.run()
