"""The other requests a server may make in the middle of a call: sampling (a completion of the client's
model) and roots (the client's roots).

The SDK's `ClientSession` answers both with the callbacks it is given, in either era: during a
handshake-era session as server-to-client requests, and on a 2026-07-28 server as input requests of the
call's ``InputRequiredResult`` rounds (`ClientSession.dispatch_input_request`). A loader only checks the
callbacks and hands them to every session its calls open.
"""

from __future__ import annotations

from typing import Any

from ...errors import UserError

__all__ = ["server_requests"]

_SIGNATURES = {
    "sampling_callback": "an async function (context, params) -> CreateMessageResult",
    "list_roots_callback": "an async function (context) -> ListRootsResult",
}


def server_requests(**callbacks: Any) -> dict[str, Any]:
    """The session keyword arguments for the given callbacks (those not None), each checked callable."""
    chosen: dict[str, Any] = {}
    for name, callback in callbacks.items():
        if callback is None:
            continue
        if not callable(callback):
            raise UserError(f"{name} must be {_SIGNATURES[name]}, got {type(callback).__name__}")
        chosen[name] = callback
    return chosen
