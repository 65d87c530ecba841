"""What the code running a tool lends it for one call: a callback answering input a server asks for.

The `Agent` runs tools it did not load; its ``elicitation_callback`` reaches the MCP tools it calls through
this context variable, for the calls made inside `lending_elicitation`. A tool list's own
``elicitation_callback`` (given to its loader) wins over a lent one.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

__all__ = ["lending_elicitation", "lent_elicitation"]

_ELICITATION: contextvars.ContextVar[Any] = contextvars.ContextVar("cubepi_elicitation", default=None)


@contextlib.contextmanager
def lending_elicitation(callback: Any) -> Iterator[None]:
    """Within this block, MCP calls without an ``elicitation_callback`` of their own use `callback`."""
    token = _ELICITATION.set(callback)
    try:
        yield
    finally:
        _ELICITATION.reset(token)


def lent_elicitation() -> Any:
    """The elicitation callback lent to the current call, or None."""
    return _ELICITATION.get()
