"""docs/reliability.md is checked against the tests: every row names a test that exists, every fault test
has a row, and a row says "known bug" exactly when its test is (partly) marked xfail."""

from __future__ import annotations

import ast
from pathlib import Path

FAULTS = Path(__file__).parent
DOC = FAULTS.parent.parent / "docs" / "reliability.md"


def rows() -> list[tuple[str, str, str, str]]:
    """The rows of every table between ``<!-- cases: begin -->`` and ``<!-- cases: end -->``."""
    text = DOC.read_text(encoding="utf-8")
    found = []
    for block in text.split("<!-- cases: begin -->")[1:]:
        table = block.split("<!-- cases: end -->", 1)[0]
        for line in table.strip().splitlines()[2:]:
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            assert len(cells) == 4, f"a row needs 4 cells: {line}"
            case, seen, status, test = cells
            found.append((case, seen, status, test.strip("`")))
    return found


def fault_tests() -> dict[str, bool]:
    """`file.py::test_name` -> whether the test (or one of its parameters) is marked xfail."""
    found: dict[str, bool] = {}
    for path in sorted([*FAULTS.glob("test_faults_*.py"), *FAULTS.glob("test_hostile*.py")]):
        if path.name == Path(__file__).name:
            continue
        source = path.read_text(encoding="utf-8")
        module = ast.parse(source)
        xfail_names = {
            target.id
            for node in module.body
            if isinstance(node, ast.Assign) and "xfail" in (ast.get_source_segment(source, node.value) or "")
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in module.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
                decorators = " ".join(
                    ast.get_source_segment(source, item) or "" for item in node.decorator_list
                )
                marked = "xfail" in decorators or any(name in decorators for name in xfail_names)
                found[f"{path.name}::{node.name}"] = marked
    return found


def test_every_row_names_an_existing_test() -> None:
    known = fault_tests()
    missing = [test for _, _, _, test in rows() if test not in known]
    assert not missing, f"docs/reliability.md names tests that do not exist: {missing}"


def test_every_fault_test_has_a_row() -> None:
    listed = {test for _, _, _, test in rows()}
    unlisted = sorted(set(fault_tests()) - listed)
    assert not unlisted, f"tests without a row in docs/reliability.md: {unlisted}"


def test_status_matches_the_xfail_marks() -> None:
    known = fault_tests()
    for case, seen, status, test in rows():
        assert status in ("ok", "known bug"), f"{case}: status must be 'ok' or 'known bug', got {status!r}"
        assert seen, f"{case}: say what the user sees"
        if test in known:
            assert (status == "known bug") == known[test], (
                f"{case}: status {status!r} but xfail={known[test]}"
            )
