"""Build a Pydantic model from a normalised JSON Schema with `pydantic.create_model`.

The model's types carry the shape (nested objects become nested models, `enum`/`const` become `Literal`,
type lists and `anyOf`/`oneOf` become unions, `format` stays `str`), with no lax coercion: ``"1"`` is not
an integer, ``True`` is not a number, 1.0 is an integer (as in JSON Schema). What types cannot express
exactly becomes `Any` there, and the root model then checks the wire arguments against the server's
schema with the one JSON Schema validator (`_validator`), so the model accepts exactly what the schema
accepts. `model_json_schema()` returns the (normalised) server schema itself, so every description,
default, constraint and unmodelled keyword reaches the LLM unchanged.
"""

from __future__ import annotations

import copy
import json
from typing import Annotated, Any, ClassVar, Literal, Union, cast

import pydantic
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from ._arguments import to_arguments
from ._names import class_name, field_names
from ._normalize import normalize_schema
from ._validator import SchemaValidator, pointer_token, resolve_ref

__all__ = ["BridgeModel", "schema_to_model"]

_MAX_DEPTH = 24
_MAX_LITERAL = 512
# Past this many properties an object is an open model without fields (Pydantic spends ~0.3 ms a field):
# the validator still judges every property, and no IDE or LLM reads 1,000 typed fields.
_MAX_FIELDS = 1000
_ANY: Any = Any


class BridgeModel(BaseModel):
    """Base of every model `schema_to_model` builds (open objects: unknown properties are kept)."""

    model_config = ConfigDict(
        strict=True,
        extra="allow",
        allow_inf_nan=False,
        protected_namespaces=(),
        regex_engine="python-re",
        populate_by_name=False,
        defer_build=True,
    )

    __cubepi_schema__: ClassVar[dict[str, Any]] = {}
    __cubepi_root__: ClassVar[dict[str, Any] | None] = None
    __cubepi_pointer__: ClassVar[str] = ""
    __cubepi_validator__: ClassVar[SchemaValidator | None] = None

    @model_validator(mode="after")
    def _cubepi_check(self) -> BridgeModel:
        check = type(self).__cubepi_validator__
        if check is not None:
            error = check.first_error(to_arguments(self))
            if error is not None:
                raise PydanticCustomError("json_schema", "{error}", {"error": error})
        return self

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The server's own (normalised) schema for this object, definitions included."""
        if not cls.__cubepi_schema__ and cls.__cubepi_root__ is None:
            return super().model_json_schema(*args, **kwargs)
        schema = copy.deepcopy(cls.__cubepi_schema__)
        root = cls.__cubepi_root__
        if root is not None and root is not cls.__cubepi_schema__:
            for key in ("$defs", "definitions"):
                if key in root and key not in schema:
                    schema[key] = copy.deepcopy(root[key])
        return schema


class ClosedBridgeModel(BridgeModel):
    """Base of models for objects with ``additionalProperties: false``."""

    model_config = ConfigDict(extra="forbid")


def _integral(value: Any) -> Any:
    """JSON Schema counts 1.0 as an integer; hand it to the strict int validator as 1."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


_Integer: Any = Annotated[int, BeforeValidator(_integral)]
_Number: Any = Union[int, float]  # noqa: UP007 - a runtime union object; int keeps big integers exact
_SCALARS: dict[str, Any] = {"string": str, "boolean": bool, "null": type(None), "integer": _Integer}


def _literal_guard(values: tuple[Any, ...]) -> Any:
    """Python's `Literal` takes 0 for False and 1 for True; JSON does not: the JSON type must match too."""
    keys = {(type(v), v) for v in values}

    def guard(value: Any) -> Any:
        value = _integral(value)
        try:
            found = (type(value), value) in keys
        except TypeError:  # unhashable: a list or an object is none of these values
            found = False
        if not found:
            raise PydanticCustomError(
                "literal_error", "Input should be one of {expected}", {"expected": values}
            )
        return value

    return guard


