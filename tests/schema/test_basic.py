"""Ordinary schemas: the model's fields, validation without coercion, and the wire arguments."""

from __future__ import annotations

import pydantic
import pytest

from cubepi.errors import SchemaError
from cubepi.schema import normalize_schema, schema_to_model, to_arguments

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Where to read"},
        "limit": {"type": "integer", "minimum": 1, "default": 10},
        "ratio": {"type": "number"},
        "mode": {"enum": ["r", "w"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "options": {
            "type": "object",
            "properties": {"deep": {"type": "boolean"}, "label": {"type": ["string", "null"]}},
            "required": ["deep"],
            "additionalProperties": False,
        },
    },
    "required": ["path"],
}


def test_fields_and_wire_arguments() -> None:
    model = schema_to_model(SCHEMA, name="read_file")
    assert set(model.model_fields) == {"path", "limit", "ratio", "mode", "tags", "options"}
    assert model.model_fields["path"].is_required()
    assert model.model_fields["limit"].default == 10
    params = model.model_validate({"path": "a", "options": {"deep": True, "label": None}})
    assert params.limit == 10  # type: ignore[attr-defined]
    assert to_arguments(params) == {"path": "a", "options": {"deep": True, "label": None}}


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {"path": 1},
        {"path": "a", "limit": "1"},
        {"path": "a", "limit": True},
        {"path": "a", "limit": 0},
        {"path": "a", "ratio": "1.5"},
        {"path": "a", "mode": "x"},
        {"path": "a", "tags": ["a", 1]},
        {"path": "a", "options": {"deep": True, "other": 1}},
    ],
)
def test_rejects_what_the_schema_rejects(bad: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        schema_to_model(SCHEMA, name="t").model_validate(bad)


def test_integral_float_is_an_integer() -> None:
    params = schema_to_model(SCHEMA, name="t").model_validate({"path": "a", "limit": 2.0})
    assert to_arguments(params) == {"path": "a", "limit": 2}


def test_unusable_schema_names_the_tool() -> None:
    with pytest.raises(SchemaError) as info:
        schema_to_model(["not", "a", "schema"], name="broken")
    assert info.value.tool_name == "broken"
    assert "broken" in str(info.value)


def test_normalize_never_mutates() -> None:
    loose = {"properties": None, "required": ["x"]}
    before = repr(loose)
    fixed = normalize_schema(loose)
    assert repr(loose) == before
    assert fixed == {"type": "object", "properties": {"x": {}}, "required": ["x"]}


def test_model_json_schema_is_the_server_schema() -> None:
    assert schema_to_model(SCHEMA, name="t").model_json_schema() == normalize_schema(SCHEMA)


def test_draft3_required_flags_become_required_names() -> None:
    loose = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "required": True},
            "mode": {"type": "string", "required": False},
            "inner": {
                "type": "object",
                "properties": {"deep": {"type": "boolean", "required": True}},
            },
        },
    }
    fixed = normalize_schema(loose)
    assert fixed["required"] == ["path"]
    assert fixed["properties"]["inner"]["required"] == ["deep"]
    assert "required" not in fixed["properties"]["path"]
    assert "required" not in fixed["properties"]["mode"]
    model = schema_to_model(loose, name="t")
    with pytest.raises(pydantic.ValidationError, match="path"):
        model.model_validate({})
    with pytest.raises(pydantic.ValidationError, match="deep"):
        model.model_validate({"path": "a", "inner": {}})
    assert to_arguments(model.model_validate({"path": "a"})) == {"path": "a"}
