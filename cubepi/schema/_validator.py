"""The one JSON Schema validator of cubepi (`jsonschema-rs`): the verdict on arguments and structured output.

A schema is judged by its own draft (`$schema`; 2020-12 when it names none). A schema that is not valid
JSON Schema (the loose ones real servers send) is judged in its repaired form (`normalize_schema`), with any
keyword the validator still cannot compile left out (it then accepts anything). Patterns are ECMA-262 and
run on a linear-time engine; one that needs look-around or back-references backtracks a bounded number of
steps, on strings up to 1,000 characters, so no pattern and no argument can make a check slow. `format` is
an annotation. A remote `$ref` is never fetched: it accepts anything, and one warning names the tool.
Messages name the path and the rule broken, never the value."""

from __future__ import annotations

import copy
import functools
import json
import logging
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import jsonschema_rs

__all__ = [
    "SchemaValidator",
    "is_valid_at",
    "is_valid_in",
    "json_type_ok",
    "pattern_search",
    "pointer_token",
    "resolve_ref",
]

logger = logging.getLogger("cubepi.schema")

# fancy-regex hands every pattern without look-around or back-references to the linear `regex` engine; the
# others backtrack, at most _BACKTRACK steps per start position, on strings of at most _FANCY_LENGTH.
_BACKTRACK = 5000
_FANCY_LENGTH = 1000
_ENGINE = jsonschema_rs.FancyRegexOptions(backtrack_limit=_BACKTRACK)
_LINEAR = jsonschema_rs.RegexOptions()
_DATA = frozenset({"enum", "const", "default", "examples"})
_COMPILE_ERRORS = (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError, RecursionError)
_MAX_REPAIRS = 32
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_ROOT_URI = "urn:cubepi:schema"


def _compile(schema: Any, retrieve: Callable[[str], Any], *, bounded: bool = False, **extra: Any) -> Any:
    return jsonschema_rs.validator_for(
        schema if bounded else _bound_patterns(schema),
        retriever=retrieve,
        pattern_options=_ENGINE,
        validate_formats=False,
        **extra,
    )


class SchemaValidator:
    """The exact check of one schema, compiled on first use (then shared by every call)."""

    __slots__ = ("_compiled", "_fallback", "_lock", "_schema", "tool_name")

    def __init__(self, schema: Any, *, tool_name: str | None = None, fallback: Any = None) -> None:
        self._schema = schema
        self._fallback = fallback
        self.tool_name = tool_name
        self._compiled: Any = None
        self._lock = threading.Lock()

    def compiled(self) -> Any:
        """The jsonschema-rs validator (None when nothing of the schema can be compiled)."""
        compiled = self._compiled
        if compiled is None:
            with self._lock:
                if self._compiled is None:
                    self._compiled = self._build() or False
                compiled = self._compiled
        return compiled or None

    def _build(self) -> Any:
        unfetched: list[str] = []

        def retrieve(uri: str) -> Any:
            unfetched.append(uri)
            return {}

        validator: Any = None
        try:
            validator = _compile(self._schema, retrieve)
        except _COMPILE_ERRORS:
            validator = _repaired(self._schema if self._fallback is None else self._fallback, retrieve)
            if validator is None:
                logger.warning(
                    "the schema of tool %r cannot be compiled; only its types are checked", self.tool_name
                )
        if unfetched:
            logger.warning(
                "tool %r: remote schema reference(s) not fetched, they accept anything: %s",
                self.tool_name,
                ", ".join(sorted(set(unfetched))[:5]),
            )
        return validator

    def is_valid(self, instance: Any) -> bool:
        return self.first_error(instance) is None

    def first_error(self, instance: Any) -> str | None:
        """The first reason `instance` is invalid, as ``"path: rule"`` (no value shown); None when valid."""
        validator = self.compiled()
        if validator is None:
            return None
        try:
            if validator.is_valid(instance):
                return None
            error = next(iter(validator.iter_errors(instance)), None)
        except (ValueError, RecursionError):
            return "(arguments): cannot be validated (nested too deeply, or not JSON)"
        if error is None:
            return None
        where = "/".join(str(part) for part in error.instance_path) or "(arguments)"
        return f"{where}: {describe(error)}"


@functools.lru_cache(maxsize=1024)
def _backtracks(pattern: str) -> bool:
    """Whether `pattern` needs the backtracking engine (look-around, back-references)."""
    try:
        jsonschema_rs.validator_for({"pattern": pattern}, pattern_options=_LINEAR)
    except _COMPILE_ERRORS:
        return True
    return False


