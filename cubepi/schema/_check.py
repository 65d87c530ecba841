"""A small JSON Schema (2020-12) checker: the ground truth of what a tool's schema accepts.

Pydantic types carry the shape of the arguments; this checker runs after them on the wire arguments, so
keywords Pydantic cannot express exactly (`oneOf`, `not`, `if`/`then`/`else`, `patternProperties`,
`dependentRequired`, `uniqueItems`, `unevaluatedProperties`, ...) are still enforced. It follows the
reference validator (`jsonschema`): Python `re.search` for `pattern`, `format` as an annotation, 1.0 as an
integer, booleans distinct from numbers. A keyword it cannot evaluate (remote `$ref`, a pattern no regex
engine here can compile, an ill-typed keyword value) accepts, never crashes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from fractions import Fraction
from typing import Any, TypeGuard

__all__ = ["compile_pattern", "first_error", "is_valid", "json_equal", "json_type_ok", "resolve_ref"]

_MAX_DEPTH = 400

# -- primitives ------------------------------------------------------------------------------------------


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_type_ok(value: object, type_name: object) -> bool:
    """Whether `value` has the JSON type `type_name` (unknown names accept)."""
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if type_name == "number":
        return _is_number(value)
    if type_name == "boolean":
        return isinstance(value, bool)
    if type_name == "null":
        return value is None
    if type_name == "object":
        return isinstance(value, dict)
    if type_name == "array":
        return isinstance(value, list)
    return True


def json_equal(left: object, right: object) -> bool:
    """JSON equality: 1 == 1.0, but True != 1; deep for arrays and objects."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if _is_number(left) and _is_number(right):
        return left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(json_equal(a, b) for a, b in zip(left, right, strict=False))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if _is_number(left) or _is_number(right):
        return False
    return type(left) is type(right) and left == right


_PATTERNS: dict[str, re.Pattern[str] | None] = {}
_NAMED_GROUP = re.compile(r"\(\?<(?![=!])")
_NAMED_BACKREF = re.compile(r"\\k<([A-Za-z_][A-Za-z0-9_]*)>")


def compile_pattern(pattern: str) -> re.Pattern[str] | None:
    """Compile an ECMAScript `pattern` for Python, or None when no translation compiles (then: accept)."""
    try:
        return _PATTERNS[pattern]
    except KeyError:
        pass
    compiled: re.Pattern[str] | None = None
    for candidate in (pattern, _NAMED_BACKREF.sub(r"(?P=\1)", _NAMED_GROUP.sub("(?P<", pattern))):
        try:
            compiled = re.compile(candidate)
            break
        except (re.error, RecursionError, OverflowError, ValueError):
            continue
    if len(_PATTERNS) > 4096:
        _PATTERNS.clear()
    _PATTERNS[pattern] = compiled
    return compiled


def _unescape(token: str) -> str:
    from urllib.parse import unquote

    return unquote(token).replace("~1", "/").replace("~0", "~")


