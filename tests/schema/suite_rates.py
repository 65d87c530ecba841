"""Agreement with the JSON Schema Test Suite: cubepi next to `jsonschema` and `jsonschema-rs`, measured
the same way (each suite schema a tool's `inputSchema`, see `_suite.py`).

    python -m tests.schema.suite_rates
"""

from __future__ import annotations

from ._suite import DRAFTS, Tally, cubepi_judge, groups, jsonschema_judge, jsonschema_rs_judge


def main() -> None:
    print("| draft | cases | cubepi (valid accepted, invalid refused) | `jsonschema` | `jsonschema-rs` |")
    print("|---|---:|---:|---:|---:|")
    for draft in DRAFTS:
        ours, ref, rs = Tally(), Tally(), Tally()
        for group in groups(draft):
            judge, ref_judge, rs_judge = (
                cubepi_judge(group),
                jsonschema_judge(group),
                jsonschema_rs_judge(group),
            )
            for _, instance, valid in group.tests:
                outcome = judge(instance)
                ours.add(valid, outcome.accepted and outcome.unchanged)
                ref.add(valid, ref_judge(instance))
                rs.add(valid, rs_judge(instance))
        detail = (
            f"{100 * ours.valid_accepted / max(ours.valid, 1):.1f}%, "
            f"{100 * ours.invalid_refused / max(ours.invalid, 1):.1f}%"
        )
        rates = f"{ours.rate():.1f}% ({detail}) | {ref.rate():.1f}% | {rs.rate():.1f}%"
        print(f"| {draft} | {ours.cases} | {rates} |")


if __name__ == "__main__":
    main()
