"""Wire arguments: what goes to the server for a validated model.

Exactly the fields the caller set (recursively), under their wire names, in JSON form: no injected
defaults, explicit nulls kept, nothing converted. One exception makes OpenAI strict mode round-trip: when
the arguments as given break the schema, a null for an optional property whose schema does not allow null
(strict mode makes optional properties required-but-nullable, so a model sends null for "absent") is
dropped, so the server's own default applies; so is a null for a key that only another branch of an
`anyOf`/`oneOf` of objects defines (strict mode folds such a union into one object with every branch's keys).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ._validator import is_valid_at, pointer_token, resolve_ref

__all__ = ["drop_disallowed_nulls", "to_arguments"]

_MAX_DEPTH = 200


def to_arguments(params: BaseModel) -> dict[str, Any]:
    """The wire arguments of a validated model (see the module docstring for the one null rule)."""
    data: dict[str, Any] = params.model_dump(mode="json", by_alias=True, exclude_unset=True)
    cls = type(params)
    schema = getattr(cls, "__cubepi_schema__", None)
    if not isinstance(schema, dict) or not _has_null(data):
        return data
    check = getattr(cls, "__cubepi_validator__", None)
    if check is not None and check.is_valid(data):
        return data
    root = getattr(cls, "__cubepi_root__", None) or schema
    pruned = drop_disallowed_nulls(data, schema, root, getattr(cls, "__cubepi_pointer__", ""))
    assert isinstance(pruned, dict)
    return pruned


def _has_null(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_has_null(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_null(v) for v in value)
    return False


def drop_disallowed_nulls(value: Any, schema: Any, root: Any, pointer: str = "", depth: int = 0) -> Any:
    """Drop nulls of optional properties whose schema does not allow null, guided by `schema`, the
    subschema of `root` at the JSON pointer `pointer`."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH or not _has_null(value):
        return value
    depth += 1
    seen: set[int] = set()
    while "$ref" in schema and id(schema) not in seen:
        seen.add(id(schema))
        ref = schema["$ref"]
        target = resolve_ref(ref, root)
        if not isinstance(target, dict):
            break
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        value = drop_disallowed_nulls(value, rest, root, pointer, depth) if rest else value
        schema, pointer = target, ref[1:]
    if isinstance(value, dict):
        value = _object(value, schema, root, pointer, depth)
    elif isinstance(value, list):
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        items = schema.get("items")
        value = [
            drop_disallowed_nulls(
                item,
                prefix[i] if i < len(prefix) else items,
                root,
                f"{pointer}/prefixItems/{i}" if i < len(prefix) else f"{pointer}/items",
                depth,
            )
            for i, item in enumerate(value)
        ]
    all_of = schema.get("allOf")
    if isinstance(all_of, list):
        for i, sub in enumerate(all_of):
            value = drop_disallowed_nulls(value, sub, root, f"{pointer}/allOf/{i}", depth)
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            value = _fold(value, branches, root, f"{pointer}/{key}", depth)
    return value


def _object(value: dict[str, Any], schema: dict[str, Any], root: Any, pointer: str, depth: int) -> Any:
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    required = schema.get("required")
    required = required if isinstance(required, list) else []
    extra = schema.get("additionalProperties")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in props:
            where = f"{pointer}/properties/{pointer_token(key)}"
            if item is None and key not in required and is_valid_at(None, where, root) is False:
                continue
            item = drop_disallowed_nulls(item, props[key], root, where, depth)
        elif isinstance(extra, dict):
            item = drop_disallowed_nulls(item, extra, root, f"{pointer}/additionalProperties", depth)
        out[key] = item
    return out


def _fold(value: Any, branches: list[Any], root: Any, pointer: str, depth: int) -> Any:
    """The value for the first branch a null-dropped candidate fits (the value itself when one fits)."""
    if any(is_valid_at(value, f"{pointer}/{i}", root) is not False for i in range(len(branches))):
        return value
    defined = set().union(*(_property_names(b, root) for b in branches))
    for i, branch in enumerate(branches):
        candidate = drop_disallowed_nulls(value, branch, root, f"{pointer}/{i}", depth)
        if isinstance(candidate, dict):
            # strict mode folds a union of objects into one object whose keys are all present: a
            # null for a key only another branch defines means "absent" for this branch.
            own = _property_names(branch, root)
            candidate = {k: v for k, v in candidate.items() if v is not None or k in own or k not in defined}
        if is_valid_at(candidate, f"{pointer}/{i}", root):
            return candidate
    return value


def _property_names(schema: Any, root: Any) -> set[str]:
    """The property names an object schema declares (through `$ref`s)."""
    seen: set[int] = set()
    while isinstance(schema, dict) and "$ref" in schema and id(schema) not in seen:
        seen.add(id(schema))
        target = resolve_ref(schema["$ref"], root)
        if not isinstance(target, dict):
            break
        schema = target
    props = schema.get("properties") if isinstance(schema, dict) else None
    return set(props) if isinstance(props, dict) else set()