def resolve_ref(ref: object, root: object) -> object | None:
    """Resolve a local `$ref` (a JSON pointer into `root`); None when it cannot be resolved."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    pointer = ref[1:]
    node: object = root
    if not pointer:
        return node
    if not pointer.startswith("/"):
        return None
    for raw in pointer[1:].split("/"):
        token = _unescape(raw)
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


# -- validation ------------------------------------------------------------------------------------------


class _Ctx:
    __slots__ = ("active", "root")

    def __init__(self, root: object) -> None:
        self.root = root
        self.active: set[tuple[int, int]] = set()


def is_valid(instance: object, schema: object, root: object | None = None) -> bool:
    """Whether `instance` is valid against `schema` (refs resolved against `root`, default `schema`)."""
    return first_error(instance, schema, root) is None


def first_error(instance: object, schema: object, root: object | None = None) -> str | None:
    """The first reason `instance` is invalid against `schema`, as "path: message"; None when valid."""
    ctx = _Ctx(schema if root is None else root)
    try:
        for path, message in _errors(instance, schema, ctx, (), 0):
            where = "/".join(str(p) for p in path) or "(arguments)"
            return f"{where}: {message}"
    except RecursionError:
        return "(arguments): too deeply nested to validate"
    return None


def _valid(instance: object, schema: object, ctx: _Ctx, depth: int) -> bool:
    for _ in _errors(instance, schema, ctx, (), depth):
        return False
    return True


Error = tuple[tuple[object, ...], str]


def _errors(
    instance: object, schema: object, ctx: _Ctx, path: tuple[object, ...], depth: int
) -> Iterator[Error]:
    if schema is True or not isinstance(schema, dict):
        if schema is False:
            yield path, "no value is allowed here"
        return
    if depth > _MAX_DEPTH:
        return
    depth += 1

    ref = schema.get("$ref")
    if ref is not None:
        target = resolve_ref(ref, ctx.root)
        if target is not None:
            key = (id(target), id(instance))
            if key not in ctx.active:
                ctx.active.add(key)
                try:
                    yield from _errors(instance, target, ctx, path, depth)
                finally:
                    ctx.active.discard(key)

    yield from _type_errors(instance, schema, path)
    options = schema.get("enum")
    if isinstance(options, list) and not any(json_equal(instance, option) for option in options):
        yield path, f"must be one of {_short(schema['enum'])}"
    if "const" in schema and not json_equal(instance, schema["const"]):
        yield path, f"must be {_short(schema['const'])}"

    if _is_number(instance):
        yield from _number_errors(instance, schema, path)
    elif isinstance(instance, str):
        yield from _string_errors(instance, schema, path)
    elif isinstance(instance, list):
        yield from _array_errors(instance, schema, ctx, path, depth)
    elif isinstance(instance, dict):
        yield from _object_errors(instance, schema, ctx, path, depth)

    yield from _combinator_errors(instance, schema, ctx, path, depth)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _type_errors(instance: object, schema: dict[str, Any], path: tuple[object, ...]) -> Iterator[Error]:
    kind = schema.get("type")
    if isinstance(kind, str):
        if not json_type_ok(instance, kind):
            yield path, f"must be of type {kind}"
    elif isinstance(kind, list) and kind and not any(json_type_ok(instance, k) for k in kind):
        yield path, f"must be of type {' or '.join(str(k) for k in kind)}"


def _number_errors(value: Any, schema: dict[str, Any], path: tuple[object, ...]) -> Iterator[Error]:
    try:
        bound = schema.get("minimum")
        if _is_number(bound) and value < bound:
            yield path, f"must be >= {bound}"
        bound = schema.get("maximum")
        if _is_number(bound) and value > bound:
            yield path, f"must be <= {bound}"
        bound = schema.get("exclusiveMinimum")
        if _is_number(bound) and value <= bound:
            yield path, f"must be > {bound}"
        bound = schema.get("exclusiveMaximum")
        if _is_number(bound) and value >= bound:
            yield path, f"must be < {bound}"
        step = schema.get("multipleOf")
        if _is_number(step) and step > 0 and not _multiple_of(value, step):
            yield path, f"must be a multiple of {step}"
    except (OverflowError, ValueError, ZeroDivisionError):
        return


def _multiple_of(value: Any, step: Any) -> bool:
    if isinstance(step, float):
        try:
            quotient = value / step
            if math.isinf(quotient):
                raise OverflowError
            return bool(int(quotient) == quotient)
        except OverflowError:
            return (Fraction(value) / Fraction(step)).denominator == 1
    return not bool(value % step)


def _string_errors(value: str, schema: dict[str, Any], path: tuple[object, ...]) -> Iterator[Error]:
    low = schema.get("minLength")
    if _is_number(low) and len(value) < low:
        yield path, f"must have at least {low} characters"
    high = schema.get("maxLength")
    if _is_number(high) and len(value) > high:
        yield path, f"must have at most {high} characters"
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        compiled = compile_pattern(pattern)
        if compiled is not None and not compiled.search(value):
            yield path, f"must match the pattern {pattern!r}"


def _array_errors(
    value: list[Any], schema: dict[str, Any], ctx: _Ctx, path: tuple[object, ...], depth: int
) -> Iterator[Error]:
    low = schema.get("minItems")
    if _is_number(low) and len(value) < low:
        yield path, f"must have at least {low} items"
    high = schema.get("maxItems")
    if _is_number(high) and len(value) > high:
        yield path, f"must have at most {high} items"
    if schema.get("uniqueItems") is True:
        for i, item in enumerate(value):
            if any(json_equal(item, other) for other in value[:i]):
                yield path, "items must be unique"
                break
    items = schema.get("items")
    prefix = schema.get("prefixItems")
    rest_schema: object = items
    if isinstance(items, list):  # draft 7 tuple form
        prefix, rest_schema = items, schema.get("additionalItems", True)
    start = 0
    if isinstance(prefix, list):
        for i, (item, sub) in enumerate(zip(value, prefix, strict=False)):
            yield from _errors(item, sub, ctx, (*path, i), depth)
        start = len(prefix)
    if rest_schema is not None and (isinstance(rest_schema, dict) or rest_schema is False):
        for i in range(start, len(value)):
            yield from _errors(value[i], rest_schema, ctx, (*path, i), depth)
    if "contains" in schema:
        matches = sum(1 for item in value if _valid(item, schema["contains"], ctx, depth))
        low = schema.get("minContains", 1)
        high = schema.get("maxContains")
        if _is_number(low) and matches < low:
            yield path, "must contain a matching item" if low == 1 else f"must contain at least {low} matches"
        if _is_number(high) and matches > high:
            yield path, f"must contain at most {high} matching items"
    if "unevaluatedItems" in schema:
        seen = _evaluated_items(value, schema, ctx, depth)
        for i, item in enumerate(value):
            if i not in seen:
                yield from _errors(item, schema["unevaluatedItems"], ctx, (*path, i), depth)


def _object_errors(
    value: dict[str, Any], schema: dict[str, Any], ctx: _Ctx, path: tuple[object, ...], depth: int
) -> Iterator[Error]:
    required = schema.get("required")
    if isinstance(required, list):
        for name in required:
            if isinstance(name, str) and name not in value:
                yield (*path, name), "is required"
    low = schema.get("minProperties")
    if _is_number(low) and len(value) < low:
        yield path, f"must have at least {low} properties"
    high = schema.get("maxProperties")
    if _is_number(high) and len(value) > high:
        yield path, f"must have at most {high} properties"
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    patterns = schema.get("patternProperties")
    compiled: list[tuple[re.Pattern[str] | None, object]] = []
    if isinstance(patterns, dict):
        compiled = [(compile_pattern(p), sub) for p, sub in patterns.items() if isinstance(p, str)]
    extra = schema.get("additionalProperties")
    names = schema.get("propertyNames")
    for key, item in value.items():
        matched = False
        if key in props:
            matched = True
            yield from _errors(item, props[key], ctx, (*path, key), depth)
        for regex, sub in compiled:
            if regex is None or regex.search(key):
                matched = True
                yield from _errors(item, sub, ctx, (*path, key), depth)
        if not matched and extra is not None:
            if extra is False:
                yield (*path, key), "is not an allowed property"
            else:
                yield from _errors(item, extra, ctx, (*path, key), depth)
        if names is not None:
            for _, message in _errors(key, names, ctx, (), depth):
                yield (*path, key), f"property name {message}"
                break
    dependent = schema.get("dependentRequired")
    if isinstance(dependent, dict):
        for key, needs in dependent.items():
            if key in value and isinstance(needs, list):
                for need in needs:
                    if isinstance(need, str) and need not in value:
                        yield (*path, need), f"is required when {key!r} is present"
    dep_schemas = schema.get("dependentSchemas")
    if isinstance(dep_schemas, dict):
        for key, sub in dep_schemas.items():
            if key in value:
                yield from _errors(value, sub, ctx, path, depth)
    legacy = schema.get("dependencies")
    if isinstance(legacy, dict):
        for key, dep in legacy.items():
            if key not in value:
                continue
            if isinstance(dep, list):
                for need in dep:
                    if isinstance(need, str) and need not in value:
                        yield (*path, need), f"is required when {key!r} is present"
            else:
                yield from _errors(value, dep, ctx, path, depth)
    if "unevaluatedProperties" in schema:
        seen = _evaluated_keys(value, schema, ctx, depth)
        for key, item in value.items():
            if key not in seen:
                for _, message in _errors(item, schema["unevaluatedProperties"], ctx, (), depth):
                    yield (
                        (*path, key),
                        (
                            "is not an allowed property"
                            if schema["unevaluatedProperties"] is False
                            else message
                        ),
                    )
                    break


def _combinator_errors(
    instance: object, schema: dict[str, Any], ctx: _Ctx, path: tuple[object, ...], depth: int
) -> Iterator[Error]:
    all_of = schema.get("allOf")
    if isinstance(all_of, list):
        for sub in all_of:
            yield from _errors(instance, sub, ctx, path, depth)
    any_of = schema.get("anyOf")
    if isinstance(any_of, list) and any_of and not any(_valid(instance, sub, ctx, depth) for sub in any_of):
        yield path, "does not match any of the allowed alternatives (anyOf)"
    one_of = schema.get("oneOf")
    if isinstance(one_of, list) and one_of:
        count = sum(1 for sub in one_of if _valid(instance, sub, ctx, depth))
        if count != 1:
            yield (
                path,
                (
                    "does not match any alternative (oneOf)"
                    if count == 0
                    else "matches more than one alternative (oneOf)"
                ),
            )
    if "not" in schema and _valid(instance, schema["not"], ctx, depth):
        yield path, "matches a schema it must not match (not)"
    if "if" in schema:
        if _valid(instance, schema["if"], ctx, depth):
            if "then" in schema:
                yield from _errors(instance, schema["then"], ctx, path, depth)
        elif "else" in schema:
            yield from _errors(instance, schema["else"], ctx, path, depth)


# -- annotations for unevaluated* -----------------------------------------------------------------------


def _subschemas_applied(instance: object, schema: dict[str, Any], ctx: _Ctx, depth: int) -> Iterator[object]:
    """The in-place subschemas whose annotations count for `instance` (for unevaluated*)."""
    target = resolve_ref(schema.get("$ref"), ctx.root) if "$ref" in schema else None
    if target is not None and depth < _MAX_DEPTH:
        yield target
    for key in ("allOf",):
        if isinstance(schema.get(key), list):
            yield from schema[key]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            yield from (sub for sub in schema[key] if _valid(instance, sub, ctx, depth))
    if "if" in schema:
        if _valid(instance, schema["if"], ctx, depth):
            yield schema["if"]
            if "then" in schema:
                yield schema["then"]
        elif "else" in schema:
            yield schema["else"]
    deps = schema.get("dependentSchemas")
    if isinstance(deps, dict) and isinstance(instance, dict):
        yield from (sub for key, sub in deps.items() if key in instance)


def _evaluated_keys(
    value: dict[str, Any], schema: object, ctx: _Ctx, depth: int, top: bool = True
) -> set[str]:
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return set()
    seen: set[str] = set()
    props = schema.get("properties")
    if isinstance(props, dict):
        seen.update(k for k in value if k in props)
    patterns = schema.get("patternProperties")
    if isinstance(patterns, dict):
        for pattern in patterns:
            regex = compile_pattern(pattern) if isinstance(pattern, str) else None
            seen.update(k for k in value if regex is None or regex.search(k))
    if "additionalProperties" in schema or (not top and "unevaluatedProperties" in schema):
        seen.update(value)
    for sub in _subschemas_applied(value, schema, ctx, depth + 1):
        seen |= _evaluated_keys(value, sub, ctx, depth + 1, False)
    return seen


def _evaluated_items(value: list[Any], schema: object, ctx: _Ctx, depth: int, top: bool = True) -> set[int]:
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return set()
    seen: set[int] = set()
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        seen.update(range(min(len(prefix), len(value))))
    if "items" in schema or (not top and "unevaluatedItems" in schema):
        seen.update(range(len(value)))
    if "contains" in schema:
        seen.update(i for i, item in enumerate(value) if _valid(item, schema["contains"], ctx, depth))
    for sub in _subschemas_applied(value, schema, ctx, depth + 1):
        seen |= _evaluated_items(value, sub, ctx, depth + 1, False)
    return seen
