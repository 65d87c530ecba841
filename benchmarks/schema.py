"""Median build time per tool over the corpus: `schema_to_model` next to a bare `create_model`.

    /work/venv/bin/python benchmarks/schema.py

The reference builds a model of the same top-level fields with plain types (str, int, float, bool,
list, dict, Any) and nothing else: the floor any JSON Schema -> Pydantic bridge pays.
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


def bare(schema: dict[str, Any], name: str) -> type[pydantic.BaseModel]:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    fields: dict[str, Any] = {}
    for i, (wire, sub) in enumerate(props.items()):
        kind = sub.get("type") if isinstance(sub, dict) else None
        ann = PLAIN.get(kind, Any) if isinstance(kind, str) else Any
        fields[f"f{i}"] = (ann, pydantic.Field(... if wire in required else None, alias=wire))
    return pydantic.create_model(name, **fields)


def timed(build: Any, schema: dict[str, Any], name: str, repeat: int = 5) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        build(schema, name)
        samples.append(time.perf_counter() - start)
    return min(samples)


def main() -> None:
    tools = []
    for path in sorted(CORPUS.glob("*.json")):
        tools += [(t["name"], t["inputSchema"]) for t in json.loads(path.read_text())["tools"]]
    ours = [timed(lambda s, n: schema_to_model(s, name=n), s, n) for n, s in tools]
    ref = [timed(bare, s, n) for n, s in tools]
    med_ours, med_ref = statistics.median(ours), statistics.median(ref)
    print(f"{len(tools)} tools from {CORPUS}")
    print(f"schema_to_model   median {med_ours * 1e3:7.3f} ms/tool   total {sum(ours) * 1e3:8.1f} ms")
    print(f"bare create_model median {med_ref * 1e3:7.3f} ms/tool   total {sum(ref) * 1e3:8.1f} ms")
    print(f"ratio (median)    {med_ours / med_ref:5.2f}x")
    worst = sorted(zip(ours, ref, (n for n, _ in tools), strict=True), reverse=True)[:3]
    for o, r, n in worst:
        print(f"  slowest: {n:<40} {o * 1e3:7.3f} ms (bare {r * 1e3:.3f} ms)")


if __name__ == "__main__":
    main()
