"""`_redact`: secrets taken out of text a server sent, whole or cut at either end of the text."""

from __future__ import annotations

import pytest

from cubepi.mcp._redact import MASK, redact, secret_values

SECRET = "tok-5f1e9a7c2b84d6e03a91"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"a {SECRET} b {SECRET}", f"a {MASK} b {MASK}"),
        (f"{SECRET[2:]} and more", f"{MASK} and more"),  # cut at the start
        (f"{SECRET[-4:]} and more", f"{MASK} and more"),  # the shortest piece redacted
        (f"{SECRET[-3:]} and more", f"{SECRET[-3:]} and more"),  # shorter: cannot be told from text
        (f"and more {SECRET[:-1]}", f"and more {MASK}"),  # cut at the end
        (f"and more {SECRET[:4]}", f"and more {MASK}"),
        (f"and more {SECRET[:3]}", f"and more {SECRET[:3]}"),
        (SECRET[5:15], MASK),  # a text that is all inside the secret
        ("", ""),
    ],
)
def test_redact_whole_and_cut(text: str, expected: str) -> None:
    assert redact(text, [SECRET]) == expected


def test_short_values_are_not_secrets() -> None:
    assert redact("level debug: yes 1", secret_values(["debug", "yes", "1"])) == "level debug: yes 1"
    assert redact("a 123456 b", secret_values(["123456"])) == f"a {MASK} b"


def test_a_credential_header_value_gives_its_token_too() -> None:
    values = secret_values([f"Bearer {SECRET}", "Basic dXNlcjpwYXNzd29yZA==", "short"])
    assert values[:1] == (f"Bearer {SECRET}",)
    assert SECRET in values and "dXNlcjpwYXNzd29yZA==" in values and "short" not in values
    assert redact(f"no {SECRET} here", values) == f"no {MASK} here"


def test_a_text_shorter_than_a_piece_is_left_alone() -> None:
    for text in ("a", "ab", "abc"):
        assert redact(text, [SECRET]) == text


# A secret whose inside repeats a piece: a cut text may start (or end) with that piece where it first (or
# last) occurs in the secret without being that part of it; the later (or earlier) occurrence is the cut.
REPEATS = "ab12-wxyz-cd34-wxyz-ef56"


def test_a_cut_at_the_start_is_found_past_an_earlier_repeat_of_its_piece() -> None:
    assert redact(f"{REPEATS[15:]} and more", [REPEATS]) == f"{MASK} and more"
    assert redact("wxyz-nothing else", [REPEATS]) == "wxyz-nothing else"


def test_a_cut_at_the_end_is_found_before_a_later_repeat_of_its_piece() -> None:
    assert redact(f"and more {REPEATS[:9]}", [REPEATS]) == f"and more {MASK}"
    assert redact("nothing else-wxyz", [REPEATS]) == "nothing else-wxyz"