def _bound_patterns(node: Any, depth: int = 0) -> Any:
    """`node`, with each backtracking `pattern` enforced only on strings up to _FANCY_LENGTH (a new object
    where something changed; `node` itself is never modified)."""
    if depth > 400:
        return node
    if isinstance(node, list):
        items = [_bound_patterns(value, depth + 1) for value in node]
        return node if all(a is b for a, b in zip(items, node, strict=True)) else items
    if not isinstance(node, dict):
        return node
    out = {key: value if key in _DATA else _bound_patterns(value, depth + 1) for key, value in node.items()}
    pattern, all_of = out.get("pattern"), out.get("allOf", [])
    if isinstance(pattern, str) and isinstance(all_of, list) and _backtracks(pattern):
        del out["pattern"]
        guard = {"if": {"type": "string", "maxLength": _FANCY_LENGTH}, "then": {"pattern": pattern}}
        out["allOf"] = [*all_of, guard]
    if all(out.get(key) is value for key, value in node.items()) and len(out) == len(node):
        return node
    return out


def _repaired(schema: Any, retrieve: Callable[[str], Any]) -> Any:
    """Compile `schema`, leaving out each keyword the validator refuses (a bounded number of times)."""
    try:
        candidate = _bound_patterns(copy.deepcopy(schema))
    except RecursionError:
        return None
    for _ in range(_MAX_REPAIRS):
        try:
            return _compile(candidate, retrieve, bounded=True)
        except _COMPILE_ERRORS as exc:
            if not _drop(candidate, list(getattr(exc, "instance_path", None) or [])):
                return None
    return None


