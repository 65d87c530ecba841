"""cubepi: the tools of any MCP server as typed Python tools.

```python
from . import AgentTool, tool
from .mcp import load_mcp_tools_stdio

tools = await load_mcp_tools_stdio(command="uvx", args=["mcp-server-time"])
result = await tools[0].execute({"timezone": "Europe/Paris"})
```

The agent loop and providers (`Agent`, `Model`, `AnthropicProvider`, ...) are imported on first use, so
`import cubepi` stays light and the tool layer never depends on them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .defer import DeferredCatalog, defer_tools
from .errors import CubepiError, MCPError, MCPTimeoutError, SchemaError, ToolCallError, UserError
from .tools import AgentTool, AgentToolResult, Content, ImageContent, TextContent, ToolUpdate, tool

if TYPE_CHECKING:
    from .agent import Agent, BlockCall, ReplaceArguments, ToolCallContext
    from .providers import (
        AnthropicProvider,
        AssistantMessage,
        FauxProvider,
        Model,
        OpenAIProvider,
        Provider,
        ToolCall,
        ToolResultMessage,
        UserMessage,
    )

__version__ = "0.1.0"

_LAZY = {
    "Agent": "agent",
    "BlockCall": "agent",
    "ReplaceArguments": "agent",
    "ToolCallContext": "agent",
    "AnthropicProvider": "providers",
    "AssistantMessage": "providers",
    "FauxProvider": "providers",
    "Model": "providers",
    "OpenAIProvider": "providers",
    "Provider": "providers",
    "ToolCall": "providers",
    "ToolResultMessage": "providers",
    "UserMessage": "providers",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cubepi' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "Agent",
    "AgentTool",
    "AgentToolResult",
    "AnthropicProvider",
    "AssistantMessage",
    "BlockCall",
    "Content",
    "CubepiError",
    "DeferredCatalog",
    "FauxProvider",
    "ImageContent",
    "MCPError",
    "MCPTimeoutError",
    "Model",
    "OpenAIProvider",
    "Provider",
    "ReplaceArguments",
    "SchemaError",
    "TextContent",
    "ToolCall",
    "ToolCallContext",
    "ToolCallError",
    "ToolResultMessage",
    "ToolUpdate",
    "UserError",
    "UserMessage",
    "__version__",
    "defer_tools",
    "tool",
]
