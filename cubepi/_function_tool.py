"""Hand-written tools: a callable's signature and docstring as an argument model, and the call itself.

`FunctionTool(func)` reads what `@tool` needs (name, description, a Pydantic model of the parameters) and
calls the function with validated arguments. It knows nothing of `AgentTool`; `cubepi.tools` builds one.
"""

from __future__ import annotations

import functools
import inspect
import threading
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import pydantic
from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from .errors import UserError

__all__ = ["UPDATE_PARAMETER", "FunctionArguments", "FunctionTool", "parse_docstring"]

UPDATE_PARAMETER = "on_update"
"""The parameter that receives the progress callback instead of an argument from the model."""

Callback = Callable[[Any], "Awaitable[None] | None"]


class FunctionArguments(BaseModel):
    """Base of the argument models of hand-written tools.

    A function's signature is closed: an unknown key is refused (unless the function takes ``**kwargs``).
    A null the schema does not allow for an optional parameter (OpenAI strict mode's "omitted") is dropped
    before validation, here and in nested models, so the parameter gets its default.
    """

    model_config = ConfigDict(extra="forbid", protected_namespaces=(), populate_by_name=False)

    __cubepi_schema__: ClassVar[dict[str, Any] | None] = None
    __cubepi_reserved__: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _cubepi_prepare(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        taken = sorted(cls.__cubepi_reserved__.intersection(data))
        if taken:
            raise PydanticCustomError(
                "unknown_argument",
                "not arguments of this tool: {names}",
                {"names": ", ".join(repr(name) for name in taken)},
            )
        from .schema._arguments import drop_disallowed_nulls

        schema = cls.__dict__.get("__cubepi_schema__")
        if schema is None:
            schema = cls.__cubepi_schema__ = cls.model_json_schema()
        return drop_disallowed_nulls(data, schema, schema)


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """A docstring's description and its per-parameter descriptions (Google, reST, numpydoc or epydoc)."""
    if not doc or not doc.strip():
        return "", {}
    import docstring_parser

    try:
        parsed = docstring_parser.parse(doc)
    except docstring_parser.ParseError:
        return inspect.cleandoc(doc), {}
    parts = [text for text in (parsed.short_description, parsed.long_description) if text]
    summary = ("\n\n" if parsed.blank_after_short_description else "\n").join(parts)
    params = {
        param.arg_name.lstrip("*"): " ".join(param.description.split())
        for param in parsed.params
        if param.description
    }
    return summary.strip(), params


@dataclass(frozen=True)
class _Slot:
    """One parameter of the signature: where its value comes from and how it is passed."""

    name: str
    field: str | None  # the model field, or None for the progress callback
    positional: bool


class FunctionTool:
    """A callable read as a tool: `name`, `description`, `origin`, the argument `model`, and `call`.

    Functions, methods, `functools.partial` objects (keyword arguments they bind leave the schema and
    cannot be sent) and callable objects are accepted; anything the model could not call is refused with
    `UserError` here, so no argument a model sends can make `call` fail before the function runs.
    """

    def __init__(self, func: Callable[..., Any]) -> None:
        from .schema._names import class_name, field_names  # the schema bridge loads on first use

        target, bound, label = _unwrap(func)
        self.func = func
        self.name = _default_name(func, target)
        self.origin = label
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError) as exc:
            raise UserError(f"@tool cannot read the signature of {label}: {exc}") from exc
        try:
            hints = typing.get_type_hints(target, include_extras=True)
        except Exception as exc:
            raise UserError(f"cannot read the type hints of {label}: {exc}") from exc
        self.description, arg_docs = parse_docstring(_doc(func, target))
        self.is_async = any(inspect.iscoroutinefunction(f) for f in (func, target, inspect.unwrap(target)))

        params = [p for p in signature.parameters.values() if p.name not in bound]
        names = field_names(
            [p.name for p in params if p.name != UPDATE_PARAMETER and p.kind not in _VARIADIC]
        )
        fields: dict[str, Any] = {}
        slots: list[_Slot] = []
        extra: Any = None
        for param in params:
            positional = param.kind is param.POSITIONAL_ONLY
            if param.name == UPDATE_PARAMETER:
                slots.append(_Slot(param.name, None, positional))
            elif param.kind is param.VAR_POSITIONAL:
                raise UserError(
                    f"@tool cannot expose *{param.name} of {label}: a model sends named arguments; "
                    "take a list parameter instead"
                )
            elif param.kind is param.VAR_KEYWORD:
                extra = hints.get(param.name, Any)
            else:
                field = names[param.name]
                fields[field] = _field(param, hints.get(param.name, Any), arg_docs.get(param.name), field)
                slots.append(_Slot(param.name, field, positional))
        self.slots = tuple(slots)
        reserved = frozenset(bound | {UPDATE_PARAMETER})
        self.model = _model(class_name(self.name), fields, extra, reserved, label)

    def __reduce__(self) -> tuple[Any, ...]:
        """Travels as its callable; the model is built again from it where it lands."""
        return FunctionTool, (self.func,)

    async def call(self, params: BaseModel, on_update: Callback | None) -> object:
        """Call the function with validated `params`; `on_update` is shaped for the function's kind."""
        threaded = None if self.is_async else _ThreadUpdates(on_update)
        updates: Any = _async_updates(on_update) if threaded is None else threaded
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for slot in self.slots:
            value = updates if slot.field is None else getattr(params, slot.field)
            if slot.positional:
                args.append(value)
            else:
                kwargs[slot.name] = value
        kwargs.update(params.__pydantic_extra__ or {})
        if threaded is None:
            value = self.func(*args, **kwargs)
        else:
            try:
                value = await anyio.to_thread.run_sync(functools.partial(self.func, *args, **kwargs))
            finally:
                threaded.close()
        if inspect.isawaitable(value):  # an async function, or a sync wrapper returning a coroutine
            value = await value
        return value


