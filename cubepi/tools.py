"""Typed tools: `AgentTool`, its result and content blocks, `@tool` for hand-written tools, and exporters.

MCP tools and hand-written tools are the same type, so `my_tools + mcp_tools` is an ordinary list.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import re
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeGuard, cast, overload

import pydantic
import pydantic_core
from pydantic import BaseModel

from ._calling import run_in_a_loop_of_its_own
from ._function_tool import FunctionTool
from .errors import UserError

if TYPE_CHECKING:
    from agents import FunctionTool as OpenAIAgentsTool
    from langchain_core.tools import StructuredTool
    from pydantic_ai import Tool as PydanticAITool

    from .frameworks.openai_agents import ContextUpdateCallback

__all__ = [
    "AgentTool",
    "AgentToolResult",
    "Content",
    "ImageContent",
    "TextContent",
    "ToolUpdate",
    "UpdateCallback",
    "api_name",
    "ensure_unique_names",
    "find_tool",
    "format_validation_error",
    "tool",
]


@dataclass(frozen=True)
class TextContent:
    """A block of text for the model."""

    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True)
class ImageContent:
    """An image for the model: base64 `data` and its `mime_type` (for example ``image/png``)."""

    data: str
    mime_type: str
    type: Literal["image"] = "image"

    @classmethod
    def from_bytes(cls, raw: bytes, mime_type: str) -> ImageContent:
        """Build an image block from raw bytes."""
        return cls(data=base64.b64encode(raw).decode("ascii"), mime_type=mime_type)

    def __repr__(self) -> str:
        return f"ImageContent(mime_type={self.mime_type!r}, data=<{len(self.data)} base64 chars>)"


Content: TypeAlias = TextContent | ImageContent


@dataclass
class AgentToolResult:
    """What a tool call returns.

    `content` is what the model sees; `details` is for the program (for MCP tools it holds
    ``structuredContent`` when the server sent it) and is never shown to the model; `is_error` is True when
    the tool reported a failure the model should read.
    """

    content: list[Content] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    is_error: bool = False

    @property
    def text(self) -> str:
        """The text blocks joined by newlines (images left out)."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextContent))

    @classmethod
    def error(cls, message: str, **details: Any) -> AgentToolResult:
        """An error result with one text block."""
        return cls(content=[TextContent(message)], details=dict(details), is_error=True)


@dataclass(frozen=True)
class ToolUpdate:
    """A progress update sent while a tool runs (MCP progress notifications become these)."""

    progress: float | None = None
    total: float | None = None
    message: str | None = None


UpdateCallback: TypeAlias = Callable[[ToolUpdate], "Awaitable[None] | None"]
ToolRunner: TypeAlias = Callable[[BaseModel, "UpdateCallback | None"], Awaitable[AgentToolResult]]
ApprovalPolicy: TypeAlias = bool | Callable[[BaseModel], bool]
ModelFactory: TypeAlias = Callable[[], type[BaseModel]]


def _is_model_class(value: object) -> TypeGuard[type[BaseModel]]:
    return isinstance(value, type) and issubclass(value, BaseModel)


