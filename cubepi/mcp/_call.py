"""One stateless call: a session no earlier call used, closed whatever happens, one readable error.

On a 2026-07-28 server the session adopts the discover result found at load, so a call is one request
(over HTTP one POST on the list's shared client; over stdio a fresh process whose first line is the call).
On a handshake-era server it is a fresh initialized session. A call the server refuses for its protocol
version probes the server once more and is sent again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import anyio.lowlevel

from .._calling import lent_elicitation
from . import _errors
from ._http import HTTP_CLOSE_GRACE
from ._open import open_session
from ._session import UNSUPPORTED_PROTOCOL_VERSION, Attempt, Endpoint, Interrupted, Session

__all__ = ["Work", "run_fresh", "run_stateless"]

T = TypeVar("T")
Work = Callable[[Session], Awaitable[T]]


async def run_stateless(
    endpoint: Endpoint, work: Work[T], *, tool_name: str | None = None, **session_kwargs: object
) -> T:
    """Run `work` on a session no earlier call used; raise one readable `MCPError` (never a group).

    The tools of a loaded list run `work` on the list's spare session with ``prespawn=True`` (see
    `_prespawn`). A call refused with "unsupported protocol version" forgets the protocol found at load,
    probes again and runs `work` once more.
    """
    endpoint.server.check_travelled()
    resources = endpoint.resources
    if resources is not None:
        resources.check_open()
        own_input = "elicitation_callback" in endpoint.callbacks or lent_elicitation() is None
        if resources.spares is not None and not session_kwargs and own_input:
            outcome = await resources.spares.run(work, tool_name=tool_name)
            if outcome is not resources.spares.NONE:
                return outcome  # type: ignore[return-value]
    try:
        return await run_fresh(endpoint, work, tool_name=tool_name, **session_kwargs)
    except _ProtocolRefused:
        endpoint.protocol = None
        return await run_fresh(endpoint, work, tool_name=tool_name, **session_kwargs)


class _ProtocolRefused(Exception):
    """The server refused the adopted protocol version (-32022): its protocol changed since load."""


async def run_fresh(
    endpoint: Endpoint, work: Work[T], *, tool_name: str | None = None, **session_kwargs: object
) -> T:
    """Open a fresh session, run `work`, close it; translate what fails.

    Cancellation of the caller interrupts `work` only: the transport is then closed under a shield, so a
    stdio server gets the SDK's full shutdown (stdin closed, grace period, SIGTERM/SIGKILL of its process
    group) and no process or socket outlives the call. The cancellation is re-raised afterwards.
    """
    attempt = Attempt(tool_name=tool_name)
    body = anyio.CancelScope()
    shield = anyio.CancelScope(shield=True)
    grace = None if endpoint.server.kind == "stdio" else HTTP_CLOSE_GRACE
    done = False
    result: T | None = None

    async def relay_cancellation() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            body.cancel()
            attempt.interrupt()
            if grace is not None:
                shield.deadline = anyio.current_time() + grace

    try:
        async with anyio.create_task_group() as guard:
            guard.start_soon(relay_cancellation)
            try:
                with shield:
                    async with open_session(endpoint, attempt, **session_kwargs) as session:
                        with body:
                            result = await work(session)
                            done = True
            finally:
                guard.cancel_scope.cancel()
    except BaseException as exc:
        if _errors.is_cancellation(exc):
            raise
        leaves = _errors.leaves(exc)
        if any(isinstance(leaf, Interrupted) for leaf in leaves):
            done = False  # the caller was cancelled while the session was opening: delivered below
        elif any(_errors.sdk_error_code(leaf) == UNSUPPORTED_PROTOCOL_VERSION for leaf in leaves) and (
            endpoint.protocol is not None and getattr(endpoint.server, "protocol", "auto") == "auto"
        ):
            raise _ProtocolRefused() from exc
        else:
            _errors.reraise(await attempt.error(exc, endpoint.describe()))
    if not done:
        # `work` was interrupted because the caller was cancelled: deliver that cancellation now.
        await anyio.lowlevel.checkpoint()
        raise anyio.get_cancelled_exc_class()()
    return result  # type: ignore[return-value]
