"""Repair the loose schemas real servers send, into one dialect (JSON Schema 2020-12).

Every repair keeps what the schema accepts, except where the schema was broken (a `required` name that
`additionalProperties: false` forbids is dropped, an ill-typed keyword value is removed). The input is
never mutated.
"""

from __future__ import annotations

import copy
import sys
from typing import Any

from ..errors import SchemaError
from ._validator import pattern_search

__all__ = ["normalize_schema"]

_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_TYPE_ALIASES = {
    "string": "string",
    "str": "string",
    "text": "string",
    "integer": "integer",
    "int": "integer",
    "long": "integer",
    "number": "number",
    "float": "number",
    "double": "number",
    "boolean": "boolean",
    "bool": "boolean",
    "null": "null",
    "none": "null",
    "object": "object",
    "dict": "object",
    "map": "object",
    "array": "array",
    "list": "array",
    "tuple": "array",
}
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_VALUES = (
    "additionalProperties",
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
)
_ANNOTATIONS = frozenset(
    {"description", "title", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"}
)
_NUMERIC = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
)
_COUNTS = (
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
)
# Past this depth a subschema is replaced by the permissive ``{}``: copying it whole (or building it) would
# overflow the stack, and no real tool nests arguments this deep.
_MAX_NODE_DEPTH = 200


def normalize_schema(schema: Any, *, tool_name: str | None = None) -> dict[str, Any]:
    """Repair a tool's `inputSchema` into an object schema in the 2020-12 dialect; never mutates it.

    Adds a missing ``"type": "object"`` at the top, turns ``properties: null`` into ``{}``, gives
    `required` names absent from `properties` a declared property (with the `additionalProperties`
    schema, so the meaning is kept), rewrites draft-4 boolean exclusive bounds, draft-7 tuple `items`
    and `dependencies`, maps type aliases (``"int"``, ``"dict"``, ...), and drops ill-typed keyword values.
    Raises `SchemaError` only when the schema is not an object at all.
    """
    if schema is None or schema is True:
        return {"type": "object", "properties": {}}
    if schema is False:
        return {"type": "object", "properties": {}, "not": {}}
    if not isinstance(schema, dict):
        raise SchemaError(
            f"the inputSchema of tool {tool_name!r} is not a JSON object (got {type(schema).__name__})",
            tool_name=tool_name,
        )
    declared = schema.get("$schema")
    legacy = isinstance(declared, str) and any(f"draft-0{n}" in declared for n in range(3, 8))
    out = _node(schema, legacy, 0)
    assert isinstance(out, dict)
    if "$schema" in out:
        out["$schema"] = _DIALECT if legacy or not isinstance(declared, str) else declared
    kind = out.get("type")
    if kind is None or (isinstance(kind, list) and "object" in kind):
        out["type"] = "object"
    elif kind != "object":
        raise SchemaError(
            f"the inputSchema of tool {tool_name!r} must describe an object, not {kind!r}",
            tool_name=tool_name,
        )
    if not isinstance(out.get("properties"), dict):
        out["properties"] = {}
    _fix_required(out)
    return out


def _node(schema: Any, legacy: bool, depth: int) -> Any:
    """Normalise one subschema (recursively); non-schema values become the permissive ``{}``."""
    if isinstance(schema, bool):
        return schema
    if isinstance(schema, str) and schema.lower() in _TYPE_ALIASES:
        return {"type": _TYPE_ALIASES[schema.lower()]}
    if not isinstance(schema, dict):
        return {}
    if depth > _MAX_NODE_DEPTH:
        return {}
    if legacy and "$ref" in schema:
        # before 2019-09, keywords beside $ref were ignored: keep only the annotations.
        schema = {k: v for k, v in schema.items() if k == "$ref" or k in _ANNOTATIONS}
    out: dict[str, Any] = {}
    draft3 = _draft3_required(schema.get("properties"))
    for key, value in schema.items():
        if key in _SCHEMA_MAPS:
            if isinstance(value, dict):
                out[key] = {str(k): _node(v, legacy, depth + 1) for k, v in value.items()}
            elif value is None:
                out[key] = {}
        elif key in _SCHEMA_LISTS:
            if isinstance(value, list):
                out[key] = [_node(v, legacy, depth + 1) for v in value]
        elif key in _SCHEMA_VALUES:
            if isinstance(value, list) and key in ("items", "additionalItems"):
                out[key] = [_node(v, legacy, depth + 1) for v in value]
            elif value is not None:
                out[key] = _node(value, legacy, depth + 1)
        elif key == "dependencies" and isinstance(value, dict):
            out[key] = {
                str(k): (list(v) if isinstance(v, list) else _node(v, legacy, depth + 1))
                for k, v in value.items()
            }
        else:
            out[key] = copy.deepcopy(value)
    _fix_type(out)
    _fix_bounds(out)
    _fix_items(out)
    _fix_dependencies(out)
    if draft3:
        raw = out.get("required")
        out["required"] = [*(raw if isinstance(raw, list) else []), *draft3]
    if "required" in out or "properties" in out:
        _fix_required(out)
    if "enum" in out and not isinstance(out["enum"], list):
        del out["enum"]
    if "pattern" in out and not isinstance(out["pattern"], str):
        del out["pattern"]
    if "$ref" in out and not isinstance(out["$ref"], str):
        del out["$ref"]
    return out


