"""Print the four rates of issue 2 over the real corpus (and the hard cases).

    /work/venv/bin/python -m tests.schema.rates [--examples N]

A rate is the share of tools for which the property held on every instance checked (generated with
hypothesis-jsonschema from the tool's schema, plus near-miss mutations of them).
"""

from __future__ import annotations

import argparse

from ._harness import corpus, hard_cases, run_case


def rates(cases: list[dict[str, object]], count: int) -> tuple[dict[int, float], int, list[str]]:
    held = {1: 0, 2: 0, 3: 0, 4: 0}
    instances = 0
    notes: list[str] = []
    for case in cases:
        verdicts, reason = run_case(case, count)  # type: ignore[arg-type]
        instances += verdicts.checked
        for prop in held:
            if verdicts.ok(prop):
                held[prop] += 1
            else:
                notes.append(f"{case['name']}: property {prop}: {verdicts.failures[prop][0]}")
        if reason and reason != "skipped":
            notes.append(f"{case['name']}: {reason}")
    total = max(len(cases), 1)
    return {p: 100.0 * n / total for p, n in held.items()}, instances, notes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=30)
    args = parser.parse_args()
    labels = {1: "conversion never raises", 2: "valid => accepted, sent unchanged"}
    labels |= {3: "accepted => wire valid", 4: "model_json_schema agrees + keeps"}
    for title, cases in (("real corpus", corpus()), ("hard cases", hard_cases())):
        result, instances, notes = rates(cases, args.examples)
        print(f"{title}: {len(cases)} tools, {instances} instances judged by jsonschema")
        for prop, rate in result.items():
            print(f"  {prop}. {labels[prop]:<36} {rate:6.1f}%")
        for note in notes:
            print("   -", note)


if __name__ == "__main__":
    main()
