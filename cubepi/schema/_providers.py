"""Per-provider schema dialects: what each LLM API accepts, keeping the meaning for the model.

These rewrites change only what the LLM is shown. cubepi still validates a call against the server's own
schema and sends the server's wire form, so a constraint a provider cannot express is moved into the
description (the LLM still reads it) rather than lost, and never enforced differently.

- ``"openai"``: the schema as is (minus ``$schema``).
- ``"openai-strict"``: every object has `properties`, ``additionalProperties: false`` and all properties
  required, optional ones made nullable (cubepi drops those nulls again before sending); `$ref`s inlined,
  recursive ones kept as ``$ref`` into ``$defs``; ``oneOf`` -> ``anyOf``; ``allOf`` merged; keywords strict
  mode rejects moved into descriptions; a schema without a type becomes a recursive "any JSON value".
- ``"anthropic"``: type arrays -> ``anyOf``; the top level is a plain object.
- ``"gemini"``: the OpenAPI subset: no ``$schema``/``$ref``/``$defs``/``additionalProperties``, `$ref`s
  inlined (recursion cut at a depth with a permissive object), type arrays -> ``nullable`` or ``anyOf``,
  enums of strings only, the rest moved into descriptions.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any, Literal

from ._normalize import normalize_schema
from ._validator import is_valid_in, json_type_ok, resolve_ref

__all__ = ["Provider", "provider_schema"]

Provider = Literal["anthropic", "openai", "openai-strict", "gemini"]

Schema = dict[str, Any]
_ANNOTATION_KEYS = ("title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly")
_MAPS = ("properties", "patternProperties", "dependentSchemas")
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_VALUES = (
    "items",
    "additionalProperties",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
)
_TYPE_KEYS = {
    "string": {"minLength", "maxLength", "pattern", "format", "contentEncoding", "contentMediaType"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "array": {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "minContains"}
    | {"maxContains", "unevaluatedItems"},
    "object": {"properties", "required", "additionalProperties", "patternProperties", "propertyNames"}
    | {"minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "unevaluatedProperties"},
}
_TYPE_KEYS["integer"] = _TYPE_KEYS["number"]
_ALL_TYPE_KEYS = set().union(*_TYPE_KEYS.values())


def provider_schema(schema: dict[str, Any], provider: Provider) -> dict[str, Any]:
    """Rewrite a tool's argument schema for one LLM API; the input is never mutated."""
    normalized = normalize_schema(schema)
    if provider == "openai":
        normalized.pop("$schema", None)
        return normalized
    if provider == "anthropic":
        return _anthropic(normalized)
    if provider == "openai-strict":
        return _OpenAIStrict(normalized).run()
    if provider == "gemini":
        return _gemini(normalized)
    raise ValueError(f"unknown provider {provider!r}")


# -- shared pieces ---------------------------------------------------------------------------------------


def _describe(node: Schema, note: str) -> None:
    """Append a constraint the provider cannot express to the node's description."""
    text = node.get("description")
    node["description"] = f"{text} ({note})" if isinstance(text, str) and text else note


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= 400 else text[:397] + "..."


def _split_types(node: Schema) -> Schema:
    """``{"type": [a, b], ...}`` -> ``{"anyOf": [{"type": a, ...}, {"type": b, ...}]}`` (same meaning)."""
    kinds = node.get("type")
    if not isinstance(kinds, list):
        return node
    if len(kinds) == 1:
        return {**node, "type": kinds[0]}
    outer: Schema = {k: node[k] for k in ("title", "description", "default") if k in node}
    rest = {k: v for k, v in node.items() if k not in outer and k != "type"}
    branches = []
    for kind in kinds:
        keep = _TYPE_KEYS.get(kind, set())
        branch = {k: v for k, v in rest.items() if k not in _ALL_TYPE_KEYS or k in keep}
        if "enum" in branch and isinstance(branch["enum"], list):
            branch["enum"] = [v for v in branch["enum"] if json_type_ok(v, kind)]
        branch["type"] = kind
        branches.append(branch)
    return {"anyOf": branches, **outer}


def _map_children(node: Schema, visit: Callable[[Any], Any]) -> Schema:
    """A copy of `node` with `visit` applied to every direct subschema."""
    out = dict(node)
    for key in _MAPS:
        if isinstance(node.get(key), dict):
            out[key] = {k: visit(v) for k, v in node[key].items()}
    for key in _LISTS:
        if isinstance(node.get(key), list):
            out[key] = [visit(v) for v in node[key]]
    for key in _VALUES:
        if isinstance(node.get(key), dict):
            out[key] = visit(node[key])
    return out