class AgentTool:
    """A tool a model can call: a name, a description, a Pydantic model of its arguments, and `execute`.

    `parameters` may be given as a model class or as a zero-argument factory; a factory is called once, on
    first use, so a large catalog loads without building models nobody needs.
    """

    def __init__(
        self,
        *,
        name: str,
        description: str,
        parameters: type[BaseModel] | ModelFactory,
        run: ToolRunner,
        input_schema: dict[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        needs_approval: ApprovalPolicy = False,
        origin: str | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise UserError(f"a tool needs a non-empty name, got {name!r}")
        self.name = name
        self.description = description
        self.input_schema = input_schema
        self.annotations = dict(annotations) if annotations is not None else None
        self.output_schema = output_schema
        self.needs_approval = needs_approval
        self.origin = origin
        self._run = run
        self._parameters: type[BaseModel] | None = None
        self._factory: ModelFactory | None = None
        self._lock = threading.Lock()
        if _is_model_class(parameters):
            self._parameters = parameters
        elif callable(parameters):
            self._factory = cast(ModelFactory, parameters)
        else:
            raise UserError(f"parameters of tool {name!r} must be a pydantic model class or a factory")

    @property
    def parameters(self) -> type[BaseModel]:
        """The Pydantic model that validates this tool's arguments (built on first access)."""
        if self._parameters is None:
            with self._lock:
                if self._parameters is None:
                    assert self._factory is not None
                    self._parameters = self._factory()
        return self._parameters

    def __repr__(self) -> str:
        origin = f", origin={self.origin!r}" if self.origin else ""
        return f"AgentTool(name={self.name!r}{origin})"

    # -- travelling to other processes (pickle, cloudpickle) ---------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        """What travels: no lock, and no model a factory built (the factory builds it again there)."""
        state = self.__dict__.copy()
        del state["_lock"]
        if state["_factory"] is not None:
            state["_parameters"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __reduce_ex__(self, protocol: Any) -> Any:
        """A ``@tool`` defined at module level travels as a reference to it, as functions do."""
        if isinstance(self._run, _FunctionRun):
            found = _decorated(self._run.function.func)
            if found is not None and found[1] is self:
                return _import_global, found[0]
        return super().__reduce_ex__(protocol)

    def replace(self, **changes: Any) -> AgentTool:
        """A copy with some attributes changed (``name``, ``description``, ``needs_approval``, ...)."""
        kwargs: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": self._factory if self._factory is not None else self._parameters,
            "run": self._run,
            "input_schema": self.input_schema,
            "annotations": self.annotations,
            "output_schema": self.output_schema,
            "needs_approval": self.needs_approval,
            "origin": self.origin,
        }
        unknown = set(changes) - set(kwargs)
        if unknown:
            raise UserError(f"AgentTool has no attribute(s) {sorted(unknown)}")
        kwargs.update(changes)
        copy = AgentTool(**kwargs)
        if "parameters" not in changes and copy._factory is not None:
            copy._parameters = self._parameters  # the model built already (the factory still travels)
        return copy

    # -- calling -----------------------------------------------------------------------------------------

    def validate(self, params: BaseModel | Mapping[str, Any]) -> BaseModel:
        """Validate arguments into an instance of `parameters`; raises `pydantic.ValidationError`."""
        model = self.parameters
        if isinstance(params, model):
            return params
        if isinstance(params, BaseModel):
            params = params.model_dump(mode="json", by_alias=True, exclude_unset=True)
        if not isinstance(params, Mapping):
            raise pydantic.ValidationError.from_exception_data(
                model.__name__,
                [{"type": "model_type", "loc": (), "input": params, "ctx": {"class_name": model.__name__}}],
            )
        return model.model_validate(dict(params))

    def requires_approval(self, params: BaseModel) -> bool:
        """Whether this call needs approval under the tool's `needs_approval` policy."""
        policy = self.needs_approval
        return bool(policy(params)) if callable(policy) else bool(policy)

    async def execute(
        self, params: BaseModel | Mapping[str, Any], *, on_update: UpdateCallback | None = None
    ) -> AgentToolResult:
        """Validate `params` and run the tool.

        Arguments that fail validation never reach the tool: they come back as an error result the model
        can read. Failures of the tool's machinery (for MCP tools, the transport) raise.
        """
        try:
            validated = self.validate(params)
        except pydantic.ValidationError as exc:
            return AgentToolResult.error(
                format_validation_error(self.name, exc, params),
                validation_errors=exc.errors(include_url=False, include_context=False, include_input=False),
            )
        return await self._run(validated, on_update)

    def execute_sync(
        self, params: BaseModel | Mapping[str, Any], *, on_update: UpdateCallback | None = None
    ) -> AgentToolResult:
        """`execute` for scripts and notebooks: works with no running loop and from inside one."""
        return run_in_a_loop_of_its_own(self.execute, params, on_update=on_update)

    # -- exporting ---------------------------------------------------------------------------------------

    def as_function(self, *, sync: bool = False) -> Callable[..., Any]:
        """This tool as a typed Python function, for frameworks that take one (see docs/frameworks.md).

        An ``async def`` (a plain function with ``sync=True``) named `api_name`, documented by the
        description and an ``Args:`` section, with keyword-only parameters typed by `parameters`. A call
        sends exactly the arguments given and returns the result's text; a failed call raises
        `ToolCallError` carrying the text the model should read. It pickles whenever the tool does.
        """
        from ._as_function import as_function

        return as_function(self, sync=sync)

    @property
    def api_name(self) -> str:
        """The name sent to LLM APIs: `name` if it matches ``^[a-zA-Z0-9_-]{1,64}$``, else a safe rewrite.

        Dots, slashes and spaces become ``_``; a name over 64 characters is cut and stamped with a hash of
        the whole, so two long names stay apart. Map a model's tool call back with `find_tool`.
        """
        return api_name(self.name)

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments, as an LLM should see it."""
        from .schema import normalize_schema

        if self.input_schema is not None:
            return normalize_schema(self.input_schema)
        return self.parameters.model_json_schema()

    def to_anthropic(self) -> dict[str, Any]:
        """This tool as an Anthropic Messages API tool definition."""
        from .schema import provider_schema

        return {
            "name": self.api_name,
            "description": self.description,
            "input_schema": provider_schema(self.json_schema(), "anthropic"),
        }

    def to_openai(self, *, strict: bool = False) -> dict[str, Any]:
        """This tool as an OpenAI Chat Completions function tool; `strict=True` gives a strict-mode schema."""
        from .schema import provider_schema

        schema = provider_schema(self.json_schema(), "openai-strict" if strict else "openai")
        function: dict[str, Any] = {
            "name": self.api_name,
            "description": self.description,
            "parameters": schema,
        }
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}

    def to_gemini(self) -> dict[str, Any]:
        """This tool as a Gemini function declaration (no ``parameters`` for a tool without arguments)."""
        from .schema import provider_schema

        declaration: dict[str, Any] = {"name": self.api_name, "description": self.description}
        parameters = provider_schema(self.json_schema(), "gemini")
        if parameters.get("properties"):
            declaration["parameters"] = parameters
        return declaration

    def to_langchain(self) -> StructuredTool:
        """This tool as a LangChain `StructuredTool` (extra ``langchain``; see docs/frameworks.md)."""
        from .frameworks.langchain import to_langchain

        return to_langchain(self)

    def to_pydantic_ai(self) -> PydanticAITool[Any]:
        """This tool as a `pydantic_ai.Tool` (extra ``pydantic-ai``; see docs/frameworks.md)."""
        from .frameworks.pydantic_ai import to_pydantic_ai

        return to_pydantic_ai(self)

    def to_openai_agents(self, *, on_update: ContextUpdateCallback | None = None) -> OpenAIAgentsTool:
        """This tool as an OpenAI Agents `FunctionTool` (extra ``openai-agents``; see docs/frameworks.md);
        `on_update(ctx, update)` receives the progress of each call, with the SDK's `ToolContext`."""
        from .frameworks.openai_agents import to_openai_agents

        return to_openai_agents(self, on_update=on_update)


_API_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_API_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def api_name(name: str) -> str:
    """Rewrite a tool name into the ``^[a-zA-Z0-9_-]{1,64}$`` form LLM APIs require (identity if it fits)."""
    if _API_NAME.match(name):
        return name
    safe = _API_UNSAFE.sub("_", name) or "tool"
    if len(safe) > 64:
        safe = safe[:55] + "_" + hashlib.sha256(name.encode()).hexdigest()[:8]
    return safe


def ensure_unique_names(tools: Iterable[AgentTool]) -> None:
    """Raise `UserError` when two tools share a name, or a name sent to LLM APIs, naming both origins."""
    seen: dict[str, AgentTool] = {}
    seen_api: dict[str, AgentTool] = {}
    for item in tools:
        first = seen.setdefault(item.name, item)
        if first is not item:
            raise UserError(
                f"two tools are named {item.name!r}: one from {_origin(first)}, one from {_origin(item)}; "
                "rename one (for MCP tools, use prefix=...)"
            )
        first = seen_api.setdefault(item.api_name, item)
        if first is not item:
            raise UserError(
                f"tools {first.name!r} (from {_origin(first)}) and {item.name!r} (from {_origin(item)}) both "
                f"become {item.api_name!r} for LLM APIs, which need ^[a-zA-Z0-9_-]{{1,64}}$; "
                "rename one"
            )


def find_tool(tools: Iterable[AgentTool], name: str) -> AgentTool | None:
    """The tool a model meant by `name`: matched on the real name first, then on `api_name`."""
    candidates = list(tools)
    for item in candidates:
        if item.name == name:
            return item
    for item in candidates:
        if item.api_name == name:
            return item
    return None


def _origin(item: AgentTool) -> str:
    return item.origin or "an unnamed origin"


def format_validation_error(tool_name: str, exc: pydantic.ValidationError, arguments: object = None) -> str:
    """A short, model-readable account of why arguments were refused (inputs are not echoed).

    Given the `arguments` that were refused, each path keeps only the keys and indexes of those arguments
    (and a missing key at its end), so the labels Pydantic gives the alternatives of a union stay out.
    """
    lines = [f"Invalid arguments for tool {tool_name!r}:"]
    for err in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in _readable_loc(err["loc"], arguments)) or "(arguments)"
        message = _MESSAGES.get(err["type"], err["msg"])
        line = f"- {where}: {message}"
        if line not in lines:
            lines.append(line)
    return "\n".join(lines)


_MESSAGES = {  # Pydantic's wording where it names Python classes or says nothing useful to a model
    "extra_forbidden": "unknown key: not in this tool's schema (check the spelling)",
    "model_type": "Input should be an object",
    "model_attributes_type": "Input should be an object",
}


def _readable_loc(loc: tuple[int | str, ...], arguments: object) -> tuple[int | str, ...]:
    if not isinstance(arguments, Mapping):
        return loc
    kept: list[int | str] = []
    node: object = arguments
    for index, part in enumerate(loc):
        inside = (isinstance(node, Mapping) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        )
        if inside:
            node = node[part]  # type: ignore[index]
        elif not (index == len(loc) - 1 and isinstance(node, Mapping)):
            continue  # the label of a union's alternative, not a place in the arguments
        kept.append(part)
    return tuple(kept)


# -- results of hand-written tools -----------------------------------------------------------------------


def to_result(value: object) -> AgentToolResult:
    """Turn what a hand-written tool returned into an `AgentToolResult`.

    Other values are shown to the model as JSON (NaN and infinities as the strings ``"NaN"``,
    ``"Infinity"``, ``"-Infinity"``) and kept in ``details["value"]``; a value with no JSON form is an
    error result the model can read (the value itself stays in ``details["value"]``).
    """
    if isinstance(value, AgentToolResult):
        return value
    if isinstance(value, (TextContent, ImageContent)):
        return AgentToolResult(content=[value])
    if isinstance(value, str):
        return AgentToolResult(content=[TextContent(value)])
    if value is None:
        return AgentToolResult(content=[])
    if (
        isinstance(value, Sequence)
        and value
        and all(isinstance(item, (TextContent, ImageContent)) for item in value)
    ):
        return AgentToolResult(content=list(value))
    try:
        jsonable = json.loads(pydantic_core.to_json(value, inf_nan_mode="strings"))
    except (pydantic_core.PydanticSerializationError, ValueError) as exc:
        return AgentToolResult.error(
            f"The tool returned a {type(value).__name__}, which has no JSON form to show: {exc}",
            value=value,
        )
    return AgentToolResult(
        content=[TextContent(json.dumps(jsonable, ensure_ascii=False))], details={"value": jsonable}
    )


# -- @tool -----------------------------------------------------------------------------------------------


class _FunctionRun:
    """The `run` of a hand-written tool: an object rather than a closure, so that the tool pickles."""

    def __init__(self, function: FunctionTool) -> None:
        self.function = function

    def model(self) -> type[BaseModel]:
        return self.function.model

    async def __call__(self, params: BaseModel, on_update: UpdateCallback | None) -> AgentToolResult:
        return to_result(await self.function.call(params, on_update))

    def __reduce__(self) -> tuple[Any, ...]:
        # A decorated function's module attribute is its tool: reach the function through it.
        found = _decorated(self.function.func)
        if found is not None:
            return _run_of_global, found[0]
        return _FunctionRun, (self.function,)


def _decorated(func: Callable[..., Any]) -> tuple[tuple[str, str], AgentTool] | None:
    """Where ``@tool`` left the tool made of `func` at module level: (module, qualified name) and the tool.
    None in ``__main__`` (cloudpickle sends what it holds by value; so does this)."""
    module = getattr(func, "__module__", None)
    qualname = getattr(func, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or module == "__main__":
        return None
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if isinstance(found, AgentTool):
        run = found._run
        if isinstance(run, _FunctionRun) and run.function.func is func:
            return (module, qualname), found
    return None


def _import_global(module: str, qualname: str) -> Any:
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def _run_of_global(module: str, qualname: str) -> Any:
    return _import_global(module, qualname)._run


def _build_tool(
    func: Callable[..., Any],
    name: str | None,
    description: str | None,
    needs_approval: ApprovalPolicy,
) -> AgentTool:
    run = _FunctionRun(FunctionTool(func))
    return AgentTool(
        name=name or run.function.name,
        description=description if description is not None else run.function.description,
        parameters=run.model,
        run=run,
        needs_approval=needs_approval,
        origin=f"@tool {run.function.origin}",
    )


@overload
def tool(
    *, name: str | None = None, description: str | None = None, needs_approval: ApprovalPolicy = False
) -> Callable[[Callable[..., Any]], AgentTool]: ...


@overload
def tool(
    func: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: ApprovalPolicy = False,
) -> AgentTool: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: ApprovalPolicy = False,
) -> AgentTool | Callable[[Callable[..., Any]], AgentTool]:
    """Turn a typed callable (a sync or async function, a method, a `functools.partial`, a callable
    object) into an `AgentTool`.

    Parameters come from the signature (``Annotated[int, Field(ge=0)]`` and ``= Field(...)`` work), their
    descriptions from the docstring (Google ``Args:``, reST ``:param x:`` or numpydoc), the tool's
    description from the docstring's text. Arguments are a closed object: unknown keys are refused unless
    the function takes ``**kwargs``. A parameter named ``on_update`` receives the progress callback, shaped
    for the function (awaitable in async functions, plain and callable from any thread in sync ones). Sync
    functions run in a worker thread. The return value may be a `str`, content blocks, an
    `AgentToolResult`, or anything JSON-able. What cannot be a tool raises `UserError` here.
    """
    if func is not None:
        return _build_tool(func, name, description, needs_approval)

    def decorate(inner: Callable[..., Any]) -> AgentTool:
        return _build_tool(inner, name, description, needs_approval)

    return decorate
