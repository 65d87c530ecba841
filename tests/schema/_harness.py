"""Shared by the schema tests and `rates.py`: the corpus, the reference validator, instance generation,
and the four properties of issue 2 checked on one instance."""

from __future__ import annotations

import copy
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pydantic
from hypothesis import HealthCheck, given, settings
from hypothesis_jsonschema import from_schema

from cubepi.schema import schema_to_model, to_arguments

from .hard_cases import CASES

HERE = Path(__file__).parent


def corpus() -> list[dict[str, Any]]:
    """Every tool of tests/schema/corpus/*.json (whatever is there), as cases with a `name` and `schema`."""
    out = []
    for path in sorted((HERE / "corpus").glob("*.json")):
        data = json.loads(path.read_text())
        for tool in data.get("tools", []):
            out.append({"name": f"{path.stem}/{tool['name']}", "schema": tool.get("inputSchema")})
    return out


def hard_cases() -> list[dict[str, Any]]:
    return CASES


def reference(schema: dict[str, Any]) -> Any:
    """The `jsonschema` validator for a schema's declared dialect (2020-12 when it declares none)."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def judge(validator: Any, instance: Any) -> bool | None:
    """Reference verdict, or None when the reference validator itself cannot decide (bad regex, ...)."""
    try:
        return bool(validator.is_valid(instance))
    except Exception:
        return None


def json_equal(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(json_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    return type(left) is type(right) and left == right


def examples(schema: Any, count: int) -> tuple[list[Any], str | None]:
    """Up to `count` object instances generated from `schema`, or ([], reason) when it cannot generate."""
    found: list[Any] = []
    try:
        strategy = from_schema(copy.deepcopy(schema))  # it rewrites the schema it is given
    except Exception as exc:
        return [], f"hypothesis-jsonschema cannot generate: {type(exc).__name__}: {exc}"[:200]

    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(instance: Any) -> None:
        if isinstance(instance, dict):
            found.append(instance)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            collect()
    except Exception as exc:
        return found, f"hypothesis-jsonschema failed: {type(exc).__name__}: {exc}"[:200]
    return found, None


_PROBES: list[Any] = [None, "1", 1, 1.5, True, [], {}, "", -1, [1, "a"], {"k": None}]


def mutations(instance: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Near misses of a valid instance: each value swapped for probes, each key dropped, an extra key."""
    for key in list(instance)[:12]:
        rest = {k: v for k, v in instance.items() if k != key}
        yield rest
        for probe in _PROBES:
            yield {**rest, key: probe}
        value = instance[key]
        if isinstance(value, dict):
            for inner in mutations(value):
                yield {**rest, key: inner}
        if isinstance(value, list) and value and isinstance(value[0], dict):
            for inner in list(mutations(value[0]))[:20]:
                yield {**rest, key: [inner, *value[1:]]}
    yield {**instance, "zz_extra": 1}


class Verdicts:
    """Per-case tallies of the four properties; a property holds for a case when no instance broke it."""

    def __init__(self) -> None:
        self.failures: dict[int, list[str]] = {1: [], 2: [], 3: [], 4: []}
        self.checked = 0

    def fail(self, prop: int, message: str) -> None:
        if len(self.failures[prop]) < 5:
            self.failures[prop].append(message)

    def ok(self, prop: int) -> bool:
        return not self.failures[prop]


def build(case: dict[str, Any], verdicts: Verdicts) -> type[pydantic.BaseModel] | None:
    try:
        return schema_to_model(case["schema"], name=case["name"].rsplit("/", 1)[-1])
    except Exception as exc:
        verdicts.fail(1, f"conversion raised {type(exc).__name__}: {exc}")
        return None


def check_instance(
    model: type[pydantic.BaseModel], original: Any, exported: Any, x: Any, v: Verdicts
) -> None:
    """Properties 2, 3 and 4 of issue 2 on one instance."""
    verdict = judge(original, x)
    if verdict is None:
        return
    v.checked += 1
    try:
        params = model.model_validate(x)
        wire: Any = to_arguments(params)
    except pydantic.ValidationError:
        params = None
        wire = None
    if verdict:
        if params is None:
            v.fail(2, f"valid instance refused: {x!r}"[:300])
        elif not json_equal(wire, x):
            v.fail(2, f"sent {wire!r} for {x!r}"[:300])
    if params is not None and judge(original, wire) is False:
        v.fail(3, f"accepted {x!r} but sent invalid {wire!r}"[:300])
    if judge(exported, x) != verdict:
        v.fail(4, f"model_json_schema disagrees on {x!r}"[:300])


def run_case(case: dict[str, Any], count: int) -> tuple[Verdicts, str | None]:
    """All four properties over generated + fixed + mutated instances of one case."""
    v = Verdicts()
    model = build(case, v)
    if model is None:
        return v, None
    original = reference(case["schema"] if isinstance(case["schema"], dict) else {})
    exported = reference(model.model_json_schema())
    if len(json.dumps(case["schema"])) > 15000:  # keep CI fast on the few huge schemas
        count = max(3, count // 4)
    generated, reason = examples(case["schema"], count) if case.get("generate", True) else ([], "skipped")
    instances = [*case.get("valid", []), *case.get("invalid", []), *generated]
    for base in [*case.get("valid", []), *generated[:5]]:
        if isinstance(base, dict):
            instances.extend(mutations(base))
    for x in instances:
        check_instance(model, original, exported, x, v)
    _check_kept(case["schema"], model.model_json_schema(), v, set(case.get("moved", ())))
    return v, reason


_NAME_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
_DATA = {"enum", "const", "default", "examples"}


def _walk(node: Any) -> Iterator[tuple[str, Any]]:
    """(keyword, value) pairs of a schema, not descending into data or taking property names as keywords."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            if key in _NAME_MAPS and isinstance(value, dict):
                for sub in value.values():
                    yield from _walk(sub)
            elif key not in _DATA:
                yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


_KEPT = {"description", "default", "enum", "const", "minimum", "maximum", "minLength", "maxLength", "pattern"}
_KEPT |= {"multipleOf", "minItems", "maxItems", "format", "title", "uniqueItems", "examples"}


def _check_kept(original: Any, exported: dict[str, Any], v: Verdicts, moved: set[str]) -> None:
    """Property 4, second half: every description, default, enum and constraint is still there."""
    have = {(k, json.dumps(val, sort_keys=True)) for k, val in _walk(exported)}
    for key, value in _walk(original):
        if key in _KEPT and key not in moved and (key, json.dumps(value, sort_keys=True)) not in have:
            v.fail(4, f"lost {key}={value!r}"[:200])