def _draft3_required(props: Any) -> list[str]:
    """Names whose property says ``"required": true`` (draft 3), read before the properties are normalised
    (normalising a property drops its boolean `required`)."""
    if not isinstance(props, dict):
        return []
    return [str(k) for k, v in props.items() if isinstance(v, dict) and v.get("required") is True]


def _fix_type(out: dict[str, Any]) -> None:
    kind = out.get("type")
    if kind is None:
        return
    names = kind if isinstance(kind, list) else [kind]
    fixed: list[str] = []
    for name in names:
        mapped = _TYPE_ALIASES.get(name.lower()) if isinstance(name, str) else None
        if mapped is None:  # "any" or an unknown name: no type constraint at all
            del out["type"]
            return
        if mapped not in fixed:
            fixed.append(mapped)
    if not fixed:
        del out["type"]
    elif isinstance(kind, list):
        out["type"] = fixed
    else:
        out["type"] = fixed[0]


def _fix_bounds(out: dict[str, Any]) -> None:
    for key, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = out.get(key)
        if isinstance(flag, bool):  # draft 4
            del out[key]
            if flag and bound in out:
                out[key] = out.pop(bound)
    for key in _NUMERIC:
        value = out.get(key)
        if key not in out:
            continue
        if isinstance(value, str):
            try:
                out[key] = int(value) if value.strip().lstrip("-").isdigit() else float(value)
                continue
            except ValueError:
                pass
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            del out[key]
    for key in _COUNTS:
        # A length or count must be a non-negative integer; -1 ("unlimited"), 2.5 or 1e30 would crash
        # pydantic-core, so such a bound is dropped (no constraint) rather than guessed at.
        value = out.get(key)
        if isinstance(value, float) and value.is_integer():
            value = out[key] = int(value)
        if key in out and not (isinstance(value, int) and 0 <= value <= sys.maxsize):
            del out[key]
    if "multipleOf" in out and out["multipleOf"] <= 0:
        del out["multipleOf"]


def _fix_items(out: dict[str, Any]) -> None:
    items = out.get("items")
    if isinstance(items, list):
        out["prefixItems"] = items
        extra = out.pop("additionalItems", None)
        if extra is None:
            del out["items"]
        else:
            out["items"] = extra
    else:
        out.pop("additionalItems", None)


def _fix_dependencies(out: dict[str, Any]) -> None:
    deps = out.pop("dependencies", None)
    if not isinstance(deps, dict):
        return
    for key, dep in deps.items():
        if isinstance(dep, list):
            out.setdefault("dependentRequired", {})[key] = [d for d in dep if isinstance(d, str)]
        else:
            out.setdefault("dependentSchemas", {})[key] = dep


def _fix_required(out: dict[str, Any]) -> None:
    props = out.get("properties")
    if props is not None and not isinstance(props, dict):
        props = out["properties"] = {}
    raw = out.get("required")
    names: list[str] = []
    if isinstance(raw, list):
        for name in raw:
            if isinstance(name, str) and name not in names:
                names.append(name)
    if not names:
        out.pop("required", None)
        return
    extra = out.get("additionalProperties", True)
    kept: list[str] = []
    for name in names:
        if props is None or name not in props:
            if extra is False and "patternProperties" not in out:
                continue  # the schema could never be satisfied: drop the impossible requirement
            props = out.setdefault("properties", {})
            patterns = out.get("patternProperties")
            matched = isinstance(patterns, dict) and any(
                isinstance(p, str) and pattern_search(p, name) is True for p in patterns
            )
            props[name] = copy.deepcopy(extra) if isinstance(extra, dict) and not matched else {}
        kept.append(name)
    if kept:
        out["required"] = kept
    else:
        out.pop("required", None)
