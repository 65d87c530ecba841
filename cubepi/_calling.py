"""What the code running a tool tells it of one call: a callback answering input a server asks for, and
whether the event loop ends with the call.

The `Agent` runs tools it did not load; its ``elicitation_callback`` reaches the MCP tools it calls through
this context variable, for the calls made inside `lending_elicitation`. A tool list's own
``elicitation_callback`` (given to its loader) wins over a lent one. ``execute_sync`` runs a loop for one
call (`in_a_loop_of_one_call`): what would outlive the call there (a stdio server's shutdown) is waited
for instead.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

__all__ = ["in_a_loop_of_one_call", "lending_elicitation", "lent_elicitation", "loop_of_one_call"]

_ELICITATION: contextvars.ContextVar[Any] = contextvars.ContextVar("cubepi_elicitation", default=None)
_ONE_CALL: contextvars.ContextVar[bool] = contextvars.ContextVar("cubepi_one_call", default=False)


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


@contextlib.contextmanager
def loop_of_one_call() -> Iterator[None]:
    """Within this block, the running event loop ends once the call made in it returns."""
    token = _ONE_CALL.set(True)
    try:
        yield
    finally:
        _ONE_CALL.reset(token)


def in_a_loop_of_one_call() -> bool:
    """Whether the running event loop ends with the current call (``execute_sync``)."""
    return _ONE_CALL.get()
