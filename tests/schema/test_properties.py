"""The four properties of issue 2, judged by `jsonschema`, over the hard cases and the real corpus."""

from __future__ import annotations

from typing import Any

import pytest

from ._harness import corpus, hard_cases, run_case

EXAMPLES = 8


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [c["name"] for c in cases]


def _assert_case(case: dict[str, Any]) -> None:
    verdicts, reason = run_case(case, EXAMPLES)
    broken = {prop: msgs for prop, msgs in verdicts.failures.items() if msgs}
    assert not broken, f"{case['name']}: {broken}"
    assert verdicts.checked > 0 or reason


@pytest.mark.parametrize("case", hard_cases(), ids=_ids(hard_cases()))
def test_hard_case(case: dict[str, Any]) -> None:
    _assert_case(case)


CORPUS = corpus()


@pytest.mark.skipif(not CORPUS, reason="tests/schema/corpus/ is empty")
@pytest.mark.parametrize("case", CORPUS, ids=_ids(CORPUS))
def test_real_corpus(case: dict[str, Any]) -> None:
    _assert_case(case)
