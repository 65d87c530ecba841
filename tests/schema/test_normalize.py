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
