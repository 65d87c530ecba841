"""`make_mcp_agent_tool`: one MCP tool definition as an `AgentTool` whose `execute` calls the server."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import BaseModel

from ..errors import UserError
from ..schema import schema_to_model, to_arguments
from ..tools import AgentTool, AgentToolResult, ApprovalPolicy, UpdateCallback
from ._call import run_stateless
from ._content import render_mcp_content
from ._output import OutputCheck
from ._session import DEFAULT_MAX_DURATION, SAME_AS_TIMEOUT, Endpoint, Session, Timeouts

if TYPE_CHECKING:
    from mcp import types as mcp_types

    from ._servers import HttpServer, StdioServer

__all__ = [
    "MCPRun",
    "SchemaModel",
    "StatelessCaller",
    "ToolCaller",
    "build_tool",
    "make_mcp_agent_tool",
    "stateless_caller",
    "tool_spec",
]

# How a tool reaches its server: (tool name, wire arguments, progress callback) -> the raw CallToolResult.
ToolCaller: TypeAlias = Callable[[str, dict[str, Any], "UpdateCallback | None"], Awaitable[Any]]


def tool_spec(tool: Any) -> dict[str, Any]:
    """An MCP tool definition (SDK `Tool` or its JSON dict) as a plain dict with its wire keys."""
    if isinstance(tool, Mapping):
        spec = dict(tool)
    elif callable(getattr(tool, "model_dump", None)):
        spec = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    else:
        kind = type(tool).__name__
        raise UserError(f"expected an MCP tool definition (mcp.types.Tool or dict), got {kind}")
    if not isinstance(spec.get("name"), str) or not spec["name"]:
        raise UserError("an MCP tool definition needs a non-empty 'name'")
    return spec


class StatelessCaller:
    """Calls that each open a fresh session to `endpoint`'s server and close it (a `ToolCaller`).

    An object, not a closure: it pickles with its endpoint (server, protocol found, the list's shared
    resources, which are made again where it lands).
    """

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint

    async def __call__(self, name: str, arguments: dict[str, Any], on_update: UpdateCallback | None) -> Any:
        async def work(session: Session) -> mcp_types.CallToolResult:
            return await session.call_tool(name, arguments, on_update)

        return await run_stateless(self.endpoint, work, tool_name=name)


def stateless_caller(endpoint: Endpoint) -> ToolCaller:
    """Calls that each open a fresh session to `endpoint`'s server and close it."""
    return StatelessCaller(endpoint)


class SchemaModel:
    """A tool's argument model, built from its `inputSchema` when first needed (and again where a pickled
    tool lands: the generated class itself does not travel)."""

    def __init__(self, schema: dict[str, Any], name: str) -> None:
        self.schema = schema
        self.name = name

    def __call__(self) -> type[BaseModel]:
        return schema_to_model(self.schema, name=self.name)


class MCPRun:
    """The `run` of an MCP tool: the server is called by the tool's own name with the wire arguments; the
    result is rendered and its ``structuredContent`` checked against the `outputSchema`."""

    def __init__(
        self,
        wire_name: str,
        call: ToolCaller,
        render: Callable[[Any], AgentToolResult],
        output_schema: dict[str, Any] | None,
    ) -> None:
        self.wire_name = wire_name
        self.call = call
        self.render = render
        self.output_schema = output_schema
        self.output_check = OutputCheck(wire_name, output_schema)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["output_check"]  # its compiled validator stays here; made again from the schema
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.output_check = OutputCheck(self.wire_name, self.output_schema)

    async def __call__(self, params: BaseModel, on_update: UpdateCallback | None) -> AgentToolResult:
        raw = await self.call(self.wire_name, to_arguments(params), on_update)
        return self.output_check.apply(raw, self.render(raw))


def build_tool(
    spec: Mapping[str, Any],
    call: ToolCaller,
    *,
    origin: str | None,
    name: str | None = None,
    render: Callable[[Any], AgentToolResult] = render_mcp_content,
    needs_approval: ApprovalPolicy = False,
) -> AgentTool:
    """The `AgentTool` for one tool definition; its model is built on first use, not here.

    `name` is the tool's name for the model (a prefixed one); the server is always called by its own.
    """
    wire_name: str = spec["name"]
    name = wire_name if name is None else name
    input_schema = spec.get("inputSchema")
    if not isinstance(input_schema, dict):
        input_schema = {"type": "object", "properties": {}}
    annotations = spec.get("annotations")
    output_schema = spec.get("outputSchema")
    output_schema = output_schema if isinstance(output_schema, dict) else None
    return AgentTool(
        name=name,
        description=spec.get("description") or "",
        parameters=SchemaModel(input_schema, wire_name),
        run=MCPRun(wire_name, call, render, output_schema),
        input_schema=input_schema,
        annotations=annotations if isinstance(annotations, Mapping) else None,
        output_schema=output_schema,
        needs_approval=needs_approval,
        origin=origin,
    )


def make_mcp_agent_tool(
    tool: mcp_types.Tool | Mapping[str, Any],
    server: StdioServer | HttpServer,
    *,
    timeout: float | None = 30.0,
    startup_timeout: float | None = SAME_AS_TIMEOUT,
    max_duration: float | None = DEFAULT_MAX_DURATION,
) -> AgentTool:
    """Wrap one MCP tool definition (as `tools/list` returns it) as an `AgentTool` calling `server`.

    Every `execute` opens a fresh session to `server`, calls the tool and closes the session. Use this when
    you already hold tool definitions; `load_mcp_tools` lists them for you. `timeout`, `startup_timeout`
    and `max_duration` mean what they mean for `load_mcp_tools`.
    """
    if getattr(server, "kind", None) not in ("stdio", "http"):
        kind = type(server).__name__
        raise UserError(f"make_mcp_agent_tool needs a StdioServer or an HttpServer, got {kind}")
    endpoint = Endpoint(server, Timeouts.from_options(timeout, startup_timeout, max_duration))
    return build_tool(tool_spec(tool), stateless_caller(endpoint), origin=server.describe())
