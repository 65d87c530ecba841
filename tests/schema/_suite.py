"""The official JSON Schema Test Suite (required tests of five drafts, vendored in `suite/`) as tool calls.

Each suite schema is a tool's `inputSchema`: as it is when every instance of its group is an object,
otherwise wrapped as the one required property `v` of an object schema (local `#...` references rewritten
to point into the property unless the schema has its own id). Groups whose references need the suite's
remote documents or a metaschema are left out: no tool schema can count on the network.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic

from cubepi.schema import schema_to_model, to_arguments

SUITE = Path(__file__).parent / "suite"
DRAFTS = {
    "draft2020-12": "https://json-schema.org/draft/2020-12/schema",
    "draft2019-09": "https://json-schema.org/draft/2019-09/schema",
    "draft7": "http://json-schema.org/draft-07/schema#",
    "draft6": "http://json-schema.org/draft-06/schema#",
    "draft4": "http://json-schema.org/draft-04/schema#",
}
_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")


@dataclass
class Group:
    draft: str
    name: str
    schema: Any
    wrapped: bool
    tests: list[tuple[str, Any, bool]]  # (description, instance as sent, valid)


def _remote(node: Any) -> bool:
    if isinstance(node, dict):
        for key, value in node.items():
            if (
                key in _REF_KEYS
                and isinstance(value, str)
                and ("localhost:1234" in value or "json-schema.org" in value)
            ):
                return True
            if key == "$schema" and isinstance(value, str) and "localhost:1234" in value:
                return True
            if key not in ("enum", "const") and _remote(value):
                return True
    elif isinstance(node, list):
        return any(_remote(v) for v in node)
    return False


def _point_into_v(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and (value == "#" or value.startswith("#/")):
                out[key] = "#/properties/v" + value[1:]
            elif key in ("enum", "const"):
                out[key] = value
            else:
                out[key] = _point_into_v(value)
        return out
    if isinstance(node, list):
        return [_point_into_v(v) for v in node]
    return node


def _wrap(schema: Any, draft: str) -> dict[str, Any]:
    own_id = isinstance(schema, dict) and ("$id" in schema or (draft == "draft4" and "id" in schema))
    inner = schema if own_id or not isinstance(schema, dict) else _point_into_v(schema)
    if isinstance(inner, dict):
        inner = {k: v for k, v in inner.items() if k != "$schema"}
    return {"$schema": DRAFTS[draft], "type": "object", "properties": {"v": inner}, "required": ["v"]}


def groups(draft: str) -> Iterator[Group]:
    """Every usable group of one draft's required tests."""
    for path in sorted((SUITE / draft).glob("*.json")):
        for raw in json.loads(path.read_text()):
            schema = raw["schema"]
            if _remote(schema) or "localhost:1234" in json.dumps(schema):
                continue
            tests = raw["tests"]
            if all(isinstance(t["data"], dict) for t in tests) and isinstance(schema, dict):
                root = schema if "$schema" in schema else {"$schema": DRAFTS[draft], **schema}
                cases = [(t["description"], t["data"], t["valid"]) for t in tests]
                yield Group(draft, f"{path.stem}: {raw['description']}", root, False, cases)
            else:
                cases = [(t["description"], {"v": t["data"]}, t["valid"]) for t in tests]
                yield Group(draft, f"{path.stem}: {raw['description']}", _wrap(schema, draft), True, cases)


def same(sent: Any, given: Any) -> bool:
    """JSON equality with JSON types kept (false is not 0); 1.0 sent as 1 is the one allowed change."""
    if isinstance(sent, bool) or isinstance(given, bool):
        return type(sent) is type(given) and sent == given
    if isinstance(sent, (int, float)) and isinstance(given, (int, float)):
        return sent == given and (
            type(sent) is type(given) or (isinstance(given, float) and given.is_integer())
        )
    if isinstance(sent, list) and isinstance(given, list):
        return len(sent) == len(given) and all(same(a, b) for a, b in zip(sent, given, strict=True))
    if isinstance(sent, dict) and isinstance(given, dict):
        return sent.keys() == given.keys() and all(same(sent[k], given[k]) for k in sent)
    return type(sent) is type(given) and sent == given


@dataclass
class Outcome:
    """One suite case through cubepi: accepted or not, and whether what was sent equals what came in."""

    accepted: bool
    unchanged: bool


def cubepi_judge(group: Group) -> Callable[[Any], Outcome]:
    try:
        model: type[pydantic.BaseModel] | None = schema_to_model(group.schema, name="suite")
    except Exception:
        model = None

    def judge(instance: Any) -> Outcome:
        if model is None:
            return Outcome(False, True)
        try:
            wire = to_arguments(model.model_validate(instance))
        except pydantic.ValidationError:
            return Outcome(False, True)
        return Outcome(True, same(wire, instance))

    return judge


def _judge(compile_: Callable[[], Any]) -> Callable[[Any], bool | None]:
    """A reference validator's verdicts; None where it cannot decide (a schema or instance it refuses)."""
    try:
        validator = compile_()
    except Exception:
        return lambda _x: None

    def judge(instance: Any) -> bool | None:
        try:
            return bool(validator.is_valid(instance))
        except Exception:
            return None

    return judge


def jsonschema_judge(group: Group) -> Callable[[Any], bool | None]:
    import jsonschema

    cls = jsonschema.validators.validator_for(group.schema, default=jsonschema.Draft202012Validator)
    return _judge(lambda: cls(group.schema))


def jsonschema_rs_judge(group: Group) -> Callable[[Any], bool | None]:
    import jsonschema_rs

    return _judge(
        lambda: jsonschema_rs.validator_for(group.schema, validate_formats=False, retriever=lambda _u: {})
    )


@dataclass
class Tally:
    cases: int = 0
    agree: int = 0
    valid: int = 0
    valid_accepted: int = 0
    invalid: int = 0
    invalid_refused: int = 0

    def add(self, expected: bool, accepted: bool | None) -> None:
        self.cases += 1
        self.agree += accepted is expected
        if expected:
            self.valid += 1
            self.valid_accepted += accepted is True
        else:
            self.invalid += 1
            self.invalid_refused += accepted is False

    def rate(self) -> float:
        return 100.0 * self.agree / max(self.cases, 1)
