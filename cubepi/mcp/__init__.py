"""MCP servers as typed tools: loaders over stdio, Streamable HTTP and SSE, and the pieces they use.

```python
from . import load_mcp_tools_stdio

tools = await load_mcp_tools_stdio("npx", ["-y", "@modelcontextprotocol/server-filesystem", "./sandbox"])
result = await tools[0].execute({"path": "./sandbox"})
tools = await load_mcp_tools_from_config("mcp.json")   # every server of an `mcpServers` file
changes = await tools.refresh()                         # list again (honours the server's cache hints)
tools = await load_mcp_tools_stdio("npx", [...], lock="cubepi.lock")  # pinned definitions (docs/pinning.md)
tools = await load_mcp_tools_from_lock("cubepi.lock")   # built from the lockfile alone, no listing
```

The map (docs/architecture.md has it in full): `_lists.loaders` lists a server once and builds `AgentTool`s
whose `run` is `_lists.tool.MCPRun` (the list's policies, applied in one place) over one runner per list
(`_calls.runner.Stateless`, or a connection's). A call opens a session (`_calls.session.Opening`: the
transport of `_transports.stdio` or `_transports.http`, the era of `_calls.protocol`) and sends its request
(`_calls.session.call_tool`, bounded by `_calls.limits.Deadline`). Resources, prompts and instructions
(`_lists.offers`) go the same way. Sessions whose end matters are leased (`_calls.ownership.Lease`), owned by
the list's keeper in each event loop (`_calls.ownership.Keeper`); `_calls.shared_state.Shared` is what the
calls of one list share. Who a call is for (`_context.call_context`: headers, auth, ``_meta``, values) is read
where the call starts and handed to that call's own session; `_lists.hidden_arguments` takes
`hidden_arguments` out of the schema.

Importing this package does not import the `mcp` SDK; the first connection does, and a missing extra
raises `UserError` naming ``pip install "cubepi[mcp]"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import MCPError, MCPTimeoutError, ServerSkippedWarning
from ._connection import MCPConnection, ToolsChangedCallback
from ._content import render_mcp_content
from ._context import CallContext, call_context, current_call_context
from ._lists.from_config import load_mcp_tools_from_config
from ._lists.from_lock import load_mcp_tools_from_lock
from ._lists.loaders import load_mcp_tools, load_mcp_tools_http, load_mcp_tools_stdio
from ._lists.offers import PromptMessage, instructions_prompt
from ._lists.output_schema import output_model
from ._lists.tool import make_mcp_agent_tool
from ._lists.toollist import MCPToolList, ToolChanges
from ._lockfile import DriftWarning
from ._servers import ENV_PASSTHROUGH, HttpServer, StdioServer

if TYPE_CHECKING:
    from ._transports.dpop import DPoP, DPoPMode


def __getattr__(name: str) -> Any:
    """`DPoP` (an `httpx2.Auth`) and `DPoPMode`, imported on use: importing this package needs no SDK."""
    if name in ("DPoP", "DPoPMode"):
        from ._sdk import ensure_sdk

        ensure_sdk()
        from ._transports import dpop

        value = getattr(dpop, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ENV_PASSTHROUGH",
    "CallContext",
    "DPoP",
    "DPoPMode",
    "DriftWarning",
    "HttpServer",
    "MCPConnection",
    "MCPError",
    "MCPTimeoutError",
    "MCPToolList",
    "PromptMessage",
    "ServerSkippedWarning",
    "StdioServer",
    "ToolChanges",
    "ToolsChangedCallback",
    "call_context",
    "current_call_context",
    "instructions_prompt",
    "load_mcp_tools",
    "load_mcp_tools_from_config",
    "load_mcp_tools_from_lock",
    "load_mcp_tools_http",
    "load_mcp_tools_stdio",
    "make_mcp_agent_tool",
    "output_model",
    "render_mcp_content",
]
