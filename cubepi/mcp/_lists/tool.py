"""A tool as data: how an MCP tool definition becomes an `AgentTool`, and what its `run` does.

An MCP tool is an `AgentTool` whose `run` is an `MCPRun`: the tool's name on the wire, the list's
`Policies`, and the list's runner (`_calls.runner`). `MCPRun` applies the policies in one place (the
concurrency limit, retries, rendering, the output check) and hands the request to the runner.

A call of a 2026-07-28 Streamable HTTP tool is these frames: `AgentTool.execute`, `MCPRun.__call__`,
`Stateless._one_request`, `_calls.session.call_tool`, then the SDK's `ClientSession.send_request`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import anyio
from pydantic import BaseModel

from ...errors import MCPError, MCPTimeoutError, UserError
from ...schema import schema_to_model, to_arguments
from ...tools import AgentTool, AgentToolResult, UpdateCallback
from .._calls.limits import DEFAULT_MAX_DURATION, SAME_AS_TIMEOUT, Timeouts
from .._calls.runner import Runner, Stateless
from .._calls.session import call_tool
from .._context import current_call_context
from .hidden_arguments import hidden_values, hide, refuse_hidden
from .output_schema import OutputCheck

if TYPE_CHECKING:
    from mcp import types as mcp_types

    from .._configs import HttpConfig, StdioConfig
    from .policies import Policies

__all__ = ["MCPRun", "SchemaModel", "build_tool", "make_mcp_agent_tool", "tool_spec"]

T = TypeVar("T")
logger = logging.getLogger("cubepi.mcp")
Work: TypeAlias = Callable[..., Awaitable[Any]]  # (session, *args) -> outcome
# Pause before retry n (1-based): RETRY_BACKOFF * 2**(n-1), at most RETRY_BACKOFF_MAX seconds.
RETRY_BACKOFF = 0.1
RETRY_BACKOFF_MAX = 2.0


class MCPRun:
    """The `run` of an MCP tool: the server is called by the tool's own name with the wire arguments,
    under the list's policies; the result is rendered and its ``structuredContent`` checked against
    the `outputSchema`."""

    def __init__(
        self,
        wire_name: str,
        runner: Runner,
        policies: Policies,
        retries: int = 0,
        output_schema: dict[str, Any] | None = None,
        hidden: frozenset[str] = frozenset(),
    ) -> None:
        self.wire_name = wire_name
        self.hidden = hidden  # the tool's parameters bound by `hidden_arguments`
        self.runner = runner
        self.policies = policies
        self.retries = retries
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
        arguments = to_arguments(params)
        context = current_call_context()
        if self.hidden:
            refused = refuse_hidden(self.wire_name, self.hidden, arguments)
            if refused is not None:
                return refused
            hidden = self.policies.hidden_arguments or {}
            arguments.update(await hidden_values(hidden, self.hidden, context, self.wire_name))
        meta = context.meta or None
        limiter = self.runner.limiter()
        if limiter is not None:
            try:  # a free slot is taken without a trip through the event loop
                limiter.acquire_nowait()
            except anyio.WouldBlock:
                await limiter.acquire()
        try:
            if self.retries:
                raw = await self._retrying(arguments, on_update, meta)
            else:
                raw = await self.runner.request(
                    call_tool, self.wire_name, arguments, on_update, meta, tool_name=self.wire_name
                )
        finally:
            if limiter is not None:
                limiter.release()
        return self.output_check.apply(raw, self.policies.render(raw))

    async def _retrying(
        self, arguments: dict[str, Any], on_update: UpdateCallback | None, meta: Mapping[str, Any] | None
    ) -> Any:
        """The call, sent again up to `retries` times after a transport failure (never after the call's
        own timeout: a slow tool would double the wait)."""
        name = self.wire_name
        for attempt in range(self.retries + 1):
            try:
                return await self.runner.request(call_tool, name, arguments, on_update, meta, tool_name=name)
            except MCPError as exc:
                if attempt == self.retries or (isinstance(exc, MCPTimeoutError) and exc.phase == "call"):
                    raise
                logger.info(
                    "retrying tool %r (retry %d of %d) after: %s", name, attempt + 1, self.retries, exc
                )
            await anyio.sleep(min(RETRY_BACKOFF * 2**attempt, RETRY_BACKOFF_MAX))
        raise AssertionError("unreachable")  # pragma: no cover


def tool_spec(tool: Any) -> dict[str, Any]:
    """An MCP tool definition (SDK `Tool` or its JSON dict) as a plain dict with its wire keys."""
    if isinstance(tool, Mapping):
        spec = dict(tool)
    elif callable(getattr(tool, "model_dump", None)):
        spec = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    else:
        raise UserError(
            f"expected an MCP tool definition (mcp.types.Tool or dict), got {type(tool).__name__}"
        )
    if not isinstance(spec.get("name"), str) or not spec["name"]:
        raise UserError("an MCP tool definition needs a non-empty 'name'")
    return spec


class SchemaModel:
    """A tool's argument model, built from its `inputSchema` when first needed (and again where a pickled
    tool lands: the generated class itself does not travel)."""

    def __init__(self, schema: dict[str, Any], name: str) -> None:
        self.schema = schema
        self.name = name

    def __call__(self) -> type[BaseModel]:
        return schema_to_model(self.schema, name=self.name)


def build_tool(
    spec: Mapping[str, Any], runner: Runner, policies: Policies, *, name: str | None = None
) -> AgentTool:
    """The `AgentTool` for one tool definition; its model is built on first use, not here.

    `name` is the tool's name for the model (a prefixed one); the server is always called by its own.
    """
    wire_name: str = spec["name"]
    input_schema = spec.get("inputSchema")
    if not isinstance(input_schema, dict):
        input_schema = {"type": "object", "properties": {}}
    input_schema, hidden = hide(input_schema, policies.hidden_arguments)
    annotations = spec.get("annotations")
    annotations = annotations if isinstance(annotations, Mapping) else None
    output_schema = spec.get("outputSchema")
    output_schema = output_schema if isinstance(output_schema, dict) else None
    return AgentTool(
        name=wire_name if name is None else name,
        description=spec.get("description") or "",
        parameters=SchemaModel(input_schema, wire_name),
        run=MCPRun(
            wire_name, runner, policies, policies.retry_count(wire_name, annotations), output_schema, hidden
        ),
        input_schema=input_schema,
        annotations=annotations,
        output_schema=output_schema,
        needs_approval=policies.approval(annotations),
        origin=runner.describe(),
    )


def make_mcp_agent_tool(
    tool: mcp_types.Tool | Mapping[str, Any],
    server: StdioConfig | HttpConfig,
    *,
    timeout: float | None = 30.0,
    startup_timeout: float | None = SAME_AS_TIMEOUT,
    max_duration: float | None = DEFAULT_MAX_DURATION,
) -> AgentTool:
    """Wrap one MCP tool definition (as ``tools/list`` returns it) as an `AgentTool` calling `server`.

    Every `execute` opens a fresh session to `server`, calls the tool and closes the session (a call
    returns once it has closed: with no list, nothing else would wait for it); the first finds the
    server's protocol (and an ``"auto"`` server's transport), and later calls reuse what it found. Use
    this when you already hold tool definitions; `load_mcp_tools` lists them for you. `timeout`,
    `startup_timeout` and `max_duration` mean what they mean for `load_mcp_tools`.
    """
    from .policies import Policies

    if getattr(server, "kind", None) not in ("stdio", "http"):
        raise UserError(
            f"make_mcp_agent_tool needs a StdioServer or an HttpServer, got {type(server).__name__}"
        )
    runner = Stateless(server, Timeouts.from_options(timeout, startup_timeout, max_duration), owned=False)
    return build_tool(tool_spec(tool), runner, Policies(max_concurrency=None))
