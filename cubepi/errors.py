"""The one exception tree of cubepi.

```
CubepiError
├── UserError          the caller used cubepi wrongly (bad option, missing extra, closed connection)
├── SchemaError        a tool's inputSchema cannot be turned into a model at all
├── ToolCallError      a tool called as a function (`tool.as_function()`) failed; the message is for the model
└── MCPError           the transport or the connection to an MCP server failed
    └── MCPTimeoutError   a phase (startup, initialize, list, call) ran past its limit; also a TimeoutError

ServerSkippedWarning   (a UserWarning) a server of a config failed to load and was left out (on_error="skip")
```

A failure the *server* reports (`isError`) is never an exception: it is an `AgentToolResult` with
`is_error=True` that a model can read. The one exception is the function `tool.as_function()` returns: it
raises `ToolCallError`, because the frameworks that take functions turn exceptions into what their model
reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tools import AgentToolResult

__all__ = [
    "CubepiError",
    "MCPError",
    "MCPTimeoutError",
    "SchemaError",
    "ServerSkippedWarning",
    "ToolCallError",
    "UserError",
]


class CubepiError(Exception):
    """Base of every exception cubepi raises on purpose."""


class UserError(CubepiError):
    """The caller asked for something cubepi cannot do; the message says what to change."""


class SchemaError(CubepiError):
    """A JSON Schema is unusable (not an object at all); names the tool it came from."""

    def __init__(self, message: str, *, tool_name: str | None = None) -> None:
        super().__init__(message)
        self.tool_name = tool_name


class ToolCallError(CubepiError):
    """A call through `tool.as_function()` failed: the tool reported an error (`is_error`), or the
    arguments were refused. The message is the text the model should read; `result` is the whole
    `AgentToolResult`."""

    def __init__(self, message: str, *, result: AgentToolResult) -> None:
        super().__init__(message)
        self.result = result


class MCPError(CubepiError):
    """The transport or connection to an MCP server failed.

    Carries the tool's name (when a call failed), a secret-free description of the server, and the tail
    of what a stdio server printed on stderr.
    """

    def __init__(
        self,
        message: str,
        *,
        tool_name: str | None = None,
        server: str | None = None,
        stderr: str | None = None,
    ) -> None:
        self.tool_name = tool_name
        self.server = server
        self.stderr = stderr
        super().__init__(message)

    def __str__(self) -> str:
        text = str(self.args[0]) if self.args else ""
        if self.stderr:
            text += "\n--- server stderr (tail) ---\n" + self.stderr.rstrip()
        return text


class MCPTimeoutError(MCPError, TimeoutError):
    """A phase ran past its limit. `phase` is one of "startup", "initialize", "list", "call"."""

    def __init__(
        self,
        message: str,
        *,
        phase: str,
        limit: float,
        tool_name: str | None = None,
        server: str | None = None,
        stderr: str | None = None,
    ) -> None:
        self.phase = phase
        self.limit = limit
        super().__init__(message, tool_name=tool_name, server=server, stderr=stderr)


class ServerSkippedWarning(UserWarning):
    """A server of a config failed to load and was left out of the list (``on_error="skip"``); the
    message names the server and says why, without secrets."""
