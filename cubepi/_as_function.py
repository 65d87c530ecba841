"""`AgentTool.as_function()`: a tool as a typed Python function, for every framework that takes one.

google-genai, smolagents, LlamaIndex, DSPy, the Anthropic tool runner, AutoGen and others derive a tool's
schema from a function's signature and docstring, and some check what they were given (a coroutine
function, a function `pydantic.validate_call` accepts, one with source). So the function is a real one,
generated (as `dataclasses` and `attrs` generate methods) with the tool's parameters as keyword-only
parameters, and bound to a small holder of the tool: a bound method pickles as its holder and its name,
and the holder keeps only the tool, so the function pickles whenever the tool does.

The generated function sees every parameter, passed or not; a parameter still holding its default object
was not passed, and is not sent (a value identical to the default, such as the default itself, means what
leaving it out means: the server's default applies).
"""

from __future__ import annotations

import functools
import itertools
import json
import keyword
import linecache
import operator
import types
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from .errors import ToolCallError, UserError

if TYPE_CHECKING:
    from .tools import AgentTool, AgentToolResult

__all__ = ["as_function"]

_HOLDER = "_cubepi_holder"  # the bound first parameter; MCP field names never start with "_"
_SERIAL = itertools.count()


def as_function(tool: AgentTool, *, sync: bool = False) -> Callable[..., Any]:
    """`tool` as a function typed by its model (see `AgentTool.as_function`)."""
    if tool.needs_approval is not False:
        raise UserError(
            f"tool {tool.name!r} needs approval, which a plain function cannot ask for; approve calls in "
            "your framework and pass tool.replace(needs_approval=False).as_function()"
        )
    return _Holder(tool, sync)._cubepi_function


class _Holder:
    """What the function is bound to: the tool and whether the function is sync; nothing else travels."""

    __slots__ = ("_cubepi_defaults", "_cubepi_function", "_cubepi_sync", "_cubepi_tool")

    def __init__(self, tool: AgentTool, sync: bool) -> None:
        self._cubepi_tool = tool
        self._cubepi_sync = sync
        function = _function(tool, sync)
        self._cubepi_defaults: dict[str, Any] = function.__kwdefaults__ or {}
        self._cubepi_function = types.MethodType(function, self)

    def __getattr__(self, name: str) -> Any:
        """Unpickling a bound method looks it up on its holder by the function's name."""
        if not name.startswith("_cubepi_") and name == self._cubepi_function.__name__:
            return self._cubepi_function
        raise AttributeError(name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Holder, (self._cubepi_tool, self._cubepi_sync))

    def __repr__(self) -> str:
        return f"<cubepi function of {self._cubepi_tool!r}>"

    def _cubepi_arguments(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The parameters that were passed, under their wire names, as given: nothing added or converted."""
        defaults = self._cubepi_defaults
        fields = self._cubepi_tool.parameters.model_fields
        out: dict[str, Any] = {}
        for name, value in values.items():
            if name == _HOLDER or (name in defaults and value is defaults[name]):
                continue
            alias = fields[name].alias
            out[alias or name] = value
        return out

    async def _cubepi_acall(self, values: Mapping[str, Any]) -> str:
        tool = self._cubepi_tool
        return _text(tool, await tool.execute(self._cubepi_arguments(values)))

    def _cubepi_call(self, values: Mapping[str, Any]) -> str:
        tool = self._cubepi_tool
        return _text(tool, tool.execute_sync(self._cubepi_arguments(values)))


def _function(tool: AgentTool, sync: bool) -> types.FunctionType:
    """The generated function: the tool's name, docstring, keyword-only parameters and annotations."""
    fields = tool.parameters.model_fields
    for name in fields:  # field names are identifiers already; checked, since they become source
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_cubepi_"):
            raise UserError(f"tool {tool.name!r} has a parameter {name!r} that cannot be a Python name")
    required = [name for name, field in fields.items() if field.is_required()]
    optional = [f"{name}=None" for name, field in fields.items() if not field.is_required()]
    parameters = ", ".join([_HOLDER, "/", *(["*"] if fields else []), *required, *optional])
    call = "await _cubepi_holder._cubepi_acall" if not sync else "_cubepi_holder._cubepi_call"
    source = f"{'' if sync else 'async '}def function({parameters}):\n    return {call}(_cubepi_locals())\n"
    filename = f"<cubepi function {tool.api_name} #{next(_SERIAL)}>"
    namespace: dict[str, Any] = {}
    scope = {"__name__": __name__, "_cubepi_locals": locals}  # a parameter may be named `locals`
    exec(compile(source, filename, "exec"), scope, namespace)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # for getsource
    function: types.FunctionType = namespace["function"]
    function.__name__ = function.__qualname__ = tool.api_name
    function.__doc__ = _docstring(tool)
    function.__kwdefaults__ = {
        name: _default(field) for name, field in fields.items() if not field.is_required()
    } or None
    function.__annotations__ = {name: _readable(field.annotation) for name, field in fields.items()}
    function.__annotations__["return"] = str
    return function


def _text(tool: AgentTool, result: AgentToolResult) -> str:
    """What a framework shows its model: the text, or the structured content as JSON; errors raise."""
    if result.is_error:
        raise ToolCallError(result.text or f"tool {tool.name!r} failed without a message", result=result)
    text = result.text
    if not text and "structuredContent" in result.details:
        return json.dumps(result.details["structuredContent"], ensure_ascii=False)
    return text


# -- signature and docstring -----------------------------------------------------------------------------


def _default(field: FieldInfo) -> Any:
    if field.default is not PydanticUndefined:
        return field.default
    try:
        return field.get_default(call_default_factory=True)
    except TypeError:  # a factory that needs the other fields' values
        return None


def _readable(annotation: Any) -> Any:
    """The annotation a person would write: validator wrappers (`Annotated[...]`) left out, unions as
    ``X | None``; nested models, `Literal`s, lists and dicts kept, their arguments made readable too."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _readable(typing.get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return _union([_readable(arg) for arg in typing.get_args(annotation)])
    if origin is Literal or origin is None:
        return annotation
    args = typing.get_args(annotation)
    if origin in (list, dict, set, frozenset, tuple) and args:
        try:
            return origin[tuple(_readable(arg) for arg in args)]
        except TypeError:  # pragma: no cover - an alias the origin cannot take again
            return annotation
    return annotation


def _union(options: list[Any]) -> Any:
    """``A | B``, with the `Literal`s merged into one and ``int | float`` read as JSON Schema's number."""
    literals = [option for option in options if typing.get_origin(option) is Literal]
    values = [value for literal in literals for value in typing.get_args(literal)]
    unique: list[Any] = [Literal[tuple(values)]] if values else []
    for option in options:
        if typing.get_origin(option) is not Literal and option not in unique:
            unique.append(option)
    if int in unique and float in unique:
        unique.remove(int)
    try:
        return functools.reduce(operator.or_, unique)
    except TypeError:
        return Union[tuple(unique)]  # noqa: UP007 - options that do not support `|`


def _docstring(tool: AgentTool) -> str:
    """The description, then a Google-style ``Args:`` section with one line per parameter."""
    lines = [(tool.description or tool.name).strip()]
    fields = tool.parameters.model_fields
    if fields:
        lines += ["", "Args:"]
        for name, field in fields.items():
            description = " ".join((field.description or "(no description)").split())
            lines.append(f"    {name}: {description}")
    return "\n".join(lines)
