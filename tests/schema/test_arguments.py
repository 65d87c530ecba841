"""`to_arguments`: nothing converted, and the one documented null rule, exactly where it applies."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from cubepi.schema import normalize_schema, schema_to_model, to_arguments


def _sent(schema: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    model = schema_to_model({"type": "object", **schema}, name="t")
    return to_arguments(model.model_validate(data))


def _refused(schema: dict[str, Any], data: dict[str, Any]) -> bool:
    try:
        _sent(schema, data)
    except pydantic.ValidationError:
        return True
    return False


def test_json_types_are_kept_on_the_way() -> None:
    assert _refused({"properties": {"e": {"enum": [False]}}}, {"e": 0})
    assert _refused({"properties": {"e": {"enum": [False]}}}, {"e": 0.0})
    assert _refused({"properties": {"c": {"const": True}}}, {"c": 1})
    assert _refused({"properties": {"e": {"enum": [0, 1]}}}, {"e": False})
    assert _sent({"properties": {"e": {"enum": [False, 0]}}}, {"e": 0}) == {"e": 0}
    assert _sent({"properties": {"e": {"enum": [False, 0]}}}, {"e": False}) == {"e": False}
    sent = _sent({"properties": {"i": {"type": "integer"}}}, {"i": 1.0})
    assert sent == {"i": 1} and type(sent["i"]) is int  # the one documented conversion


def test_a_null_the_schema_allows_is_sent_as_given() -> None:
    schema = {"properties": {"s": {"type": ["string", "null"]}, "t": {"type": "string"}}}
    assert _sent(schema, {"s": None}) == {"s": None}
    assert _sent(schema, {"t": None}) == {}
    assert _refused({**schema, "required": ["t"]}, {"t": None})


def test_a_null_under_an_additional_properties_value_is_dropped() -> None:
    schema = {"additionalProperties": {"type": "object", "properties": {"x": {"type": "string"}}}}
    assert _sent(schema, {"k": {"x": None}}) == {"k": {}}
    assert _sent(schema, {"k": {"x": "v"}}) == {"k": {"x": "v"}}


def test_keywords_beside_a_ref_are_followed() -> None:
    schema = {
        "properties": {"a": {"$ref": "#/$defs/o", "properties": {"y": {"type": "string"}}}},
        "$defs": {"o": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
    assert _sent(schema, {"a": {"x": 1, "y": None}}) == {"a": {"x": 1}}
    assert _sent(schema, {"a": {"x": None, "y": "s"}}) == {"a": {"y": "s"}}


def test_the_union_fold_takes_the_first_branch_that_fits() -> None:
    closed = {"additionalProperties": False}
    schema = {
        "properties": {
            "u": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                        **closed,
                    },
                    {
                        "type": "object",
                        "properties": {"a": {"type": "string"}, "b": {"type": ["string", "null"]}, "d": {}},
                        **closed,
                    },
                    {"type": "object", "properties": {"c": {"type": "string"}}},
                ]
            }
        }
    }
    assert _sent(schema, {"u": {"a": "x", "b": None, "c": None}}) == {"u": {"a": "x"}}


def test_the_union_fold_keeps_a_value_one_branch_accepts() -> None:
    schema = {"properties": {"u": {"oneOf": [{"type": "null"}, {"type": "object", "properties": {"a": {}}}]}}}
    assert _sent(schema, {"u": None}) == {"u": None}
    assert _sent(schema, {"u": {"a": None}}) == {"u": {"a": None}}


def test_items_and_prefix_items_guide_the_null_rule() -> None:
    item = {"type": "object", "properties": {"x": {"type": "string"}}}
    schema = {"properties": {"xs": {"type": "array", "prefixItems": [{"type": "object"}], "items": item}}}
    assert _sent(schema, {"xs": [{"x": None}, {"x": None}]}) == {"xs": [{"x": None}, {}]}


@pytest.mark.parametrize(
    ("key", "value", "kept"),
    [("maxLength", 2.5, None), ("maxLength", 3.0, 3), ("minItems", -1, None), ("maxLength", "4", 4)],
)
def test_counts_must_be_non_negative_integers(key: str, value: Any, kept: Any) -> None:
    fixed = normalize_schema({"properties": {"s": {"type": "string", key: value}}})["properties"]["s"]
    assert fixed.get(key) == kept and (kept is None or type(fixed[key]) is int)


def test_error_messages_name_the_path_and_rule_never_the_value() -> None:
    model = schema_to_model(
        {"type": "object", "properties": {"token": {"type": "string", "pattern": "^x"}, "n": {"minimum": 3}}},
        name="t",
    )
    with pytest.raises(pydantic.ValidationError) as caught:
        model.model_validate({"token": "sk-secret-value"})
    message = caught.value.errors()[0]["msg"]
    assert message == "token: must match the pattern '^x'"  # Pydantic's own repr shows the input, as always
    with pytest.raises(pydantic.ValidationError) as caught:
        model.model_validate({"n": 1})
    assert caught.value.errors()[0]["msg"] == "n: must be >= 3"


def test_the_null_rule_follows_all_of_branches() -> None:
    schema = {"properties": {"a": {"allOf": [{"type": "object", "properties": {"x": {"type": "string"}}}]}}}
    assert _sent(schema, {"a": {"x": None, "y": None}}) == {"a": {"y": None}}


def test_the_null_rule_survives_a_reference_that_resolves_nowhere() -> None:
    schema = {"properties": {"a": {"$ref": "#/$defs/missing", "properties": {"x": {"type": "string"}}}}}
    assert _sent(schema, {"a": {"x": None}}) == {"a": {}}


def test_the_null_rule_reaches_deep_arguments() -> None:
    leaf: dict[str, Any] = {"type": "object", "properties": {"s": {"type": "string"}}}
    value: dict[str, Any] = {"s": None}
    for _ in range(120):
        leaf = {"type": "object", "properties": {"a": leaf}}
        value = {"a": value}
    sent = _sent(leaf, value)
    for _ in range(120):
        sent = sent["a"]
    assert sent == {}


def test_the_union_fold_follows_references_to_the_branches() -> None:
    def closed(name: str) -> dict[str, Any]:
        props = {name: {"type": "string"}}
        return {"type": "object", "properties": props, "required": [name], "additionalProperties": False}

    # strict mode's fold of a top-level union: one object with every branch's keys
    schema = {
        "anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}],
        "$defs": {"A": closed("path"), "B": closed("url")},
    }
    assert _sent(schema, {"path": "/a", "url": None}) == {"path": "/a"}
    assert _sent(schema, {"path": None, "url": "https://x"}) == {"url": "https://x"}


def test_wire_names_go_out_and_boolean_subschemas_are_walked() -> None:
    schema = {"properties": {"class": {"type": "string"}, "with-dash": True, "n": {"type": "integer"}}}
    assert _sent(schema, {"class": "a", "with-dash": None, "n": None}) == {"class": "a", "with-dash": None}