def _merge(left: Schema, right: Schema) -> Schema:
    """An approximate intersection of two schemas (for ``allOf``): properties unioned, required unioned."""
    out = dict(left)
    for key, value in right.items():
        if key not in out:
            out[key] = value
        elif key == "properties" and isinstance(value, dict) and isinstance(out[key], dict):
            props = dict(out[key])
            for name, sub in value.items():
                props[name] = _merge(props[name], sub) if isinstance(props.get(name), dict) else sub
            out[key] = props
        elif key == "required" and isinstance(value, list) and isinstance(out[key], list):
            out[key] = list(dict.fromkeys([*out[key], *value]))
        elif key == "description" and value != out[key]:
            out[key] = f"{out[key]} {value}"
        elif key in ("minimum", "minLength", "minItems", "exclusiveMinimum") and _num(value, out[key]):
            out[key] = max(out[key], value)
        elif key in ("maximum", "maxLength", "maxItems", "exclusiveMaximum") and _num(value, out[key]):
            out[key] = min(out[key], value)
        elif value != out[key]:
            _describe(out, f"also: {_short({key: value})}")
    return out


def _num(*values: object) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


class _Inliner:
    """Inline `$ref`s and merge ``allOf``; `on_cycle` decides what a recursive reference becomes."""

    def __init__(self, root: Schema, on_cycle: Callable[[str, Schema, int], Any], max_repeat: int = 0):
        self.root = root
        self.on_cycle = on_cycle
        self.max_repeat = max_repeat
        self.stack: list[int] = []

    def visit(self, node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = resolve_ref(ref, self.root)
            rest = {k: v for k, v in node.items() if k != "$ref"}
            if not isinstance(target, dict):
                _describe(rest, f"refers to {ref}")
                return self.visit(rest)
            repeats = self.stack.count(id(target))
            if repeats > self.max_repeat or len(self.stack) > 64:
                return self.on_cycle(ref, rest, repeats)
            self.stack.append(id(target))
            try:
                inlined = self.visit({k: v for k, v in target.items() if k not in ("$defs", "definitions")})
                return _merge(self.visit(rest), inlined) if rest else inlined
            finally:
                self.stack.pop()
        out = _map_children(node, self.visit)
        all_of = out.pop("allOf", None)
        if isinstance(all_of, list):
            for branch in all_of:
                if isinstance(branch, dict):
                    out = _merge(out, branch)
        out.pop("$defs", None)
        out.pop("definitions", None)
        return out


def _flatten_root(node: Schema) -> Schema:
    """Top-level ``anyOf``/``oneOf`` (which APIs refuse at the top) folded into one object schema."""
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if not isinstance(branches, list):
            continue
        del node[key]
        objects = [b for b in branches if isinstance(b, dict)]
        props: dict[str, Any] = dict(node.get("properties") or {})
        required_sets = []
        for branch in objects:
            for name, sub in (branch.get("properties") or {}).items():
                if name in props and props[name] != sub:
                    props[name] = {"anyOf": [props[name], sub]}
                else:
                    props.setdefault(name, sub)
            required_sets.append(set(branch.get("required") or []))
        node["properties"] = props
        common = set.intersection(*required_sets) if required_sets else set()
        required = list(dict.fromkeys([*(node.get("required") or []), *sorted(common)]))
        if required:
            node["required"] = required
        note = "exactly one" if key == "oneOf" else "at least one"
        _describe(node, f"the arguments must match {note} of these shapes: {_short(branches)}")
    node["type"] = "object"
    return node


# -- Anthropic -------------------------------------------------------------------------------------------


def _anthropic(schema: Schema) -> Schema:
    schema.pop("$schema", None)

    def visit(node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        out = _map_children(node, visit)
        for key in ("$defs", "definitions"):
            if isinstance(out.get(key), dict):
                out[key] = {k: visit(v) for k, v in out[key].items()}
        return _split_types(out)

    out = visit(schema)
    if any(k in out for k in ("anyOf", "oneOf", "allOf")):
        inlined = _Inliner(out, lambda ref, rest, n: {"$ref": ref, **rest}, 0).visit(
            {k: v for k, v in out.items() if k not in ("$defs", "definitions")}
        )
        out = {**_flatten_root(inlined), **{k: out[k] for k in ("$defs", "definitions") if k in out}}
    out["type"] = "object"
    out.setdefault("properties", {})
    return dict(out)


# -- OpenAI strict ---------------------------------------------------------------------------------------

_STRICT_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
_STRICT_KEEP = {
    "type",
    "description",
    "title",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
}
_ANY_NAME = "CubepiJsonValue"
_ANY_DEF: Schema = {
    "description": "any JSON value",
    "anyOf": [
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "array", "items": {"$ref": f"#/$defs/{_ANY_NAME}"}},
    ],
}


class _OpenAIStrict:
    """The strict-mode rewrite: one pass inlining refs, then one pass applying the strict rules."""

    def __init__(self, schema: Schema) -> None:
        schema.pop("$schema", None)
        self.root = schema
        self.defs: dict[str, Any] = {}
        self.names: dict[int, str] = {}
        self.pending: list[tuple[str, Schema]] = []
        self.refs: dict[str, str] = {}
        self.uses_any = False

    def run(self) -> Schema:
        body = {k: v for k, v in self.root.items() if k not in ("$defs", "definitions")}
        inliner = _Inliner(self.root, self._cycle)
        inliner.stack.append(id(self.root))
        flat = inliner.visit(body)
        out = self.strict(_flatten_root(flat))
        while self.pending:
            name, target = self.pending.pop()
            inliner = _Inliner(self.root, self._cycle)
            inliner.stack.append(id(target))
            self.defs[name] = self.strict(inliner.visit(target))
        if self.uses_any:
            self.defs[_ANY_NAME] = copy.deepcopy(_ANY_DEF)
        if self.defs:
            out["$defs"] = self.defs
        return out

    def _cycle(self, ref: str, rest: Schema, repeats: int) -> Schema:
        if ref == "#":
            return {"$ref": "#", **rest}
        target = resolve_ref(ref, self.root)
        assert isinstance(target, dict)
        name = self.names.get(id(target))
        if name is None:
            base = (
                "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in ref.rsplit("/", 1)[-1]) or "Def"
            )
            name, n = base, 2
            while name in self.names.values() or name == _ANY_NAME:
                name, n = f"{base}_{n}", n + 1
            self.names[id(target)] = name
            self.pending.append((name, target))
        self.refs[ref] = f"#/$defs/{name}"
        return {"$ref": ref, **rest}

    def strict(self, node: Any) -> Schema:
        if not isinstance(node, dict) or not node:
            self.uses_any = True
            return {"$ref": f"#/$defs/{_ANY_NAME}"}
        if "$ref" in node:
            ref_only = {"$ref": self.refs.get(node["$ref"], node["$ref"])}
            extras = {k: v for k, v in node.items() if k in ("description", "title")}
            return {"anyOf": [ref_only], **extras} if extras else ref_only
        out: Schema = {}
        notes: list[str] = []
        for key, value in node.items():
            if key in _STRICT_KEEP:
                out[key] = value
            elif key == "oneOf":
                out.setdefault("anyOf", value)
                notes.append("exactly one alternative must match")
            elif key == "prefixItems":
                notes.append(f"items by position: {_short(value)}")
            elif key == "default":
                notes.append(f"default: {_short(value)}")
            elif key in ("examples", "deprecated", "readOnly", "writeOnly", "$comment", "$id", "$anchor"):
                continue
            else:
                notes.append(_short({key: value}))
        if isinstance(out.get("format"), str) and out["format"] not in _STRICT_FORMATS:
            notes.append(f"format: {out.pop('format')}")
        kind = out.get("type")
        kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
        if "object" in kinds or ("properties" in out and not kinds):
            self._object(out, notes, node)
        if "array" in kinds:
            items = out.get("items")
            prefix = node.get("prefixItems")
            if isinstance(prefix, list) and prefix:
                items = {"anyOf": [*prefix, *([items] if isinstance(items, dict) else [])]}
            out["items"] = self.strict(items if items is not False else {})
        else:
            out.pop("items", None)
        if isinstance(out.get("anyOf"), list):
            out["anyOf"] = [self.strict(b) for b in out["anyOf"]]
        if not kinds and not any(k in out for k in ("anyOf", "enum", "const", "$ref")):
            self.uses_any = True
            out["anyOf"] = [{"$ref": f"#/$defs/{_ANY_NAME}"}]
        if isinstance(out.get("enum"), list) and any(isinstance(v, (dict, list)) for v in out["enum"]):
            notes.append(f"also allowed: {_short([v for v in out['enum'] if isinstance(v, (dict, list))])}")
            out["enum"] = [v for v in out["enum"] if not isinstance(v, (dict, list))]
        if "enum" in out and not kinds and isinstance(out["enum"], list):
            out["type"] = _enum_types(out["enum"])
        for note in notes:
            _describe(out, note)
        return out

    def _object(self, out: Schema, notes: list[str], node: Schema) -> None:
        props = out.get("properties")
        props = props if isinstance(props, dict) else {}
        required = node.get("required")
        required = set(required) if isinstance(required, list) else set()
        extra = out.get("additionalProperties")
        if extra not in (None, False, True) or (extra is True and not props):
            notes.append(f"other properties: {_short(extra)}")
        fixed: dict[str, Any] = {}
        for name, sub in props.items():
            converted = self.strict(sub)
            if name not in required and is_valid_in(None, sub, self.root) is False:
                converted = _nullable(converted)
            fixed[name] = converted
        out["type"] = out.get("type", "object")
        out["properties"] = fixed
        out["required"] = list(fixed)
        out["additionalProperties"] = False
        optional = [n for n in fixed if n not in required]
        if optional:
            notes.append("null means omitted for: " + ", ".join(optional))


def _enum_types(values: list[Any]) -> list[str] | str:
    names = []
    for value in values:
        for kind in ("null", "boolean", "integer", "number", "string", "array", "object"):
            if json_type_ok(value, kind):
                if kind not in names:
                    names.append(kind)
                break
    return names[0] if len(names) == 1 else names


def _nullable(node: Schema) -> Schema:
    """The node, also accepting null (for a strict-mode optional property)."""
    kind = node.get("type")
    simple = not any(k in node for k in ("anyOf", "$ref"))
    if simple and isinstance(kind, str):
        out = {**node, "type": [kind, "null"]}
    elif simple and isinstance(kind, list):
        out = {**node, "type": [*kind, "null"] if "null" not in kind else kind}
    else:
        outer: Schema = {k: node[k] for k in ("description", "title") if k in node}
        inner = {k: v for k, v in node.items() if k not in outer}
        return {"anyOf": [inner, {"type": "null"}], **outer}
    if isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    if "const" in out:
        out["enum"] = [out.pop("const"), None]
    return out


# -- Gemini ----------------------------------------------------------------------------------------------

_GEMINI_KEEP = {
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
}
_GEMINI_DEPTH = 3


def _gemini(schema: Schema) -> Schema:
    schema.pop("$schema", None)

    def cut(ref: str, rest: Schema, repeats: int) -> Schema:
        out = {"type": "object", **{k: v for k, v in rest.items() if k in ("description", "title")}}
        _describe(out, f"a nested {ref.rsplit('/', 1)[-1]} (recursive, shape not shown)")
        return out

    body = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
    flat = _Inliner(schema, cut, _GEMINI_DEPTH).visit(body)
    out = _gemini_node(_flatten_root(flat))
    out["type"] = "object"
    return out


def _gemini_node(node: Any) -> Schema:
    if not isinstance(node, dict):
        return {}
    out: Schema = {}
    notes: list[str] = []
    for key, value in node.items():
        if key in _GEMINI_KEEP:
            out[key] = value
        elif key == "oneOf":
            out.setdefault("anyOf", value)
        elif key == "const":
            out["enum"] = [value]
        elif key == "exclusiveMinimum":
            notes.append(f"> {value}")
        elif key == "exclusiveMaximum":
            notes.append(f"< {value}")
        elif key == "prefixItems":
            out.setdefault("items", {"anyOf": value} if value else {})
            notes.append(f"items by position: {_short(value)}")
        elif key in ("examples", "$comment", "$id", "$anchor", "deprecated", "readOnly", "writeOnly") or (
            key == "additionalProperties" and value in (True, False)
        ):
            continue
        else:
            notes.append(_short({key: value}))
    kind = out.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) < len(kind):
            out["nullable"] = True
        if len(kinds) == 1:
            out["type"] = kinds[0]
        else:
            rest = {k: v for k, v in out.items() if k not in ("type", "description", "title", "nullable")}
            branches = [_gemini_node({**rest, "type": k}) for k in kinds]
            out = {k: out[k] for k in ("description", "title", "nullable") if k in out}
            if branches:
                out["anyOf"] = branches
            else:
                _describe(out, "always null")
    elif kind == "null":
        del out["type"]
        out["nullable"] = True
        _describe(out, "always null")
    if isinstance(out.get("enum"), list):
        values = out["enum"]
        if None in values:
            out["nullable"] = True
        strings = [v for v in values if isinstance(v, str)]
        if len(strings) == len([v for v in values if v is not None]) and strings:
            out["enum"] = strings
            out["type"] = "string"
        else:
            del out["enum"]
            notes.append(f"one of {_short(values)}")
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: _gemini_node(v) for k, v in out["properties"].items()}
        if not out["properties"]:
            del out["properties"]
        if isinstance(out.get("required"), list):
            out["required"] = [r for r in out["required"] if r in out.get("properties", {})]
            if not out["required"]:
                del out["required"]
    else:
        out.pop("required", None)
    if "items" in out or out.get("type") == "array":
        items = out.get("items")
        out["items"] = _gemini_node(items) if isinstance(items, dict) else {}
    if isinstance(out.get("anyOf"), list):
        out["anyOf"] = [_gemini_node(b) for b in out["anyOf"]]
    for note in notes:
        _describe(out, note)
    return out
