"""Build and check times over the corpus: `schema_to_model` next to a bare `create_model`, and the exact
check (jsonschema-rs) of one call's arguments on top of Pydantic's own validation.

    python benchmarks/schema.py

The reference builds a model of the same top-level fields with plain types (str, int, float, bool,
list, dict, Any) and nothing else: the floor any JSON Schema -> Pydantic bridge pays. A tool's build is
measured with its validator compiled (the validator is otherwise compiled on the tool's first call).
Targets (issue 22): build with validator <= 0.5 ms median and <= 5 ms for the slowest tool; the check <= 5 µs
median per call on top of Pydantic. Figures before the one validator (the hand-written checker, same corpus):
build 0.70 ms median (2.56x bare create_model), slowest `firecrawl_crawl` 14.7 ms; check 10 µs per instance.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import pydantic

from cubepi.schema import schema_to_model

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "schema" / "corpus"
PLAIN: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list}
PLAIN["object"] = dict
# CPU time of this thread: on a machine shared with other work, wall time measures the neighbours.
CLOCK = time.thread_time
SAMPLE: dict[str, Any] = {
    "string": "x",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "array": [],
    "object": {},
}


def bare(schema: dict[str, Any], name: str) -> type[pydantic.BaseModel]:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    fields: dict[str, Any] = {}
    for i, (wire, sub) in enumerate(props.items()):
        kind = sub.get("type") if isinstance(sub, dict) else None
        ann = PLAIN.get(kind, Any) if isinstance(kind, str) else Any
        fields[f"f{i}"] = (ann, pydantic.Field(... if wire in required else None, alias=wire))
    return pydantic.create_model(name, **fields)


def built(schema: dict[str, Any], name: str) -> type[pydantic.BaseModel]:
    model = schema_to_model(schema, name=name)
    model.__cubepi_validator__.compiled()  # type: ignore[attr-defined]
    return model


def timed(build: Any, schema: dict[str, Any], name: str, repeat: int = 5) -> float:
    samples = []
    for _ in range(repeat):
        start = CLOCK()
        build(schema, name)
        samples.append(CLOCK() - start)
    return min(samples)


def instance(schema: dict[str, Any]) -> dict[str, Any]:
    """Every property with a plain value of its schema (enum, const, default or example when given)."""
    out: dict[str, Any] = {}
    for wire, sub in (schema.get("properties") or {}).items():
        if not isinstance(sub, dict):
            continue
        if isinstance(sub.get("enum"), list) and sub["enum"]:
            out[wire] = sub["enum"][0]
        elif "const" in sub:
            out[wire] = sub["const"]
        elif "default" in sub:
            out[wire] = sub["default"]
        elif isinstance(sub.get("type"), str) and sub["type"] in SAMPLE:
            out[wire] = SAMPLE[sub["type"]]
    return out


def per_call(model: Any, data: dict[str, Any], repeat: int = 200) -> float:
    start = CLOCK()
    for _ in range(repeat):
        model.model_validate(data)
    return (CLOCK() - start) / repeat


def check_cost(model: Any, data: dict[str, Any]) -> tuple[float, float] | None:
    """(Pydantic alone, the exact check on top) seconds per call, or None when `data` is not accepted."""
    try:
        model.model_validate(data)
    except pydantic.ValidationError:
        return None
    check = model.__cubepi_validator__
    model.__cubepi_validator__ = None
    try:
        alone = min(per_call(model, data) for _ in range(3))
    finally:
        model.__cubepi_validator__ = check
    return alone, min(per_call(model, data) for _ in range(3)) - alone


def main() -> None:
    tools = []
    for path in sorted(CORPUS.glob("*.json")):
        tools += [(t["name"], t["inputSchema"]) for t in json.loads(path.read_text())["tools"]]
    ours = [timed(built, s, n) for n, s in tools]
    lazy = [timed(lambda s, n: schema_to_model(s, name=n), s, n) for n, s in tools]
    ref = [timed(bare, s, n) for n, s in tools]
    med_ours, med_ref = statistics.median(ours), statistics.median(ref)
    print(f"{len(tools)} tools from {CORPUS}")
    print(
        f"schema_to_model + validator median {med_ours * 1e3:7.3f} ms/tool   total {sum(ours) * 1e3:8.1f} ms"
    )
    print(f"schema_to_model (lazy)      median {statistics.median(lazy) * 1e3:7.3f} ms/tool")
    print(f"bare create_model           median {med_ref * 1e3:7.3f} ms/tool   total {sum(ref) * 1e3:8.1f} ms")
    print(f"ratio (median)              {med_ours / med_ref:5.2f}x   (before: 0.70 ms, 2.56x)")
    worst = sorted(zip(ours, ref, (n for n, _ in tools), strict=True), reverse=True)[:3]
    for o, r, n in worst:
        print(f"  slowest: {n:<40} {o * 1e3:7.3f} ms (bare {r * 1e3:.3f} ms)")
    print("  (before: firecrawl_crawl 14.7 ms)")
    costs = [c for n, s in tools if (c := check_cost(schema_to_model(s, name=n), instance(s))) is not None]
    alone = statistics.median(a for a, _ in costs) * 1e6
    extra = statistics.median(c for _, c in costs) * 1e6
    print(f"one call's arguments, {len(costs)} tools: Pydantic median {alone:.1f} µs,")
    print(f"  the exact check on top median {extra:.1f} µs   (before: 10 µs)")


if __name__ == "__main__":
    main()
