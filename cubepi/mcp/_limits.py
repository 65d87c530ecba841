"""How much one response may hold: `max_response_bytes`, its default, its check and its error.

A server's response is read whole before it is parsed (the SDK parses a JSON-RPC message at once), so a
server that sends an endless line, body or event would otherwise take the caller's memory with it. The
readers cubepi owns (the stdio line reader in `_process`, the HTTP body stream in `_http`) count bytes as
they arrive and stop at the limit; Streamable HTTP's SSE events use the SDK's own per-event bound.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import UserError

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "SAME_AS_SERVER",
    "ResponseTooLarge",
    "check_response_bytes",
    "sse_limit_hit",
]

DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024


class _SameAsServer:
    """The default of the loaders' `max_response_bytes`: the server config's own setting."""

    def __repr__(self) -> str:
        return "SAME_AS_SERVER"


SAME_AS_SERVER: Any = _SameAsServer()


def check_response_bytes(value: object) -> int | None:
    """`value` as a `max_response_bytes` setting: a positive number of bytes, or None (no limit)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UserError(f"max_response_bytes must be a positive number of bytes or None, got {value!r}")
    return value


def _size(limit: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if limit >= scale:
            return f"{limit / scale:.4g} {unit}"
    return f"{limit} bytes"


class ResponseTooLarge(Exception):
    """A server's response (a stdio line, an HTTP body, an SSE event) went past `max_response_bytes`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"the server's response exceeded max_response_bytes={limit} ({_size(limit)}); raise it on the "
            "loader or the server config (max_response_bytes=None: no limit) if the server is trusted"
        )


# The message of the SDK's (httpx2's) SSE event bound, which cubepi sets to `max_response_bytes`.
_SSE_LIMIT = re.compile(r"event exceeded the (\d+) byte limit")


def sse_limit_hit(message: str) -> ResponseTooLarge | None:
    """The `ResponseTooLarge` an SDK error message reports (an SSE event past its bound), else None."""
    found = _SSE_LIMIT.search(message)
    return ResponseTooLarge(int(found.group(1))) if found else None
