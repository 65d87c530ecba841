"""`normalize_schema`: the repairs of loose schemas, each keeping what a valid schema accepts."""

from __future__ import annotations

from typing import Any

import pytest

from cubepi.errors import SchemaError
from cubepi.schema import normalize_schema

DRAFT7 = "http://json-schema.org/draft-07/schema#"


@pytest.mark.parametrize("schema", [None, True])
def test_no_schema_or_true_is_an_empty_object(schema: Any) -> None:
    assert normalize_schema(schema) == {"type": "object", "properties": {}}


def test_false_accepts_nothing() -> None:
    assert normalize_schema(False) == {"type": "object", "properties": {}, "not": {}}


@pytest.mark.parametrize("schema", [[], "object", 3, {"type": "string"}])
def test_what_is_not_an_object_schema_raises_naming_the_tool(schema: Any) -> None:
    with pytest.raises(SchemaError, match="'t'"):
        normalize_schema(schema, tool_name="t")


def test_loose_property_schemas_are_repaired() -> None:
    fixed = normalize_schema({"properties": {"a": "string", "b": "Int", "c": 5, "d": ["x"], "e": False}})
    assert fixed["properties"] == {
        "a": {"type": "string"},
        "b": {"type": "integer"},
        "c": {},
        "d": {},
        "e": False,
    }


def test_legacy_drafts_become_2020_12_and_drop_keywords_beside_ref() -> None:
    schema = {
        "$schema": DRAFT7,
        "properties": {
            "a": {"$ref": "#/definitions/s", "type": "integer", "description": "d"},
            "t": {"type": "array", "items": [{"type": "string"}], "additionalItems": False},
        },
        "definitions": {"s": {"type": "string"}},
    }
    fixed = normalize_schema(schema)
    assert fixed["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert fixed["properties"]["a"] == {"$ref": "#/definitions/s", "description": "d"}
    assert fixed["properties"]["t"] == {"type": "array", "prefixItems": [{"type": "string"}], "items": False}


def test_keywords_beside_ref_stay_in_2020_12() -> None:
    schema = {"properties": {"a": {"$ref": "#/$defs/s", "minLength": 2}}, "$defs": {"s": {"type": "string"}}}
    assert normalize_schema(schema)["properties"]["a"] == {"$ref": "#/$defs/s", "minLength": 2}
    declared = {"$schema": "https://json-schema.org/draft/2019-09/schema", **schema}
    assert normalize_schema(declared)["$schema"] == "https://json-schema.org/draft/2019-09/schema"


def test_draft4_exclusive_bounds_and_dependencies() -> None:
    fixed = normalize_schema(
        {
            "properties": {"n": {"type": "number", "minimum": 1, "exclusiveMinimum": True, "maximum": 5}},
            "dependencies": {"a": ["b", 3], "c": {"required": ["d"]}},
        }
    )
    assert fixed["properties"]["n"] == {"type": "number", "exclusiveMinimum": 1, "maximum": 5}
    assert fixed["dependentRequired"] == {"a": ["b"]}
    assert fixed["dependentSchemas"] == {"c": {"required": ["d"], "properties": {"d": {}}}}


def test_required_names_outside_properties() -> None:
    fixed = normalize_schema(
        {"properties": {}, "required": ["x", "x", 3], "additionalProperties": {"type": "integer"}}
    )
    assert fixed["required"] == ["x"] and fixed["properties"]["x"] == {"type": "integer"}
    closed = normalize_schema({"properties": {}, "required": ["x"], "additionalProperties": False})
    assert "required" not in closed
    patterned = normalize_schema(
        {"properties": {}, "required": ["x1"], "patternProperties": {"^x\\d$": {"type": "string"}}}
    )
    assert patterned["properties"]["x1"] == {} and patterned["required"] == ["x1"]


def test_bounds_that_hold_are_kept_and_broken_ones_dropped() -> None:
    props = {
        "s": {"type": "string", "maxLength": 0, "minLength": 0},
        "a": {"type": "array", "minItems": 0, "maxItems": 1e30},
        "m": {"type": "number", "multipleOf": 0.5},
        "z": {"type": "number", "multipleOf": 0},
        "t": {"type": "INT"},
        "u": {"type": ["String", "null", "str"]},
    }
    fixed = normalize_schema({"properties": props})["properties"]
    assert fixed["s"] == {"type": "string", "maxLength": 0, "minLength": 0}
    assert fixed["a"] == {"type": "array", "minItems": 0}
    assert fixed["m"]["multipleOf"] == 0.5 and "multipleOf" not in fixed["z"]
    assert fixed["t"] == {"type": "integer"} and fixed["u"] == {"type": ["string", "null"]}


def test_null_maps_become_empty_and_unknown_keywords_stay_verbatim() -> None:
    meta = {"k": "int", "n": 5, "l": [1]}
    fixed = normalize_schema(
        {"properties": {"o": {"type": "object", "properties": None, "x-meta": meta}}, "$defs": None}
    )
    assert fixed["properties"]["o"] == {"type": "object", "properties": {}, "x-meta": meta}
    assert fixed["$defs"] == {}


def test_past_200_levels_a_subschema_is_the_permissive_empty_schema() -> None:
    for wrap in (lambda s: {"properties": {"a": s}}, lambda s: {"allOf": [s]}):
        schema: Any = {"type": "string"}
        for _ in range(230):
            schema = wrap(schema)
        node: Any = normalize_schema(schema)
        depth = 0
        while node != {}:
            node = node["properties"]["a"] if node.get("properties") else node["allOf"][0]
            depth += 1
        assert depth == 201  # the root, then 200 levels kept
