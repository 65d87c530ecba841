"""What the code running a tool tells it of one call: a callback answering input a server asks for, and
whether the event loop ends with the call.

The `Agent` runs tools it did not load; its ``elicitation_callback`` reaches the MCP tools it calls through
this context variable, for the calls made inside `lending_elicitation`. A tool list's own
``elicitation_callback`` (given to its loader) wins over a lent one. ``execute_sync`` (and a generated
client's ``run_sync``) runs a loop for one call (`run_in_a_loop_of_its_own`, `in_a_loop_of_one_call`):
what would outlive the call there (a stdio server's shutdown) is waited for instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, ParamSpec, TypeVar

import anyio

__all__ = [
    "in_a_loop_of_one_call",
    "lending_elicitation",
    "lent_elicitation",
    "loop_of_one_call",
    "run_in_a_loop_of_its_own",
]

P = ParamSpec("P")
T = TypeVar("T")

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


def run_in_a_loop_of_its_own(function: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``function(*args, **kwargs)`` run to its end in an event loop of its own, from synchronous code:
    here when no loop runs, else in a worker thread (a notebook's cell), with the caller's context
    variables."""

    async def call() -> T:
        with loop_of_one_call():
            return await function(*args, **kwargs)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(call)
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="cubepi-sync") as pool:
        return pool.submit(context.run, _run_in_new_loop, call).result()


def _run_in_new_loop(call: Callable[[], Awaitable[T]]) -> T:
    """`anyio.run` in a copy of a running loop's context: the copy still says which library runs there."""
    try:
        import sniffio
    except ImportError:  # pragma: no cover - anyio then asks asyncio, which has no loop in this thread
        pass
    else:
        sniffio.current_async_library_cvar.set(None)
    return anyio.run(call)
