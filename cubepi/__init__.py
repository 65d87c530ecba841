"""cubepi: the tools of any MCP server as typed Python tools.

```python
from cubepi import AgentTool, tool
from cubepi.mcp import load_mcp_tools_stdio

tools = await load_mcp_tools_stdio(command="uvx", args=["mcp-server-time"])
result = await tools[0].execute({"timezone": "Europe/Paris"})
```
"""

from __future__ import annotations

from .defer import DeferredCatalog, defer_tools
from .errors import CubepiError, MCPError, MCPTimeoutError, SchemaError, UserError
from .tools import AgentTool, AgentToolResult, Content, ImageContent, TextContent, ToolUpdate, tool

__version__ = "0.1.0"

__all__ = [
    "AgentTool",
    "AgentToolResult",
    "Content",
    "CubepiError",
    "DeferredCatalog",
    "ImageContent",
    "MCPError",
    "MCPTimeoutError",
    "SchemaError",
    "TextContent",
    "ToolUpdate",
    "UserError",
    "__version__",
    "defer_tools",
    "tool",
]
