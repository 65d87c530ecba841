"""Arbitrary JSON Schemas never crash, hang or overflow the stack in `schema_to_model`.

Hypothesis generates schemas a server could send: deep nesting, cycles through `$ref` (direct,
mutual, to the root), dangling and remote refs, huge enums, junk keyword values, odd property names. The only
exception allowed is `SchemaError`, and only for a schema that is not an object schema at all.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cubepi import SchemaError
from cubepi.schema import schema_to_model

TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"]
NAMES = st.sampled_from(["a", "b", "node", "x y", "$weird", "class", "0start", "ü", "", "model_config", "-"])
REFS = st.sampled_from(
    [
        "#",
        "#/$defs/A",
        "#/$defs/B",
        "#/definitions/C",
        "#/$defs/missing",
        "#/properties/a",
        "http://x/y#",
        "A",
    ]
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=5,
)

leaf = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(TYPES)},
        optional={
            "minimum": st.integers(),
            "maxLength": st.integers(-1, 5),
            "pattern": st.sampled_from(["^a+$", "[", "(?P<x>.)"]),
            "format": st.sampled_from(["date-time", "uri", "email", "nonsense"]),
            "default": JSON,
            "const": JSON,
            "exclusiveMinimum": st.booleans() | st.integers(),
        },
    ),
    st.just({}),
    st.booleans(),
    st.fixed_dictionaries({"enum": st.lists(JSON, max_size=6)}),
    st.integers(200, 1500).map(lambda n: {"enum": [f"value-{i}" for i in range(n)]}),
    st.integers(200, 1500).map(lambda n: {"type": "integer", "enum": list(range(n))}),
    REFS.map(lambda ref: {"$ref": ref}),
    st.lists(st.sampled_from(TYPES), max_size=3).map(lambda kinds: {"type": kinds}),
    JSON,  # junk where a schema should be
)


def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.dictionaries(NAMES, children, max_size=4)},
            optional={
                "required": st.lists(NAMES, max_size=3),
                "additionalProperties": children,
                "patternProperties": st.dictionaries(st.sampled_from(["^x", "["]), children, max_size=2),
            },
        ),
        st.fixed_dictionaries(
            {"type": st.just("array"), "items": children}, optional={"minItems": st.integers()}
        ),
        st.builds(lambda items: {"type": "array", "items": items}, st.lists(children, max_size=3)),
        st.builds(
            lambda key, subs: {key: subs}, st.sampled_from(["anyOf", "oneOf", "allOf"]), st.lists(children)
        ),
        st.builds(lambda sub: {"not": sub}, children),
        st.builds(lambda sub, ref: {**sub, "$ref": ref} if isinstance(sub, dict) else sub, children, REFS),
        st.builds(
            lambda sub, defs: {**sub, "$defs": defs} if isinstance(sub, dict) else sub,
            children,
            st.dictionaries(st.sampled_from(["A", "B"]), children, max_size=2),
        ),
    )


SUBSCHEMA = st.recursive(leaf, extend, max_leaves=25)

TOP = st.fixed_dictionaries(
    {"type": st.sampled_from(["object", None]), "properties": st.dictionaries(NAMES, SUBSCHEMA, max_size=5)},
    optional={
        "$defs": st.dictionaries(st.sampled_from(["A", "B"]), SUBSCHEMA, max_size=2),
        "definitions": st.fixed_dictionaries({"C": SUBSCHEMA}),
        "required": st.lists(NAMES, max_size=4),
        "additionalProperties": SUBSCHEMA,
        "$ref": REFS,
        "$schema": st.sampled_from(["http://json-schema.org/draft-04/schema#", "https://x/2020-12"]),
        "allOf": st.lists(SUBSCHEMA, max_size=2),
    },
).map(lambda schema: {key: value for key, value in schema.items() if value is not None})


def deep(depth: int, kind: str) -> dict[str, Any]:
    """`depth` levels of nesting, of properties, arrays, anyOf or a chain of $defs."""
    if kind == "defs":
        defs = {
            f"D{i}": {"type": "object", "properties": {"next": {"$ref": f"#/$defs/D{i + 1}"}}}
            for i in range(depth)
        }
        defs[f"D{depth}"] = {"type": "object", "properties": {"back": {"$ref": "#/$defs/D0"}}}
        return {"type": "object", "properties": {"root": {"$ref": "#/$defs/D0"}}, "$defs": defs}
    node: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        if kind == "properties":
            node = {"type": "object", "properties": {"child": node}, "required": ["child"]}
        elif kind == "items":
            node = {"type": "array", "items": node}
        else:
            node = {"anyOf": [node, {"type": "null"}]}
    return {"type": "object", "properties": {"root": node}}


DEEP = st.builds(deep, st.integers(50, 800), st.sampled_from(["properties", "items", "anyOf", "defs"]))
CYCLES = st.sampled_from(
    [
        {"type": "object", "properties": {"self": {"$ref": "#"}}},
        {"$ref": "#"},
        {"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}},
        {"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}},
        {
            "type": "object",
            "properties": {"a": {"allOf": [{"$ref": "#"}], "anyOf": [{"$ref": "#/properties/a"}]}},
        },
        {
            "type": "object",
            "$defs": {"A": {"not": {"$ref": "#/$defs/A"}}},
            "properties": {"a": {"$ref": "#/$defs/A"}},
        },
    ]
)
ANY_SCHEMA = st.one_of(TOP, TOP, SUBSCHEMA, DEEP, CYCLES)


def is_object_schema(schema: Any) -> bool:
    """Whether the schema claims to describe an object (or says nothing about its type)."""
    if schema is None or isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind is None or kind == "object":
        return True
    if isinstance(kind, list):
        return "object" in kind or not kind
    return not isinstance(kind, str)  # an ill-typed `type` is dropped, not an error


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(ANY_SCHEMA)
def test_schema_to_model_never_crashes_or_hangs(schema: Any) -> None:
    started = time.monotonic()
    try:
        model = schema_to_model(schema, name="fuzzed")
    except SchemaError as exc:
        assert not is_object_schema(schema), f"SchemaError for an object schema: {exc}"
        assert "fuzzed" in str(exc)
        return
    assert issubclass(model, pydantic.BaseModel)
    # The model is usable: validating inputs raises nothing but a ValidationError.
    for candidate in ({}, {"a": 1, "root": None}, {"root": {"child": "x"}, "self": {}}):
        with contextlib.suppress(pydantic.ValidationError):
            model.model_validate(candidate)
    assert time.monotonic() - started < 10, "schema_to_model took too long"


@pytest.mark.parametrize("kind", ["properties", "items", "anyOf", "defs"])
def test_very_deep_schemas(kind: str) -> None:
    """Depths far past Python's recursion limit: a model or a clear SchemaError, never RecursionError."""
    schema = deep(3000, kind)
    started = time.monotonic()
    try:
        model = schema_to_model(schema, name="deep")
    except SchemaError as exc:
        assert "deep" in str(exc)
    else:
        assert issubclass(model, pydantic.BaseModel)
    assert time.monotonic() - started < 30
