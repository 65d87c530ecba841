"""Hand-written hard cases: every keyword of issue 2, with instances the schema accepts and rejects.

Each case: `name`, `schema` (a tool inputSchema), `valid` / `invalid` instances judged by the reference
validator, and optionally ``generate=False`` when hypothesis-jsonschema cannot generate from it.
"""

from __future__ import annotations

from typing import Any

D4 = "http://json-schema.org/draft-04/schema#"
D7 = "http://json-schema.org/draft-07/schema#"


def obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, **extra}
    if required:
        out["required"] = required
    return out


CASES: list[dict[str, Any]] = [
    {
        "name": "scalars",
        "schema": obj(
            {
                "s": {"type": "string", "minLength": 1, "maxLength": 5},
                "i": {"type": "integer", "minimum": -3, "exclusiveMaximum": 10, "multipleOf": 3},
                "n": {"type": "number", "exclusiveMinimum": 0, "maximum": 1.5, "multipleOf": 0.5},
                "b": {"type": "boolean"},
                "z": {"type": "null"},
            },
            ["s"],
        ),
        "valid": [{"s": "a", "i": 3.0, "n": 1, "b": False, "z": None}, {"s": "ab", "i": -3}],
        "invalid": [{"s": ""}, {"s": "a", "i": "3"}, {"s": "a", "i": True}, {"s": "a", "n": 0}, {"s": 1}],
    },
    {
        "name": "format_kept_not_asserted",
        "schema": obj({"when": {"type": "string", "format": "date-time"}, "url": {"format": "uri"}}),
        "valid": [{"when": "2024-01-01T00:00:00Z"}, {"when": "not a date"}, {"url": 3}],
        "invalid": [{"when": 3}],
    },
    {
        "name": "ecmascript_patterns",
        "schema": obj(
            {
                "look": {"type": "string", "pattern": "^(?=.*\\d)(?!.*\\s).{3,}$"},
                "back": {"type": "string", "pattern": "^(a+)-\\1$"},
                "named": {"type": "string", "pattern": "^(?<x>[ab])\\k<x>$"},
                "unicode": {"type": "string", "pattern": "^\\p{L}+$"},
            }
        ),
        "generate": False,
        "valid": [{"look": "ab1"}, {"back": "aa-aa"}, {"named": "bb"}, {"unicode": "anything"}],
        "invalid": [{"look": "abc"}, {"look": "a 1x"}, {"back": "aa-a"}],
        "judge_skip": ["named", "unicode"],
    },
    {
        "name": "nested_objects",
        "schema": obj(
            {
                "outer": obj(
                    {"inner": obj({"leaf": {"type": "integer"}}, ["leaf"], additionalProperties=False)},
                    ["inner"],
                ),
                "list": {"type": "array", "items": obj({"k": {"type": "string"}}, ["k"])},
            },
            ["outer"],
        ),
        "valid": [{"outer": {"inner": {"leaf": 1}, "x": 1}}, {"outer": {"inner": {"leaf": 2}}, "list": []}],
        "invalid": [{"outer": {"inner": {"leaf": 1, "extra": 2}}}, {"outer": {}}, {"list": [{}]}],
    },
    {
        "name": "additional_properties_variants",
        "schema": obj(
            {
                "closed": obj({"a": {"type": "string"}}, additionalProperties=False),
                "typed": {"type": "object", "additionalProperties": {"type": "integer"}},
                "open": {"type": "object", "additionalProperties": True},
                "mixed": obj({"a": {"type": "string"}}, additionalProperties={"type": "boolean"}),
            },
            additionalProperties=False,
        ),
        "valid": [
            {"closed": {"a": "x"}, "typed": {"x": 1}, "open": {"q": [1]}, "mixed": {"a": "s", "b": True}}
        ],
        "invalid": [{"zzz": 1}, {"closed": {"b": 1}}, {"typed": {"x": "1"}}, {"mixed": {"b": 1}}],
    },
    {
        "name": "refs_and_recursion",
        "schema": {
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/Node"}, "old": {"$ref": "#/definitions/Leaf"}},
            "$defs": {
                "Node": obj(
                    {
                        "name": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                    ["name"],
                )
            },
            "definitions": {"Leaf": {"type": "integer", "minimum": 0}},
        },
        "valid": [
            {"tree": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}},
            {"old": 3},
        ],
        "invalid": [
            {"tree": {"children": []}},
            {"tree": {"name": "a", "children": [{"name": 1}]}},
            {"old": -1},
        ],
    },
    {
        "name": "root_recursion",
        "schema": obj({"value": {"type": "integer"}, "next": {"$ref": "#"}}, ["value"]),
        "valid": [{"value": 1, "next": {"value": 2, "next": {"value": 3}}}],
        "invalid": [{"value": 1, "next": {}}, {"value": 1, "next": {"value": "2"}}],
    },
    {
        "name": "combinators",
        "schema": obj(
            {
                "any": {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer"}]},
                "one": {
                    "oneOf": [{"type": "integer", "multipleOf": 2}, {"type": "integer", "multipleOf": 3}]
                },
                "all": {"allOf": [{"type": "integer"}, {"minimum": 5}]},
                "shape": {
                    "anyOf": [
                        obj({"kind": {"const": "a"}, "x": {"type": "integer"}}, ["kind"]),
                        obj({"kind": {"const": "b"}, "y": {"type": "string"}}, ["kind"]),
                    ]
                },
                "nope": {"not": {"type": "string"}},
            }
        ),
        "valid": [{"any": "ab", "one": 4, "all": 5, "shape": {"kind": "b", "y": "s"}, "nope": 1}, {"one": 3}],
        "invalid": [{"any": "abc"}, {"one": 6}, {"all": 4}, {"shape": {"kind": "c"}}, {"nope": "s"}],
    },
    {
        "name": "type_lists",
        "schema": obj(
            {"a": {"type": ["string", "null"]}, "b": {"type": ["integer", "boolean"], "minimum": 2}}, ["a"]
        ),
        "valid": [{"a": None}, {"a": "x", "b": True}, {"a": "x", "b": 3}],
        "invalid": [{}, {"a": 1}, {"a": None, "b": 1}, {"a": None, "b": "x"}],
    },
    {
        "name": "enums_and_const",
        "schema": obj(
            {
                "mixed": {"enum": ["a", 1, None, True, 2.5, [1], {"k": 1}]},
                "ints": {"type": "integer", "enum": [1, 2, 3]},
                "c": {"const": "fixed"},
                "cobj": {"const": {"a": [1, 2]}},
            }
        ),
        "valid": [
            {"mixed": "a", "ints": 2, "c": "fixed"},
            {"mixed": 1.0},
            {"mixed": [1]},
            {"cobj": {"a": [1, 2]}},
        ],
        "invalid": [{"mixed": False}, {"ints": True}, {"ints": 4}, {"c": "other"}, {"mixed": "b"}],
    },
    {
        "name": "huge_enum",
        "schema": obj({"code": {"type": "string", "enum": [f"v{i}" for i in range(5000)]}}),
        "generate": False,
        "valid": [{"code": "v4999"}],
        "invalid": [{"code": "v5000"}],
    },
    {
        "name": "arrays",
        "schema": obj(
            {
                "tuple": {
                    "type": "array",
                    "prefixItems": [{"type": "string"}, {"type": "integer"}],
                    "items": False,
                },
                "uniq": {"type": "array", "uniqueItems": True, "minItems": 1, "maxItems": 3},
                "has": {"type": "array", "contains": {"type": "integer"}, "minContains": 2},
            }
        ),
        "valid": [{"tuple": ["a", 1]}, {"tuple": ["a"]}, {"uniq": [1, "1", True]}, {"has": [1, "x", 2]}],
        "invalid": [{"tuple": ["a", 1, 2]}, {"uniq": [1, 1.0]}, {"uniq": []}, {"has": [1]}, {"tuple": [1]}],
    },
    {
        "name": "object_constraints",
        "schema": obj(
            {"a": {"type": "integer"}, "b": {"type": "integer"}},
            minProperties=1,
            maxProperties=2,
            patternProperties={"^x-": {"type": "string"}},
            propertyNames={"maxLength": 5},
            dependentRequired={"a": ["b"]},
        ),
        "valid": [{"b": 1}, {"a": 1, "b": 2}, {"x-y": "s"}],
        "invalid": [{}, {"a": 1}, {"x-y": 1}, {"toolong": 1}, {"b": 1, "x-a": "s", "x-b": "t"}],
    },
    {
        "name": "conditionals",
        "schema": obj(
            {"kind": {"type": "string"}, "n": {"type": "integer"}},
            **{"if": obj({"kind": {"const": "num"}}, ["kind"]), "then": {"required": ["n"]}},
        ),
        "valid": [{"kind": "num", "n": 1}, {"kind": "text"}],
        "invalid": [{"kind": "num"}],
    },
    {
        "name": "unevaluated",
        "schema": {
            "type": "object",
            "allOf": [obj({"a": {"type": "string"}})],
            "properties": {"b": {"type": "integer"}},
            "unevaluatedProperties": False,
        },
        "valid": [{"a": "x", "b": 1}, {}],
        "invalid": [{"c": 1}],
    },
    {
        "name": "awkward_property_names",
        "schema": obj(
            {
                "class": {"type": "string"},
                "_private": {"type": "integer"},
                "__dunder__": {"type": "integer"},
                "schema": {"type": "string"},
                "json": {"type": "string"},
                "copy": {"type": "string"},
                "model_config": {"type": "string"},
                "model_fields": {"type": "string"},
                "dict": {"type": "string"},
                "with-dash": {"type": "string"},
                "with space": {"type": "string"},
                "1st": {"type": "string"},
                "class_": {"type": "string"},
                "ünïcode": {"type": "string"},
                "": {"type": "string"},
            },
            ["class", "schema"],
        ),
        "valid": [
            {"class": "c", "schema": "s", "_private": 1, "model_config": "m", "with-dash": "d", "": "e"}
        ],
        "invalid": [{"class": "c"}, {"class": 1, "schema": "s"}],
    },
    {
        "name": "defaults_and_descriptions",
        "schema": obj(
            {
                "limit": {"type": "integer", "default": 10, "description": "max rows"},
                "opts": {"type": "object", "default": {"a": 1}, "properties": {"a": {"type": "integer"}}},
                "x-custom": {"type": "string", "x-vendor": {"keep": True}, "examples": ["e"]},
            },
            title="T",
            **{"x-top": 1},
        ),
        "valid": [{}, {"limit": 3}],
        "invalid": [{"limit": "3"}],
    },
    {
        "name": "loose_missing_type_and_null_properties",
        "schema": {"properties": None},
        "valid": [{}, {"anything": 1}],
        "invalid": [],
    },
    {
        "name": "loose_required_absent",
        "schema": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "ghost"]},
        "valid": [{"a": "x", "ghost": 1}],
        "invalid": [{"a": "x"}],
    },
    {
        "name": "draft4_exclusive_bools",
        "schema": {
            "$schema": D4,
            "type": "object",
            "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 5}},
        },
        "valid": [{"n": 0.5}, {"n": 5}],
        "moved": ["minimum"],
        "invalid": [{"n": 0}, {"n": 6}],
    },
    {
        "name": "draft7_tuple_items_and_dependencies",
        "schema": {
            "$schema": D7,
            "type": "object",
            "properties": {
                "t": {"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "integer"}},
                "a": {"type": "string"},
                "b": {"type": "string"},
            },
            "dependencies": {"a": ["b"]},
        },
        "valid": [{"t": ["a", 1, 2]}, {"a": "x", "b": "y"}],
        "invalid": [{"t": [1]}, {"t": ["a", "b"]}, {"a": "x"}],
    },
    {
        "name": "deep_nesting",
        "schema": {"type": "object", "properties": {"d": {"$ref": "#/$defs/L0"}}, "$defs": {}},
        "generate": False,
        "valid": [{"d": {"n": {"n": {}}}}],
        "invalid": [],
    },
    {
        "name": "nullable_optional_for_strict",
        "schema": obj(
            {
                "req": {"type": "string"},
                "opt": {"type": "integer", "default": 3},
                "maybe": {"type": ["string", "null"]},
                "sub": obj({"x": {"type": "string"}, "y": {"type": "integer"}}, ["x"]),
            },
            ["req"],
        ),
        "valid": [{"req": "a"}, {"req": "a", "maybe": None, "sub": {"x": "q"}}],
        "invalid": [{"req": None}],
    },
]

# a 40-level chain of nested objects, built rather than written out
_defs = CASES[-2]["schema"]["$defs"]
for _i in range(40):
    _defs[f"L{_i}"] = {"type": "object", "properties": {"n": {"$ref": f"#/$defs/L{_i + 1}"}}}
_defs["L40"] = {"type": "object"}
