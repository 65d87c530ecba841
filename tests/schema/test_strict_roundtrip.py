"""Strict exports round-trip (issue 9): model output in OpenAI strict form -> execute -> the server gets
what its own schema says: optional properties the model sent as null are dropped unless the server's
schema allows null there."""

from __future__ import annotations

from typing import Any

import anyio
import pydantic
import pytest

from cubepi import AgentTool, AgentToolResult
from cubepi.schema import provider_schema, schema_to_model, to_arguments
from cubepi.schema._validator import resolve_ref

from ._harness import corpus, examples, hard_cases, json_equal, judge, reference

CASES = [
    c
    for c in [*hard_cases(), *corpus()]
    if isinstance(c["schema"], dict) and c.get("generate", True) and len(str(c["schema"])) < 15000
]


def strict_form(x: Any, schema: Any, root: Any, validator: Any, extra: list[str]) -> tuple[Any, Any]:
    """(what a strict-mode model sends for `x`, what the server should receive).

    Keys strict mode cannot express (not declared in `properties`) are recorded in `extra`."""
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 50:
        schema, seen = resolve_ref(schema["$ref"], root), seen + 1
    if not isinstance(schema, dict):
        return x, x
    if isinstance(x, dict):
        props = schema.get("properties") or {}
        sent: dict[str, Any] = {}
        wire: dict[str, Any] = {}
        for key, value in x.items():
            if key in props:
                sent[key], wire[key] = strict_form(value, props[key], root, validator, extra)
            else:
                extra.append(key)
                sent[key], wire[key] = value, value
        for key, sub in props.items():
            if key not in x:
                sent[key] = None
                if validator.evolve(schema=sub).is_valid(None):
                    wire[key] = None  # the server allows null here, so it is sent as such
        return sent, wire
    if isinstance(x, list) and isinstance(schema.get("items"), dict) and "prefixItems" not in schema:
        pairs = [strict_form(item, schema["items"], root, validator, extra) for item in x]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    return x, x


def _instances(case: dict[str, Any]) -> list[Any]:
    generated, _ = examples(case["schema"], 3)
    return [x for x in [*case.get("valid", []), *generated] if isinstance(x, dict)]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_strict_round_trip(case: dict[str, Any]) -> None:
    original = reference(case["schema"])
    model = schema_to_model(case["schema"], name="t")
    root = model.model_json_schema()
    strict = reference(provider_schema(case["schema"], "openai-strict"))
    for x in _instances(case):
        if not judge(original, x):
            continue
        extra: list[str] = []
        sent, expected = strict_form(x, root, root, reference(root), extra)
        if not isinstance(sent, dict):
            continue
        wire = to_arguments(model.model_validate(sent))
        assert json_equal(wire, expected), (sent, wire, expected)
        assert judge(original, wire), wire
        if not extra and _representable(case["schema"]):
            assert strict.is_valid(sent), f"strict export refuses the strict form {sent!r}"


def _representable(schema: dict[str, Any]) -> bool:
    """Strict mode cannot express free-form maps, tuples or combinators inside which nulls would go."""
    text = str(schema)
    keys = (
        "additionalProperties': {",
        "patternProperties",
        "prefixItems",
        "Of'",
        "'enum'",
        "'const'",
        "'if'",
    )
    return not any(k in text for k in keys)


def test_execute_sends_what_the_server_schema_says() -> None:
    schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "cursor": {"type": ["string", "null"]},
            "filter": {
                "type": "object",
                "properties": {"tag": {"type": "string"}, "after": {"type": "string", "format": "date"}},
                "required": ["tag"],
            },
        },
        "required": ["query"],
    }
    received: list[dict[str, Any]] = []

    async def run(params: pydantic.BaseModel, on_update: Any) -> AgentToolResult:
        received.append(to_arguments(params))
        return AgentToolResult()

    tool = AgentTool(
        name="search", description="", parameters=schema_to_model(schema, name="search"), run=run
    )
    strict_output = {"query": "q", "limit": None, "cursor": None, "filter": {"tag": "a", "after": None}}
    assert reference(tool.to_openai(strict=True)["function"]["parameters"]).is_valid(strict_output)
    result = anyio.run(tool.execute, strict_output)
    assert not result.is_error
    assert received == [{"query": "q", "cursor": None, "filter": {"tag": "a"}}]
    assert reference(schema).is_valid(received[0])


def test_required_null_is_still_refused() -> None:
    model = schema_to_model(
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, name="t"
    )
    with pytest.raises(pydantic.ValidationError):
        model.model_validate({"a": None})


@pytest.mark.parametrize("combinator", ["anyOf", "oneOf"])
def test_strict_union_of_closed_objects_round_trips(combinator: str) -> None:
    schema = {
        combinator: [
            {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"url": {"type": "string"}, "depth": {"type": "integer"}},
                "required": ["url"],
                "additionalProperties": False,
            },
        ]
    }
    model = schema_to_model(schema, name="open")
    strict = reference(provider_schema(schema, "openai-strict"))
    original = reference(schema)
    for sent, expected in [
        ({"path": "/a", "url": None, "depth": None}, {"path": "/a"}),
        ({"path": None, "url": "u", "depth": None}, {"url": "u"}),
        ({"path": None, "url": "u", "depth": 2}, {"url": "u", "depth": 2}),
    ]:
        assert strict.is_valid(sent)
        wire = to_arguments(model.model_validate(sent))
        assert wire == expected
        assert original.is_valid(wire)
    for refused in [{"path": None, "url": None, "depth": None}, {"path": "/a", "url": "u", "depth": None}]:
        with pytest.raises(pydantic.ValidationError):
            model.model_validate(refused)
