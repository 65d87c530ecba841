"""The one JSON Schema validator (`cubepi.schema._validator`): verdicts, the messages a model reads, repairs
of broken schemas, bounded patterns, remote references, caches and threads, and the small JSON helpers."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import jsonschema_rs
import pytest

from cubepi.schema import _validator, normalize_schema
from cubepi.schema._validator import (
    SchemaValidator,
    is_valid_at,
    is_valid_in,
    json_type_ok,
    pattern_search,
    pointer_token,
    resolve_ref,
)

DRAFT7 = "http://json-schema.org/draft-07/schema#"
DRAFT4 = "http://json-schema.org/draft-04/schema#"
LOOKAROUND = "^(?!a)"  # needs the backtracking engine: refuses any string that starts with "a"
UNVALIDATABLE = "(arguments): cannot be validated (nested too deeply, or not JSON)"


def _error(schema: Any, instance: Any) -> str | None:
    return SchemaValidator(schema, tool_name="t").first_error(instance)


def _deep_schema(levels: int, leaf: dict[str, Any]) -> dict[str, Any]:
    schema = leaf
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def _deep_instance(levels: int, leaf: Any) -> Any:
    instance = leaf
    for _ in range(levels):
        instance = {"a": instance}
    return instance


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == "cubepi.schema" and r.levelno == logging.WARNING
    ]


@pytest.fixture
def fresh_roots(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start from an empty cache of roots (test isolation only: other tests fill the same cache)."""
    monkeypatch.setattr(_validator, "_roots", {})


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every schema handed to jsonschema-rs from now on (a compilation each)."""
    calls: list[Any] = []
    real = jsonschema_rs.validator_for

    def counting(schema: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(schema)
        return real(schema, *args, **kwargs)

    monkeypatch.setattr(jsonschema_rs, "validator_for", counting)
    return calls


# --- the verdict, and the message a model reads ---------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "instance", "message"),
    [
        ({"type": "integer"}, "x", "must be of type integer"),
        ({"type": ["string", "null"]}, 1, "must be of type null or string"),
        ({"minimum": 3}, 1, "must be >= 3"),
        ({"maximum": 3}, 5, "must be <= 3"),
        ({"exclusiveMinimum": 3}, 3, "must be > 3"),
        ({"exclusiveMaximum": 3}, 3, "must be < 3"),
        ({"minLength": 2}, "a", "must have at least 2 characters"),
        ({"maxLength": 1}, "ab", "must have at most 1 characters"),
        ({"minItems": 1}, [], "must have at least 1 items"),
        ({"maxItems": 0}, [1], "must have at most 0 items"),
        ({"minProperties": 1}, {}, "must have at least 1 properties"),
        ({"maxProperties": 0}, {"a": 1}, "must have at most 0 properties"),
        ({"$schema": DRAFT7, "items": [{}], "additionalItems": False}, [1, 2], "must have at most 1 items"),
        ({"uniqueItems": True}, [1, 1], "items must be unique"),
        ({"contains": {"type": "string"}}, [1], "must contain a matching item"),
        (False, 1, "no value is allowed here"),
        (
            {"anyOf": [{"type": "string"}, {"type": "null"}]},
            1,
            "does not match any of the allowed alternatives (anyOf)",
        ),
        ({"oneOf": [{"type": "string"}]}, 1, "does not match any alternative (oneOf)"),
        ({"oneOf": [{}, {}]}, 1, "matches more than one alternative (oneOf)"),
        ({"not": {}}, 1, "matches a schema it must not match (not)"),
        ({"required": ["a"]}, {}, "'a' is required"),
        ({"properties": {"b": {}}, "additionalProperties": False}, {"a": 1}, "unexpected property 'a'"),
        (
            {"properties": {"b": {}}, "additionalProperties": False},
            {"a": 1, "c": 2},
            "unexpected properties 'a', 'c'",
        ),
        ({"unevaluatedProperties": False}, {"a": 1}, "unexpected property 'a'"),
        ({"prefixItems": [{}], "unevaluatedItems": False}, [1, 2], "unexpected items"),
        ({"enum": ["r", "w"]}, "x", "must be one of ['r', 'w']"),
        ({"const": "x"}, 3, "must be 'x'"),
        ({"const": 3}, 4, "must be 3"),
        ({"pattern": "^a"}, "b", "must match the pattern '^a'"),
        ({"multipleOf": 3}, 4, "must be a multiple of 3"),
        ({"propertyNames": {"maxLength": 1}}, {"ab": 1}, "a property name must have at most 1 characters"),
        (
            {"propertyNames": {"pattern": "^[a-z]+$"}},
            {"A": 1},
            "a property name must match the pattern '^[a-z]+$'",
        ),
        ({"$schema": DRAFT7, "contentMediaType": "application/json"}, "{x", "fails 'contentMediaType'"),
    ],
)
def test_the_first_error_names_the_rule_broken(schema: Any, instance: Any, message: str) -> None:
    validator = SchemaValidator(schema)
    assert validator.first_error(instance) == f"(arguments): {message}"
    assert validator.is_valid(instance) is False


def test_a_valid_instance_has_no_error() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    validator = SchemaValidator(schema)
    assert validator.first_error({"a": 1}) is None
    assert validator.is_valid({"a": 1}) is True
    assert validator.is_valid({}) is False


def test_the_error_names_the_path_inside_the_instance() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "o": {"type": "object", "required": ["x"]},
        },
    }
    assert _error(schema, {"tags": ["a", 1]}) == "tags/1: must be of type string"
    assert _error(schema, {"o": {}}) == "o: 'x' is required"


def test_messages_never_quote_the_value() -> None:
    secret = "hunter2-s3cr3t"
    for schema in (
        {"type": "integer"},
        {"maxLength": 3},
        {"pattern": "^[0-9]+$"},
        {"enum": ["a", "b"]},
        {"const": "a"},
        {"type": "object", "properties": {"p": {"type": "integer"}}},
    ):
        for instance in (secret, {"p": secret}):
            error = _error(schema, instance)
            assert error is None or secret not in error, (schema, error)


def test_long_expected_values_are_cut_at_120_characters() -> None:
    kept = "x" * 118  # repr() is 120 characters
    assert _error({"const": kept}, 1) == f"(arguments): must be '{kept}'"
    cut = "x" * 119  # repr() is 121 characters
    assert _error({"const": cut}, 1) == "(arguments): must be '" + "x" * 116 + "..."
    message = _error({"properties": {"b": {}}, "additionalProperties": False}, {"p" * 200: 1})
    assert message == "(arguments): unexpected property '" + "p" * 116 + "..."


def test_at_most_five_unexpected_property_names_are_listed() -> None:
    schema = {"properties": {"z": {}}, "additionalProperties": False}
    five = dict.fromkeys("abcde", 1)
    assert _error(schema, five) == "(arguments): unexpected properties 'a', 'b', 'c', 'd', 'e'"
    six = dict.fromkeys("abcdef", 1)
    assert _error(schema, six) == "(arguments): unexpected properties 'a', 'b', 'c', 'd', 'e', ..."


def test_format_is_an_annotation() -> None:
    assert _error({"type": "string", "format": "email"}, "not an email") is None
    assert _error({"$schema": DRAFT7, "format": "date"}, "yesterday") is None


def test_each_schema_is_judged_by_its_own_draft() -> None:
    draft4 = {"$schema": DRAFT4, "maximum": 3, "exclusiveMaximum": True}
    assert _error(draft4, 3) == "(arguments): must be < 3"
    assert _error({"prefixItems": [{"type": "integer"}]}, ["x"]) == "0: must be of type integer"
    assert _error({"$schema": DRAFT7, "prefixItems": [{"type": "integer"}]}, ["x"]) is None


def test_an_instance_that_is_not_json_or_too_deep_cannot_be_validated() -> None:
    validator = SchemaValidator({"type": "object", "properties": {"a": {"type": "string"}}})
    assert validator.first_error({"a": b"bytes"}) == UNVALIDATABLE
    assert validator.is_valid({"a": b"bytes"}) is False
    nested: Any = []
    for _ in range(300):
        nested = [nested]
    assert _error({"items": {"items": {"type": "integer"}}}, nested) == UNVALIDATABLE


# --- patterns -------------------------------------------------------------------------------------


def test_a_look_around_pattern_is_enforced_on_strings_up_to_1000_characters() -> None:
    validator = SchemaValidator({"type": "string", "pattern": LOOKAROUND})
    assert validator.first_error("abc") == f"(arguments): must match the pattern {LOOKAROUND!r}"
    assert validator.is_valid("b" * 5000) is True
    assert validator.is_valid("a" * 1000) is False
    assert validator.is_valid("a" * 1001) is True  # past 1,000 characters it cannot hold the caller


def test_a_linear_pattern_is_enforced_on_strings_of_any_length() -> None:
    validator = SchemaValidator({"type": "string", "pattern": "^a+$"})
    assert validator.is_valid("a" * 5000) is True
    assert validator.first_error("a" * 5000 + "b") == "(arguments): must match the pattern '^a+$'"


def test_look_around_patterns_are_bounded_wherever_they_are() -> None:
    in_a_list = {"anyOf": [{"type": "string", "pattern": LOOKAROUND}]}
    beside_all_of = {"type": "string", "pattern": LOOKAROUND, "allOf": [{"maxLength": 1500}]}
    nested = {"type": "object", "properties": {"s": {"type": "string", "pattern": LOOKAROUND}}}
    for schema, wrap in ((in_a_list, str), (beside_all_of, str), (nested, lambda s: {"s": s})):
        validator = SchemaValidator(schema)
        assert validator.is_valid(wrap("a")) is False, schema
        assert validator.is_valid(wrap("a" * 1001)) is True, schema
        assert validator.is_valid(wrap("b")) is True, schema
    # the allOf the pattern sits beside still holds
    assert SchemaValidator(beside_all_of).is_valid("b" * 1501) is False


def test_a_look_around_pattern_is_bounded_at_the_deepest_nesting_the_validator_compiles() -> None:
    validator = SchemaValidator(_deep_schema(120, {"type": "string", "pattern": LOOKAROUND}))
    assert validator.is_valid(_deep_instance(120, "a" * 1001)) is True
    error = validator.first_error(_deep_instance(120, "a"))
    assert error is not None and error.endswith(f"/a: must match the pattern {LOOKAROUND!r}")


def test_a_pattern_inside_data_is_data() -> None:
    data = {"pattern": LOOKAROUND}
    for keyword in ("const", "enum"):
        schema = {keyword: data if keyword == "const" else [data]}
        validator = SchemaValidator(schema)
        assert validator.is_valid({"pattern": LOOKAROUND}) is True, keyword
        assert validator.is_valid({"allOf": []}) is False, keyword


def test_a_pattern_that_is_not_a_regex_is_left_out() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "pattern": "("}, "b": {"type": "integer"}},
    }
    validator = SchemaValidator(schema)
    assert validator.is_valid({"a": "anything"}) is True
    assert validator.first_error({"a": 1}) == "a: must be of type string"
    assert validator.first_error({"b": "1"}) == "b: must be of type integer"


def test_pattern_search() -> None:
    assert pattern_search("^a", "ab") is True
    assert pattern_search("^a", "ba") is False
    assert pattern_search("(?<=a)b", "ab") is True
    assert pattern_search("\\d", "١") is False  # ECMA-262: \d is ASCII
    assert pattern_search("(", "x") is None


# --- schemas that are not valid JSON Schema -------------------------------------------------------


def test_a_broken_keyword_is_left_out_and_the_rest_still_holds(caplog: pytest.LogCaptureFixture) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "minLength": "x"}, "b": {"type": "integer"}},
        "required": ["b"],
    }
    with caplog.at_level(logging.WARNING, logger="cubepi.schema"):
        validator = SchemaValidator(schema, tool_name="loose")
        assert validator.is_valid({"a": "", "b": 1}) is True
        assert validator.first_error({"a": 1, "b": 1}) == "a: must be of type string"
        assert validator.first_error({"a": ""}) == "(arguments): 'b' is required"
    assert _warnings(caplog) == []
    assert schema["properties"]["a"] == {"type": "string", "minLength": "x"}  # the caller's, untouched


def test_a_broken_keyword_at_the_root_keeps_the_other_rules() -> None:
    schema = {
        "type": "object",
        "minProperties": "one",
        "properties": {"b": {"type": "integer"}},
        "additionalProperties": False,
    }
    validator = SchemaValidator(schema)
    assert validator.is_valid({}) is True
    assert validator.first_error({"b": "1"}) == "b: must be of type integer"
    assert validator.first_error({"z": 1}) == "(arguments): unexpected property 'z'"


def test_a_broken_entry_of_a_list_of_schemas_accepts_anything() -> None:
    validator = SchemaValidator({"allOf": [5, {"type": "string"}]})
    assert validator.is_valid("s") is True
    assert validator.first_error(1) == "(arguments): must be of type string"
    assert SchemaValidator({"anyOf": [{"type": "string"}, 1]}).is_valid(5) is True


def test_a_broken_pattern_property_stops_judging_additional_properties() -> None:
    root = {
        "type": "object",
        "patternProperties": {"(": {"type": "string"}, "^n": {"type": "integer"}},
        "additionalProperties": False,
    }
    validator = SchemaValidator(root)
    assert validator.is_valid({"x": 1}) is True
    assert validator.first_error({"n": "s"}) == "n: must be of type integer"
    unevaluated = {"type": "object", "patternProperties": {"(": {}}, "unevaluatedProperties": False}
    assert SchemaValidator(unevaluated).is_valid({"x": 1}) is True
    nested = {
        "type": "object",
        "properties": {"o": {"patternProperties": {"(": {}}, "additionalProperties": False}},
        "additionalProperties": False,
    }
    validator = SchemaValidator(nested)
    assert validator.is_valid({"o": {"x": 1}}) is True
    assert validator.first_error({"z": 1}) == "(arguments): unexpected property 'z'"


def test_a_reference_that_resolves_nowhere_accepts_anything_and_the_rest_holds() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/missing", "type": "string"},
            "b": {"$ref": "#/$defs/int"},
            "c": {"anyOf": [{"$ref": "#/$defs/gone"}, {"type": "null"}]},
            "d": {"const": {"$ref": "#/nowhere"}},
        },
        "$defs": {"int": {"type": "integer"}},
    }
    validator = SchemaValidator(schema)
    assert validator.is_valid({"a": "s", "b": 1, "c": [1], "d": {"$ref": "#/nowhere"}}) is True
    assert validator.first_error({"a": 1}) == "a: must be of type string"
    assert validator.first_error({"b": "1"}) == "b: must be of type integer"
    assert validator.first_error({"d": {}}) == "d: must be {'$ref': '#/nowhere'}"


def test_a_reference_that_resolves_nowhere_inside_a_list_of_schemas_is_left_out() -> None:
    schema = {
        "type": "object",
        "properties": {"c": {"anyOf": [{"$ref": "#/nowhere"}, {"type": "null"}]}, "b": {"type": "integer"}},
    }
    validator = SchemaValidator(schema)
    assert validator.is_valid({"c": 1}) is True
    assert validator.first_error({"b": "1"}) == "b: must be of type integer"


def test_a_dangling_reference_is_left_out_at_the_deepest_nesting_the_validator_compiles() -> None:
    validator = SchemaValidator(_deep_schema(120, {"$ref": "#/$defs/missing", "type": "string"}))
    assert validator.is_valid(_deep_instance(120, "s")) is True
    error = validator.first_error(_deep_instance(120, 1))
    assert error is not None and error.endswith("/a: must be of type string")


def _broken(count: int) -> dict[str, Any]:
    properties: dict[str, Any] = {f"p{i:02}": {"minLength": "x"} for i in range(count)}
    return {"type": "object", "properties": {**properties, "b": {"type": "integer"}}}


def test_up_to_31_broken_keywords_are_left_out_then_the_schema_is_given_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="cubepi.schema"):
        repaired = SchemaValidator(_broken(31), tool_name="many")
        assert repaired.first_error({"b": "1"}) == "b: must be of type integer"
        assert _warnings(caplog) == []
        given_up = SchemaValidator(_broken(32), tool_name="too_many")
        assert given_up.first_error({"b": "1"}) is None
        assert given_up.compiled() is None
    assert _warnings(caplog) == [
        "the schema of tool 'too_many' cannot be compiled; only its types are checked"
    ]


@pytest.mark.parametrize("schema", [5, None, "object"])
def test_what_is_not_a_schema_accepts_anything_with_one_warning(
    schema: Any, caplog: pytest.LogCaptureFixture, compiles: list[Any]
) -> None:
    with caplog.at_level(logging.WARNING, logger="cubepi.schema"):
        validator = SchemaValidator(schema, tool_name="odd")
        assert validator.compiled() is None
        assert len(compiles) <= 2  # given up at once: nothing to leave out, so no repeated attempts
        assert validator.first_error({"a": 1}) is None
        assert validator.is_valid(1) is True
    assert _warnings(caplog) == ["the schema of tool 'odd' cannot be compiled; only its types are checked"]


def test_a_broken_schema_is_judged_in_its_repaired_form_when_one_is_given() -> None:
    loose = {"type": "object", "properties": {"a": {"type": "string", "required": True}}}
    validator = SchemaValidator(loose, tool_name="t", fallback=normalize_schema(loose))
    assert validator.first_error({}) == "(arguments): 'a' is required"
    assert SchemaValidator(loose).first_error({}) is None  # left out without the repaired form
    assert SchemaValidator(loose).first_error({"a": 1}) == "a: must be of type string"
    # a schema that compiles is judged as it is
    assert SchemaValidator({"type": "string"}, fallback={"type": "integer"}).is_valid("s") is True


# --- remote references ----------------------------------------------------------------------------


def test_remote_references_are_never_fetched_accept_anything_and_are_named_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refs = {f"r{i}": {"$ref": f"http://127.0.0.1:9/{i}.json"} for i in range(6)}
    schema = {"type": "object", "properties": {**refs, "again": refs["r0"], "b": {"type": "integer"}}}
    with caplog.at_level(logging.WARNING, logger="cubepi.schema"):
        validator = SchemaValidator(schema, tool_name="remote_tool")
        assert _warnings(caplog) == []  # compiled on first use
        assert validator.is_valid({"r0": [1], "r5": "x", "b": 1}) is True
        assert validator.first_error({"b": "1"}) == "b: must be of type integer"
    named = ", ".join(f"http://127.0.0.1:9/{i}.json" for i in range(5))
    assert _warnings(caplog) == [
        f"tool 'remote_tool': remote schema reference(s) not fetched, they accept anything: {named}"
    ]


def test_a_local_schema_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="cubepi.schema"):
        assert _error({"$defs": {"x": {}}, "$ref": "#/$defs/x"}, 1) is None
    assert _warnings(caplog) == []


# --- compiled once, shared by every call and thread -----------------------------------------------


def test_a_schema_is_compiled_once_on_first_use(compiles: list[Any]) -> None:
    validator = SchemaValidator({"type": "integer"})
    assert compiles == []
    for _ in range(3):
        assert validator.first_error("x") == "(arguments): must be of type integer"
    assert len(compiles) == 1


def test_threads_share_one_compilation(compiles: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    counting = jsonschema_rs.validator_for

    def slow(schema: Any, *args: Any, **kwargs: Any) -> Any:
        time.sleep(0.05)  # every thread reaches the validator before the first compilation ends
        return counting(schema, *args, **kwargs)

    monkeypatch.setattr(jsonschema_rs, "validator_for", slow)
    validator = SchemaValidator({"type": "object", "required": ["a"]})
    start = threading.Barrier(8)
    results: list[str | None] = []

    def check() -> None:
        start.wait()
        results.append(validator.first_error({}))

    threads = [threading.Thread(target=check) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["(arguments): 'a' is required"] * 8
    assert len(compiles) == 1


# --- subschemas of a root (is_valid_at / is_valid_in) ---------------------------------------------

ROOT: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"$ref": "#/$defs/pos"}, "l": {"type": "array", "items": {"type": "string"}}},
    "$defs": {"pos": {"type": "integer", "minimum": 1}},
}


def test_is_valid_at_judges_the_subschema_at_a_pointer() -> None:
    assert is_valid_at(1, "/$defs/pos", ROOT) is True
    assert is_valid_at(0, "/$defs/pos", ROOT) is False
    assert is_valid_at(["s"], "/properties/l", ROOT) is True
    assert is_valid_at({"a": 0}, "", ROOT) is False
    assert is_valid_at({"a": 2}, "", ROOT) is True
    assert is_valid_at(1, "/nowhere", ROOT) is None
    assert is_valid_at(b"not json", "/$defs/pos", ROOT) is None
    assert is_valid_at(1, "", {"type": {"not": "a type"}}) is None


def test_a_pattern_in_a_root_is_bounded_too() -> None:
    root = {"$defs": {"s": {"type": "string", "pattern": LOOKAROUND}}}
    assert is_valid_at("a", "/$defs/s", root) is False
    assert is_valid_at("a" * 1001, "/$defs/s", root) is True


def test_is_valid_in_judges_a_copy_whose_references_point_into_the_root() -> None:
    assert is_valid_in(0, {"$ref": "#/$defs/pos"}, ROOT) is False
    assert is_valid_in(2, {"$ref": "#/$defs/pos"}, ROOT) is True
    alternatives = {"anyOf": [{"$ref": "#/$defs/pos"}, {"type": "string"}]}
    assert is_valid_in(1, alternatives, ROOT) is True
    assert is_valid_in(0, alternatives, ROOT) is False
    nested = {"type": "object", "properties": {"a": {"$ref": "#/$defs/pos"}}}
    assert is_valid_in({"a": 0}, nested, ROOT) is False
    assert is_valid_in({"a": 3}, nested, ROOT) is True
    data = {"const": {"$ref": "#/x"}, "default": {"$ref": "#/y"}}
    assert is_valid_in({"$ref": "#/x"}, data, ROOT) is True
    assert is_valid_in({"$ref": "urn:cubepi:schema#/x"}, data, ROOT) is False
    assert is_valid_in(1, {"enum": [{"$ref": "#/z"}, 1]}, ROOT) is True
    assert is_valid_in("s", {"type": "string"}, ROOT) is True
    assert is_valid_in(1, {"type": "string"}, ROOT) is False


def test_is_valid_in_boolean_and_unjudgeable_schemas() -> None:
    assert is_valid_in(1, True, ROOT) is True
    assert is_valid_in(1, False, ROOT) is False
    assert is_valid_in(1, {"const": object()}, ROOT) is None
    assert is_valid_in(1, {"$ref": "#/$defs/nowhere"}, ROOT) is None


@pytest.mark.usefixtures("fresh_roots")
def test_subschema_checks_are_compiled_once(compiles: list[Any]) -> None:
    root = {"$defs": {"n": {"type": "integer"}}, "properties": {"s": {"type": "string"}}}
    other = {"$defs": {"n": {"type": "string"}}}
    for _ in range(3):
        assert is_valid_at(1, "/$defs/n", root) is True
        assert is_valid_at(1, "/$defs/n", other) is False
        assert is_valid_at("x", "/properties/s", root) is True
    assert len(compiles) == 3
    assert is_valid_in(1, {"type": "integer", "minimum": 0}, root) is True
    assert is_valid_in(-1, {"minimum": 0, "type": "integer"}, root) is False  # same subschema, keys reordered
    assert len(compiles) == 4


@pytest.mark.usefixtures("fresh_roots")
def test_64_roots_stay_compiled_and_then_the_cache_starts_over(compiles: list[Any]) -> None:
    roots = [{"$defs": {"n": {"minimum": i}}} for i in range(65)]
    for root in roots[:64]:
        assert is_valid_at(100, "/$defs/n", root) is True
    assert len(compiles) == 64
    assert is_valid_at(-1, "/$defs/n", roots[0]) is False
    assert len(compiles) == 64  # still cached
    assert is_valid_at(100, "/$defs/n", roots[64]) is True  # the 65th root starts the cache over
    assert is_valid_at(100, "/$defs/n", roots[0]) is True
    assert len(compiles) == 66


@pytest.mark.usefixtures("fresh_roots")
def test_at_most_4096_subschemas_of_a_root_are_kept(compiles: list[Any]) -> None:
    root: dict[str, Any] = {"$defs": {}}
    documents = [{"minimum": i} for i in range(4097)]
    for i, document in enumerate(documents):
        assert is_valid_in(i, document, root) is True
    assert len(compiles) == 4097
    assert is_valid_in(4094, documents[4095], root) is False  # the 4,096th is kept
    assert len(compiles) == 4097
    assert is_valid_in(4095, documents[4096], root) is False  # the 4,097th is compiled again
    assert len(compiles) == 4098


# --- the small JSON helpers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "type_name", "expected"),
    [
        (True, "boolean", True),
        (True, "integer", False),
        (False, "number", False),
        (1, "integer", True),
        (1.0, "integer", True),
        (1.5, "integer", False),
        ("1", "integer", False),
        (1, "number", True),
        (1.5, "number", True),
        ("1", "number", False),
        ("s", "string", True),
        (1, "string", False),
        ({}, "object", True),
        ([], "object", False),
        ([], "array", True),
        ({}, "array", False),
        (None, "null", True),
        (0, "null", False),
        (0, "boolean", False),
        ("anything", "no such type", True),
    ],
)
def test_json_type_ok(value: object, type_name: str, expected: bool) -> None:
    assert json_type_ok(value, type_name) is expected


def test_pointer_token_escapes_for_a_uri_fragment() -> None:
    assert pointer_token("a/b~c") == "a~1b~0c"
    assert pointer_token("a b%#") == "a%20b%25%23"
    assert pointer_token(3) == "3"


@pytest.mark.parametrize("key", ["plain", "a/b", "~1", "50%", "sp ace", "#", "é"])
def test_a_pointer_token_resolves_back_to_its_key(key: str) -> None:
    assert resolve_ref("#/properties/" + pointer_token(key), {"properties": {key: 7}}) == 7


RESOLVED: dict[str, Any] = {"a": {"b/c": {"~d": 1}}, "l": [10, 20], "%": 2, "0": "zero"}


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("#/a", RESOLVED["a"]),
        ("#/a/b~1c/~0d", 1),
        ("#/l/1", 20),
        ("#/%25", 2),
        ("#/0", "zero"),
        ("#/l/2", None),
        ("#/l/x", None),
        ("#/l/-1", None),
        ("#/a/0", None),
        ("#/a/missing", None),
        ("#/a/b~1c/~0d/deeper", None),
        ("#a", None),
        ("a", None),
        ("/a", None),
        ("http://example.com/s.json#/a", None),
        (5, None),
    ],
)
def test_resolve_ref(ref: object, expected: object) -> None:
    assert resolve_ref(ref, RESOLVED) == expected


def test_resolve_ref_of_the_whole_document() -> None:
    assert resolve_ref("#", RESOLVED) is RESOLVED
    assert resolve_ref("#/0", [5]) == 5


def test_a_schema_nested_too_deeply_to_copy_is_judged_by_its_types_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(3000):
        schema = {"properties": {"a": schema}}
    with caplog.at_level(logging.WARNING, logger="cubepi.schema"):
        validator = SchemaValidator(schema, tool_name="deep")
        assert validator.first_error({"a": 1}) is None
    assert any("'deep' cannot be compiled" in line for line in _warnings(caplog))


def test_an_entry_of_required_that_is_no_name_is_left_out_and_the_rest_holds() -> None:
    schema = {"type": "object", "required": [1, "b", None], "properties": {"b": {"type": "integer"}}}
    validator = SchemaValidator(schema)
    assert validator.first_error({}) == "(arguments): 'b' is required"
    assert validator.first_error({"b": "x"}) == "b: must be of type integer"
    assert validator.is_valid({"b": 1}) is True
    assert schema["required"] == [1, "b", None]


def test_a_pointer_into_an_unfetched_document_accepts_anything_and_the_rest_holds() -> None:
    schema = {
        "type": "object",
        "properties": {"r": {"$ref": "https://example.com/s.json#/defs/a"}, "n": {"type": "integer"}},
    }
    validator = SchemaValidator(schema)
    assert validator.is_valid({"r": [1], "n": 1}) is True
    assert validator.first_error({"n": "x"}) == "n: must be of type integer"


def test_pattern_search_cannot_tell_on_long_text_for_a_backtracking_pattern() -> None:
    assert pattern_search("(?<=a)b", "x" * 900 + "ab") is True
    assert pattern_search("(?<=a)b", "x" * 5000 + "ab") is None
    assert pattern_search("ab", "x" * 5000 + "ab") is True
    assert pattern_search("ab", "x" * 5000) is False
