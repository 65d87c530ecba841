"""No schema and no argument makes the exact check slow or overflows the stack; work on a schema is linear.

Bounds are generous (a loaded 2-core machine): the failures they catch take seconds to minutes.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pydantic
import pytest

from cubepi.mcp._lists.output_schema import OutputCheck
from cubepi.schema import schema_to_model, to_arguments
from cubepi.schema._names import field_names


def _timed(fn: Any) -> tuple[Any, float]:
    """`fn()` and the CPU time it took (the check runs in this thread; neighbours' load does not count)."""
    start = time.thread_time()
    out = fn()
    return out, time.thread_time() - start


@pytest.mark.parametrize(
    "pattern",
    ["^(a+)+$", "(a|a)*b", "^(\\w+\\s?)*$", "(?=a)(a+)+$", "(?!b)(a|aa)+$", "(a+)+\\1$", "(.*a){20}"],
)
def test_a_catastrophic_pattern_cannot_hang_argument_checks(pattern: str) -> None:
    model = schema_to_model(
        {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}, name="t"
    )
    for n in (27, 5_000, 100_000):
        _, took = _timed(lambda n=n: _accepts(model, {"s": "a" * n + "!"}))
        assert took < 0.5, (pattern, n, took)


def _accepts(model: type[pydantic.BaseModel], data: dict[str, Any]) -> bool:
    try:
        model.model_validate(data)
    except pydantic.ValidationError:
        return False
    return True


def test_patterns_are_ecma_262_and_enforced() -> None:
    model = schema_to_model(
        {
            "type": "object",
            "properties": {
                "word": {"type": "string", "pattern": "^\\p{L}+$"},
                "digits": {"type": "string", "pattern": "^\\d+$"},
                "look": {"type": "string", "pattern": "^(?=.*\\d).{3,}$"},
            },
        },
        name="t",
    )
    assert _accepts(model, {"word": "Ünïcödé"}) and not _accepts(model, {"word": "a1"})
    assert _accepts(model, {"digits": "123"}) and not _accepts(model, {"digits": "١٢٣"})  # ECMA \d is ASCII
    assert _accepts(model, {"look": "ab1"}) and not _accepts(model, {"look": "abc"})
    # a look-around pattern is enforced up to 1,000 characters; past that it cannot hold the caller
    assert _accepts(model, {"look": "a" * 5_000})


def test_a_catastrophic_pattern_in_an_output_schema_cannot_hang_the_structured_content_check() -> None:
    check = OutputCheck(
        "t", {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
    )
    found, took = _timed(lambda: check.mismatch({"structuredContent": {"s": "a" * 30 + "!"}}))
    assert took < 0.5
    assert found is not None and "pattern" in found[0] and "a" * 30 not in found[0]
    assert check.mismatch({"structuredContent": {"s": "aaa"}}) is None


def _nested(depth: int, leaf: Any) -> Any:
    out = leaf
    for _ in range(depth):
        out = [out]
    return out


def test_deep_arguments_and_schemas_neither_overflow_nor_crash() -> None:
    model = schema_to_model(
        {
            "type": "object",
            "properties": {"t": {"$ref": "#/$defs/tree"}},
            "$defs": {"tree": {"type": "array", "items": {"$ref": "#/$defs/tree"}}},
        },
        name="t",
    )
    assert _accepts(model, {"t": _nested(50, [])})
    _, took = _timed(lambda: _accepts(model, {"t": _nested(100_000, [])}))
    assert took < 5
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(5_000):
        schema = {"type": "object", "properties": {"a": schema}}
    deep, took = _timed(lambda: schema_to_model(schema, name="deep"))
    assert took < 5
    _accepts(deep, {"a": {"a": {}}})


def test_huge_arrays_are_checked_quickly() -> None:
    model = schema_to_model(
        {
            "type": "object",
            "properties": {"xs": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}},
        },
        name="t",
    )
    items = list(range(200_000))
    assert not _accepts(model, {"xs": [*items, 5]})
    _, took = _timed(lambda: _accepts(model, {"xs": items}))
    assert took < 2


def test_an_enum_of_50000_strings_builds_in_linear_time() -> None:
    values = [f"v{i}" for i in range(50_000)]
    model, took = _timed(
        lambda: schema_to_model(
            {"type": "object", "properties": {"e": {"enum": [*values, *values]}}}, name="t"
        )
    )
    assert took < 5
    assert _accepts(model, {"e": "v49999"}) and not _accepts(model, {"e": "v50000"})


def test_100000_properties_build_in_linear_time() -> None:
    props = {f"p-{i}": {"type": "integer"} for i in range(100_000)}
    props |= {f"-{'-' * (i % 3)}x{i % 7}": {"type": "string"} for i in range(21)}
    names, took = _timed(lambda: field_names(list(props)))
    assert took < 20 and len(set(names.values())) == len(props)  # quadratic: hours
    model, took = _timed(
        lambda: schema_to_model(
            {"type": "object", "properties": props, "additionalProperties": False}, name="t"
        )
    )
    assert took < 10
    assert to_arguments(model.model_validate({"p-7": 7, "---x2": "s"})) == {"p-7": 7, "---x2": "s"}
    assert not _accepts(model, {"p-7": "7"}) and not _accepts(model, {"other": 1})


def test_a_remote_reference_is_never_fetched_and_accepts_anything(caplog: pytest.LogCaptureFixture) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "http://127.0.0.1:9/never.json"}, "b": {"type": "integer"}},
    }
    with caplog.at_level(logging.WARNING, logger="cubepi.schema"):
        model = schema_to_model(schema, name="remote_tool")
        assert _accepts(model, {"a": {"anything": [1]}, "b": 1})
        assert not _accepts(model, {"b": "1"})
        assert _accepts(model, {"a": 2})
    warned = [r.getMessage() for r in caplog.records if "remote" in r.getMessage()]
    assert len(warned) == 1 and "'remote_tool'" in warned[0] and "127.0.0.1:9/never.json" in warned[0]