_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _unwrap(func: Callable[..., Any]) -> tuple[Callable[..., Any], set[str], str]:
    """The routine whose hints and docstring describe `func`, the keywords partials bind, and a label."""
    if inspect.isclass(func):
        raise UserError(
            f"@tool needs a function, not the class {func.__qualname__}; decorate a function or method"
        )
    if not callable(func):
        raise UserError(f"@tool needs a callable, got {type(func).__name__}: {func!r}")
    bound: set[str] = set()
    target: Any = func
    partial = False
    while isinstance(target, functools.partial):
        partial = True
        bound.update(target.keywords)
        target = target.func
    if not inspect.isroutine(target):
        if inspect.isclass(target):
            raise UserError(f"@tool needs a function, not a partial of the class {target.__qualname__}")
        owner = type(target)
        label = f"{owner.__module__}.{owner.__qualname__} instance"
        target = target.__call__
    else:
        label = f"{getattr(target, '__module__', None) or '?'}.{getattr(target, '__qualname__', '?')}"
    return target, bound, f"functools.partial({label})" if partial else label


def _default_name(func: Callable[..., Any], target: Callable[..., Any]) -> str:
    inner: Any = func
    while isinstance(inner, functools.partial):
        inner = inner.func
    if not inspect.isroutine(inner):
        return type(inner).__name__
    return str(getattr(target, "__name__", "") or "tool")


def _doc(func: Callable[..., Any], target: Callable[..., Any]) -> str | None:
    inner: Any = func
    while isinstance(inner, functools.partial):
        inner = inner.func
    doc = getattr(target, "__doc__", None)
    if not doc and not inspect.isroutine(inner):
        doc = type(inner).__doc__
    return doc if isinstance(doc, str) else None


def _field(param: inspect.Parameter, annotation: Any, doc: str | None, field: str) -> tuple[Any, Any]:
    """The (annotation, default) pair for `create_model`.

    A `Field(...)` default is kept whole (its default, constraints and required-ness); the docstring's
    description goes in front of every other metadata, so an explicit ``description=`` wins over it.
    """
    default = param.default
    front: dict[str, Any] = {}
    if doc:
        front["description"] = doc
    if field != param.name and not _has_alias(annotation, default):
        front["alias"] = param.name
    if front:
        if typing.get_origin(annotation) is Annotated:
            parts = (annotation.__origin__, pydantic.Field(**front), *annotation.__metadata__)
            annotation = Annotated[parts]  # the same as Annotated[origin, front, *metadata]
        else:
            annotation = Annotated[annotation, pydantic.Field(**front)]
    if default is param.empty:
        return annotation, ...
    return annotation, default


def _has_alias(annotation: Any, default: Any) -> bool:
    infos = [default] if isinstance(default, FieldInfo) else []
    if typing.get_origin(annotation) is Annotated:
        infos += [m for m in annotation.__metadata__ if isinstance(m, FieldInfo)]
    return any(info.alias is not None or info.validation_alias is not None for info in infos)


def _model(
    name: str, fields: dict[str, Any], extra: Any, reserved: frozenset[str], label: str
) -> type[BaseModel]:
    base: type[FunctionArguments] = FunctionArguments
    if extra is not None:
        namespace: dict[str, Any] = {"model_config": ConfigDict(extra="allow")}
        if extra is not Any:
            namespace["__annotations__"] = {"__pydantic_extra__": dict[str, extra]}
        base = type(f"{name}Base", (FunctionArguments,), namespace)
    try:
        model = pydantic.create_model(name, __base__=base, **fields)
        model.__cubepi_reserved__ = reserved if extra is not None else frozenset()
        model.__cubepi_schema__ = model.model_json_schema()
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError, TypeError, NameError) as exc:
        raise UserError(f"@tool cannot turn the parameters of {label} into a schema: {exc}") from exc
    return model


def _async_updates(callback: Callback | None) -> Callable[[Any], Awaitable[None]]:
    """The caller's callback as an awaitable one (a no-op when nobody listens)."""

    async def on_update(update: Any) -> None:
        if callback is not None:
            result = callback(update)
            if inspect.isawaitable(result):
                await result

    return on_update


class _ThreadUpdates:
    """The caller's callback as a plain one, callable from any thread; it runs in the event loop.

    Updates sent after the call returned (by a thread that outlived it) are dropped.
    """

    def __init__(self, callback: Callback | None) -> None:
        self._callback = callback
        self._open = callback is not None
        self._token = anyio.lowlevel.current_token() if callback is not None else None
        self._loop_thread = threading.get_ident()

    def __call__(self, update: Any) -> None:
        if not self._open:
            return
        if threading.get_ident() == self._loop_thread:
            assert self._callback is not None
            result = self._callback(update)
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()
                raise UserError(
                    "a sync tool called on_update from the event loop's thread, where it cannot wait for "
                    "an async callback; call it from the tool's own thread"
                )
            return
        anyio.from_thread.run(self._deliver, update, token=self._token)

    async def _deliver(self, update: Any) -> None:
        if self._open and self._callback is not None:
            result = self._callback(update)
            if inspect.isawaitable(result):
                await result

    def close(self) -> None:
        self._open = False
