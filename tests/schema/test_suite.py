"""The official JSON Schema Test Suite (required tests of drafts 4, 6, 7, 2019-09, 2020-12) through
`schema_to_model` / `model_validate` / `to_arguments`, against the reference validator `jsonschema`."""

from __future__ import annotations

import logging

import pytest

from ._suite import DRAFTS, Tally, cubepi_judge, groups, jsonschema_judge


@pytest.mark.parametrize("draft", list(DRAFTS))
def test_agrees_with_the_suite_at_least_as_well_as_jsonschema(
    draft: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="cubepi.schema")
    ours, ref = Tally(), Tally()
    refused: list[str] = []
    changed: list[str] = []
    for group in groups(draft):
        judge, reference = cubepi_judge(group), jsonschema_judge(group)
        for description, instance, valid in group.tests:
            outcome = judge(instance)
            verdict = reference(instance)
            ours.add(valid, outcome.accepted and outcome.unchanged)
            ref.add(valid, verdict)
            if valid and verdict is True and not outcome.accepted:
                refused.append(f"{group.name} / {description}")
            if outcome.accepted and not outcome.unchanged:
                changed.append(f"{group.name} / {description}")
    assert ours.cases > 500
    assert not refused, refused[:10]
    assert not changed, changed[:10]
    assert ours.rate() >= ref.rate(), (ours.rate(), ref.rate())