def _drop(schema: Any, path: list[Any]) -> bool:
    """Remove the keyword at `path` (a schema location), or with no path every local `$ref` that resolves
    nowhere; False when there is nothing to remove."""
    if not path:
        return _drop_dangling(schema, schema, 0)
    node = schema
    for part in path[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return False
    last = path[-1]
    if isinstance(node, dict) and last in node:
        parent_keyword = path[-2] if len(path) > 1 else None
        del node[last]
        if parent_keyword == "patternProperties":
            # a property that pattern matched would now count as additional: judge none of them
            owner = schema
            for part in path[:-2]:
                owner = owner[part]
            owner.pop("additionalProperties", None)
            owner.pop("unevaluatedProperties", None)
        return True
    if isinstance(node, list) and isinstance(last, int) and last < len(node):
        if len(path) > 1 and path[-2] in _SCHEMA_LISTS:
            node[last] = True
        else:
            del node[last]
        return True
    return False


def _drop_dangling(node: Any, root: Any, depth: int) -> bool:
    dropped = False
    if depth > 400:
        return False
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and (
            (ref.startswith("#/") and resolve_ref(ref, root) is None) or _remote_pointer(ref)
        ):
            del node["$ref"]
            dropped = True
        for key, value in node.items():
            if key not in _DATA:
                dropped = _drop_dangling(value, root, depth + 1) or dropped
    elif isinstance(node, list):
        for value in node:
            dropped = _drop_dangling(value, root, depth + 1) or dropped
    return dropped


def _remote_pointer(ref: str) -> bool:
    """A reference to a place inside a document that is never fetched (it resolves to nothing)."""
    return not ref.startswith("#") and "#/" in ref


def describe(error: Any) -> str:
    """What rule `error` broke, in words that never quote the instance."""
    kind = error.kind
    name = type(kind).__name__
    limit = getattr(kind, "limit", None)
    simple = {
        "Minimum": f"must be >= {limit}",
        "Maximum": f"must be <= {limit}",
        "ExclusiveMinimum": f"must be > {limit}",
        "ExclusiveMaximum": f"must be < {limit}",
        "MinLength": f"must have at least {limit} characters",
        "MaxLength": f"must have at most {limit} characters",
        "MinItems": f"must have at least {limit} items",
        "MaxItems": f"must have at most {limit} items",
        "MinProperties": f"must have at least {limit} properties",
        "MaxProperties": f"must have at most {limit} properties",
        "AdditionalItems": f"must have at most {limit} items",
        "UniqueItems": "items must be unique",
        "Contains": "must contain a matching item",
        "FalseSchema": "no value is allowed here",
        "AnyOf": "does not match any of the allowed alternatives (anyOf)",
        "OneOfNotValid": "does not match any alternative (oneOf)",
        "OneOfMultipleValid": "matches more than one alternative (oneOf)",
        "Not": "matches a schema it must not match (not)",
    }
    if name in simple:
        return simple[name]
    if name == "Type":
        return "must be of type " + " or ".join(kind.types)
    if name == "Required":
        return f"{kind.property!r} is required"
    if name in ("AdditionalProperties", "UnevaluatedProperties"):
        return "unexpected propert" + ("ies " if len(kind.unexpected) > 1 else "y ") + _names(kind.unexpected)
    if name == "UnevaluatedItems":
        return "unexpected items"
    if name == "Enum":
        return f"must be one of {_short(kind.options)}"
    if name == "Constant":
        return f"must be {_short(kind.expected_value)}"
    if name == "Pattern":
        return f"must match the pattern {kind.pattern!r}"
    if name == "MultipleOf":
        return f"must be a multiple of {kind.multiple_of}"
    if name == "PropertyNames":
        return "a property name " + describe(kind.error)
    return f"fails {kind.name!r}"


def _names(names: list[str]) -> str:
    return _short(", ".join(repr(n) for n in names[:5]) + (", ..." if len(names) > 5 else ""), quote=False)


def _short(value: object, *, quote: bool = True) -> str:
    text = repr(value) if quote else str(value)
    return text if len(text) <= 120 else text[:117] + "..."


def json_type_ok(value: object, type_name: str) -> bool:
    """Whether `value` has the JSON type `type_name` (1.0 is an integer; booleans are not numbers)."""
    if type_name in ("integer", "number") and isinstance(value, bool):
        return False
    if type_name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    types: dict[str, Any] = {"string": str, "number": (int, float), "boolean": bool, "object": dict}
    types |= {"array": list, "null": type(None)}
    return isinstance(value, types.get(type_name, object))


def pointer_token(key: object) -> str:
    """One JSON pointer token, escaped for a URI fragment."""
    return quote(str(key).replace("~", "~0").replace("/", "~1"), safe="")


def resolve_ref(ref: object, root: object) -> object | None:
    """Resolve a local `$ref` (a JSON pointer into `root`); None when it cannot be resolved."""
    from urllib.parse import unquote

    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    pointer = ref[1:]
    node: object = root
    if not pointer:
        return node
    if not pointer.startswith("/"):
        return None
    for raw in pointer[1:].split("/"):
        token = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


class _Subschemas:
    """Validators for the subschemas of one (2020-12) root, by JSON pointer, compiled on demand."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.registry = jsonschema_rs.Registry(
            [(_ROOT_URI, _bound_patterns(root))], retriever=lambda _uri: {}
        )
        self.validators: dict[str, Any] = {}

    def validator(self, pointer: str, document: str | None) -> Any:
        key = pointer if document is None else "\0" + document
        try:
            return self.validators[key]
        except KeyError:
            pass
        schema = {"$ref": f"{_ROOT_URI}#{pointer}"} if document is None else _absolute(json.loads(document))
        try:
            validator = _compile(schema, lambda _uri: {}, registry=self.registry)
        except _COMPILE_ERRORS:
            validator = None
        if len(self.validators) < 4096:
            self.validators[key] = validator
        return validator


_roots: dict[int, _Subschemas] = {}
_roots_lock = threading.Lock()


def is_valid_at(instance: Any, pointer: str, root: Any, *, document: str | None = None) -> bool | None:
    """Whether `instance` is valid against the subschema of `root` at `pointer` (or against `document`, a
    JSON subschema whose local references point into `root`); None when undecidable."""
    with _roots_lock:
        subschemas = _roots.get(id(root))
        if subschemas is None or subschemas.root is not root:
            try:
                subschemas = _Subschemas(root)
            except _COMPILE_ERRORS:
                return None
            if len(_roots) >= 64:
                _roots.clear()
            _roots[id(root)] = subschemas
        validator = subschemas.validator(pointer, document)
    if validator is None:
        return None
    try:
        return bool(validator.is_valid(instance))
    except (ValueError, RecursionError):
        return None


def is_valid_in(instance: Any, schema: Any, root: Any) -> bool | None:
    """Whether `instance` is valid against `schema`, a subschema (or a rewritten copy of one) whose local
    references point into `root`; None when undecidable."""
    if isinstance(schema, bool):
        return schema
    try:
        key = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return None
    return is_valid_at(instance, "", root, document=key)


def _absolute(node: Any) -> Any:
    """A copy of a subschema with its local `$ref`s pointing into the root document of the registry."""
    if isinstance(node, dict):
        return {
            k: (
                f"{_ROOT_URI}{v}"
                if k == "$ref" and isinstance(v, str) and v.startswith("#")
                else v
                if k in ("enum", "const")
                else _absolute(v)
            )
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_absolute(v) for v in node]
    return node


@functools.lru_cache(maxsize=1024)
def _pattern(pattern: str) -> Any:
    try:
        return _compile({"pattern": pattern}, lambda _uri: {}, bounded=True)
    except _COMPILE_ERRORS:
        return None


def pattern_search(pattern: str, text: str) -> bool | None:
    """Whether the ECMA-262 `pattern` matches somewhere in `text`; None when it cannot be compiled, or when
    it needs backtracking and `text` is longer than such patterns are judged on."""
    compiled = _pattern(pattern)
    if compiled is None or (len(text) > _FANCY_LENGTH and _backtracks(pattern)):
        return None
    return bool(compiled.is_valid(text))