def _literal(values: list[Any]) -> Any | None:
    """`Literal[...]` for enum/const values that Python's Literal can hold; None otherwise (linear time,
    the cap applied before any work)."""
    if not values or len(values) > _MAX_LITERAL:
        return None
    out: dict[tuple[type, Any], Any] = {}
    for value in values:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if value is not None and not isinstance(value, (str, int, bool)):
            return None
        out.setdefault((type(value), value), value)
    args = tuple(out.values())
    return Annotated[cast(Any, Literal)[args], BeforeValidator(_literal_guard(args))]


def _union(options: list[Any]) -> Any:
    unique: list[Any] = []
    for option in options:
        if option is _ANY:
            return _ANY
        if option not in unique:
            unique.append(option)
    if not unique:
        return _ANY
    if len(unique) == 1:
        return unique[0]
    return cast(Any, Union)[tuple(unique)]


_NUMBER_LIMITS = {"minimum": "ge", "maximum": "le", "exclusiveMinimum": "gt", "exclusiveMaximum": "lt"}
_LENGTH_LIMITS = {"minLength": "min_length", "maxLength": "max_length"}
_ITEM_LIMITS = {"minItems": "min_length", "maxItems": "max_length"}


class _Builder:
    """One conversion: the root schema, a cache of identical subschemas, and the `$ref`s being built."""

    def __init__(self, root: dict[str, Any], name: str) -> None:
        self.root = root
        self.name = name
        self.building: set[int] = set()
        self.cache: dict[str, Any] = {}
        self.names: set[str] = set()

    def unique_name(self, hint: str) -> str:
        name, n = hint, 2
        while name in self.names:
            name, n = f"{hint}{n}", n + 1
        self.names.add(name)
        return name

    def annotation(self, node: Any, hint: str, depth: int, at: str) -> Any:
        """The Python type for a subschema: a necessary condition of it, never stricter."""
        if not isinstance(node, dict) or not node or depth > _MAX_DEPTH:
            return _ANY
        ref = node.get("$ref")
        if ref is not None:
            target = resolve_ref(ref, self.root)
            if not isinstance(target, dict) or id(target) in self.building or target is self.root:
                # unresolvable, a cycle, or the root (whose repairs only hold at the top): the validator
                # judges below this point
                return _ANY
            self.building.add(id(target))
            try:
                return self.annotation(
                    target, class_name(str(ref).rsplit("/", 1)[-1]) or hint, depth + 1, str(ref)[1:]
                )
            finally:
                self.building.discard(id(target))
        if isinstance(node.get("enum"), list):
            literal = _literal(node["enum"])
            if literal is not None:
                return literal
        if "const" in node:
            literal = _literal([node["const"]])
            if literal is not None:
                return literal
        kind = node.get("type")
        if isinstance(kind, str):
            return self.typed(node, kind, hint, depth, at)
        if isinstance(kind, list):
            return _union([self.typed(node, k, hint, depth, at) for k in kind if isinstance(k, str)])
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if isinstance(branches, list) and branches:
                return _union(
                    [
                        self.annotation(b, f"{hint}{i + 1}", depth + 1, f"{at}/{key}/{i}")
                        for i, b in enumerate(branches)
                    ]
                )
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            return self.annotation(all_of[0], hint, depth + 1, f"{at}/allOf/0")
        return _ANY

    def typed(self, node: dict[str, Any], kind: str, hint: str, depth: int, at: str) -> Any:
        if kind in _SCALARS:
            return _SCALARS[kind]
        if kind == "number":
            return _Number
        if kind == "array":
            items = node.get("items")
            if "prefixItems" in node or not isinstance(items, dict):
                return list[Any]
            return list[self.annotation(items, hint + "Item", depth + 1, f"{at}/items")]  # type: ignore[misc]
        if kind == "object":
            props = node.get("properties")
            closed = node.get("additionalProperties") is False
            if not props and not closed:
                extra = node.get("additionalProperties")
                if isinstance(extra, dict) and "patternProperties" not in node:
                    value = self.annotation(extra, hint + "Value", depth + 1, f"{at}/additionalProperties")
                    return dict[str, value]  # type: ignore[valid-type]
                return dict[str, Any]
            return self.model(node, hint, depth, at)
        return _ANY

    def model(
        self, node: dict[str, Any], hint: str, depth: int, at: str, *, root: bool = False
    ) -> type[BridgeModel]:
        """A nested model for an object schema (identical subschemas share one model)."""
        key = ""
        if not root:
            try:
                key = json.dumps(node, sort_keys=True)
            except (TypeError, ValueError):
                key = ""
            if key and key in self.cache:
                return cast(type[BridgeModel], self.cache[key])
        props = node.get("properties")
        props = props if isinstance(props, dict) and len(props) <= _MAX_FIELDS else {}
        required = node.get("required")
        required = set(required) if isinstance(required, list) else set()
        names = field_names(list(props))
        fields: dict[str, Any] = {}
        for wire, sub in props.items():
            python = names[wire]
            where = f"{at}/properties/{pointer_token(wire)}"
            ann = self.annotation(sub, hint + class_name(wire), depth + 1, where)
            info = _field_kwargs(sub, ann)
            if python != wire:
                info["alias"] = wire
            if wire in required:
                default: Any = ...
            else:
                if ann is not _ANY:
                    ann = Union[ann, None]  # noqa: UP007 - null here means "absent" (strict mode)
                default = (
                    copy.deepcopy(sub["default"]) if isinstance(sub, dict) and "default" in sub else None
                )
            fields[python] = (ann, Field(default, **info))
        extra = node.get("additionalProperties")
        closed = extra is False and "patternProperties" not in node and "unevaluatedProperties" not in node
        closed = closed and len(node.get("properties") or ()) <= _MAX_FIELDS
        base = ClosedBridgeModel if closed else BridgeModel
        doc = node.get("description")
        model = pydantic.create_model(
            self.unique_name(hint),
            __base__=base,
            __doc__=doc if isinstance(doc, str) else None,
            **fields,
        )
        model.__cubepi_schema__ = node
        model.__cubepi_root__ = self.root
        model.__cubepi_pointer__ = at
        if key:
            self.cache[key] = model
        return model


