"""Provider dialects: every exported schema of the corpus and the hard cases obeys each API's rules."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from openai.lib._pydantic import _ensure_strict_json_schema

from cubepi.schema import normalize_schema, provider_schema

from ._harness import corpus, hard_cases

CASES = [c for c in [*hard_cases(), *corpus()] if isinstance(c["schema"], dict)]
IDS = [c["name"] for c in CASES]

_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_VALUES = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")


def nodes(schema: Any, path: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema with its location."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key in _MAPS:
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                yield from nodes(sub, f"{path}/{key}/{name}")
    for key in _LISTS:
        if isinstance(schema.get(key), list):
            for i, sub in enumerate(schema[key]):
                yield from nodes(sub, f"{path}/{key}/{i}")
    for key in _VALUES:
        if isinstance(schema.get(key), dict):
            yield from nodes(schema[key], f"{path}/{key}")


def check_schema(schema: dict[str, Any]) -> None:
    """A valid 2020-12 schema (ECMAScript patterns Python cannot compile are the server's, not ours)."""
    meta = jsonschema.Draft202012Validator.META_SCHEMA
    jsonschema.Draft202012Validator(meta).validate(schema)


STRICT_KEYS = {
    "type", "description", "title", "properties", "required", "additionalProperties", "items", "enum",
    "const", "anyOf", "$ref", "$defs", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
}  # fmt: skip
STRICT_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_openai_strict(case: dict[str, Any]) -> None:
    original = copy.deepcopy(case["schema"])
    strict = provider_schema(case["schema"], "openai-strict")
    assert case["schema"] == original, "provider_schema mutated its input"
    check_schema(strict)
    # the openai package's own helper finds nothing to fix
    again = copy.deepcopy(strict)
    assert _ensure_strict_json_schema(again, path=(), root=again) == strict
    assert strict["type"] == "object" and "anyOf" not in strict
    defs = strict.get("$defs", {})
    for where, node in nodes(strict):
        assert set(node) <= STRICT_KEYS, f"{where}: {set(node) - STRICT_KEYS}"
        assert any(k in node for k in ("type", "anyOf", "$ref", "enum", "const")), where
        if "$ref" in node:
            assert set(node) == {"$ref"}, f"{where}: $ref with siblings"
            ref = node["$ref"]
            assert ref == "#" or (ref.startswith("#/$defs/") and ref[8:] in defs), where
        kinds = node.get("type")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if "object" in kinds:
            assert isinstance(node.get("properties"), dict), where
            assert node.get("additionalProperties") is False, where
            assert node.get("required") == list(node["properties"]), where
        if "format" in node:
            assert node["format"] in STRICT_FORMATS, where
    assert len(json.dumps(strict)) < 120_000


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_anthropic(case: dict[str, Any]) -> None:
    out = provider_schema(case["schema"], "anthropic")
    check_schema(out)
    assert out["type"] == "object"
    assert not {"anyOf", "oneOf", "allOf"} & set(out), "no combinators at the top level"
    for where, node in nodes(out):
        assert not isinstance(node.get("type"), list), f"{where}: array-valued type"


GEMINI_KEYS = {
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties",
    "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf",
    "propertyOrdering", "default", "items", "minimum", "maximum",
}  # fmt: skip
GEMINI_TYPES = {"string", "number", "integer", "boolean", "array", "object"}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gemini(case: dict[str, Any]) -> None:
    out = provider_schema(case["schema"], "gemini")
    assert out["type"] == "object"
    assert "$ref" not in json.dumps(out) or all("$ref" not in n for _, n in nodes(out))
    for where, node in nodes(out):
        assert set(node) <= GEMINI_KEYS, f"{where}: {set(node) - GEMINI_KEYS}"
        if "type" in node:
            assert node["type"] in GEMINI_TYPES, f"{where}: type {node['type']!r}"
        if "enum" in node:
            assert node.get("type") == "string" and all(isinstance(v, str) for v in node["enum"]), where
        if "required" in node:
            assert set(node["required"]) <= set(node.get("properties", {})), where
        if node.get("type") == "array":
            assert isinstance(node.get("items"), dict), f"{where}: arrays need items"


def test_type_array_becomes_any_of_with_the_same_meaning() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": ["string", "integer"], "minLength": 2, "minimum": 3}},
    }
    out = provider_schema(schema, "anthropic")["properties"]["a"]
    assert out == {"anyOf": [{"type": "string", "minLength": 2}, {"type": "integer", "minimum": 3}]}
    check = jsonschema.Draft202012Validator(out)
    for value in ["ab", "a", 3, 2, 1.5, None]:
        assert check.is_valid(value) == jsonschema.Draft202012Validator(schema["properties"]["a"]).is_valid(
            value
        )


def test_gemini_inlines_refs_and_cuts_recursion() -> None:
    schema = {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/N"}},
        "$defs": {
            "N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}, "v": {"type": "integer"}}}
        },
    }
    out = provider_schema(schema, "gemini")
    assert "$defs" not in out and "$ref" not in json.dumps(out)
    depth, node = 0, out["properties"]["node"]
    while "properties" in node:
        node, depth = node["properties"]["next"], depth + 1
    assert 2 <= depth <= 5 and node["type"] == "object"


def test_openai_strict_keeps_recursion_as_defs() -> None:
    schema = {
        "type": "object",
        "properties": {"next": {"$ref": "#"}, "v": {"type": "integer"}},
        "required": ["v"],
    }
    strict = provider_schema(schema, "openai-strict")
    assert strict["required"] == ["next", "v"]
    assert strict["properties"]["next"] == {"anyOf": [{"$ref": "#"}, {"type": "null"}]}


def test_plain_openai_is_the_normalized_schema() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "properties": {"a": {"type": "string"}},
    }
    out = provider_schema(schema, "openai")
    assert out == {k: v for k, v in normalize_schema(schema).items() if k != "$schema"}
