"""Redaction by value: what the user gave (header values, `auth` tokens, `env` values) is taken out of every
message cubepi builds from text a server sent.

A server may print back what it was given: a 401 whose reason phrase is ``Denied for Bearer <token>``, a
JSON-RPC error quoting a header, an env value on stderr. `redact` replaces each whole occurrence of a
secret by `MASK`, and also a piece of one at either end of the text, where a window may have cut it (the
stderr tail keeps the last 16 KiB: a secret straddling the cut would show all but its first characters).

Short values cannot be redacted sensibly: an env value ``1``, ``yes`` or ``debug`` is a setting, and
replacing it everywhere would garble the message while hiding nothing. Values shorter than
`MIN_SECRET_LENGTH` characters are left alone; a piece at a cut is redacted from `MIN_PIECE` characters
on, so at most ``MIN_PIECE - 1`` characters of a secret can show there.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["MASK", "MIN_PIECE", "MIN_SECRET_LENGTH", "redact", "secret_values"]

MASK = "***"
MIN_SECRET_LENGTH = 6
MIN_PIECE = 4


def secret_values(values: Iterable[str]) -> tuple[str, ...]:
    """The values worth redacting, longest first: each long enough, and of a credential header value
    (``Bearer <token>``, ``Basic <base64>``) also the token alone, which a server may quote without it."""
    found: set[str] = set()
    for value in values:
        found.add(value)
        scheme, _, token = value.partition(" ")
        if token and scheme.isalpha():
            found.add(token.strip())
    return tuple(sorted((v for v in found if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True))


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` without any of `secrets` (see `secret_values`), whole or cut at either end of `text`."""
    values = [secret for secret in secrets if len(secret) >= MIN_SECRET_LENGTH]
    if not values or not text:
        return text
    for secret in sorted(values, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    head = max((_cut_head(text, secret) for secret in values), default=0)
    if head:
        text = MASK + text[head:]
    tail = max((_cut_tail(text, secret) for secret in values), default=0)
    if tail:
        text = text[: len(text) - tail] + MASK
    return text


def _cut_head(text: str, secret: str) -> int:
    """How many characters at the start of `text` are the end of `secret` (at least `MIN_PIECE`), or a
    piece of its inside when `text` is that short; else 0."""
    start_piece = text[:MIN_PIECE]
    if len(start_piece) < MIN_PIECE:
        return 0
    at = secret.find(start_piece, 1)
    while at != -1:  # the first match leaves the longest end of the secret
        rest = secret[at:]
        if text.startswith(rest):
            return len(rest)
        if rest.startswith(text):
            return len(text)
        at = secret.find(start_piece, at + 1)
    return 0


def _cut_tail(text: str, secret: str) -> int:
    """How many characters at the end of `text` are the start of `secret` (at least `MIN_PIECE`); else 0."""
    end_piece = text[-MIN_PIECE:]
    if len(end_piece) < MIN_PIECE:
        return 0
    at = secret.rfind(end_piece, 0, len(secret) - 1)
    while at != -1:  # the last match leaves the longest start of the secret
        start = secret[: at + MIN_PIECE]
        if text.endswith(start):
            return len(start)
        at = secret.rfind(end_piece, 0, at + MIN_PIECE - 1)
    return 0