def _field_kwargs(sub: Any, ann: Any) -> dict[str, Any]:
    """Field metadata Pydantic can hold with JSON Schema's meaning (the checker enforces the rest)."""
    out: dict[str, Any] = {}
    if not isinstance(sub, dict):
        return out
    if isinstance(sub.get("description"), str):
        out["description"] = sub["description"]
    if ann is str:
        limits = _LENGTH_LIMITS
    elif ann is _Integer:
        limits = _NUMBER_LIMITS
    elif ann is list or getattr(ann, "__origin__", None) is list:
        limits = _ITEM_LIMITS
    else:
        return out
    for key, name in limits.items():
        value = sub.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = value
    return out


def schema_to_model(schema: Any, *, name: str) -> type[BaseModel]:
    """Build a Pydantic model from a tool's `inputSchema`.

    The model accepts exactly what the schema accepts; property names that are not usable Python names
    become aliased fields; `to_arguments` sends back the wire form. Never raises on a schema a server
    could send; raises `SchemaError` (naming the tool) when the schema is not an object at all.
    """
    normalized = normalize_schema(schema, tool_name=name)
    builder = _Builder(normalized, name)
    model = builder.model(normalized, builder.unique_name(class_name(name)), 0, "", root=True)
    judged = _wire_copy(schema) if isinstance(schema, dict) else None
    model.__cubepi_validator__ = SchemaValidator(
        normalized if judged is None else judged, tool_name=name, fallback=normalized
    )
    return model


def _wire_copy(schema: dict[str, Any]) -> Any:
    """The server's schema as JSON (what the validator judges by), or None when it is not JSON."""
    try:
        return json.loads(json.dumps(schema))
    except (TypeError, ValueError, RecursionError):
        return None
