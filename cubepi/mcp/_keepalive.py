"""Connections that survive the SDK's early close of a finished response, so a session's requests share one.

The SDK stops reading a Streamable HTTP response as soon as the JSON-RPC response arrives on it, and does
not read the (empty) body of a 202. httpx then closes the connection, as it must for a response not read
to its end, although the server ends it a moment later. `keep_alive`, a response hook, makes closing such
a response read its rest first, when that comes within `DRAIN_SECONDS` and `DRAIN_BYTES`: the connection
goes back to the pool for the session's next request (initialize, the initialized notification, the call
and the DELETE ride one connection instead of opening four). A server that keeps the stream open has its
connection closed as before. Cancellation cuts the reading short, and the caller never waits for it: it
has the JSON-RPC response already.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx

__all__ = ["DRAIN_BYTES", "DRAIN_SECONDS", "keep_alive"]

DRAIN_SECONDS = 0.05
DRAIN_BYTES = 64 * 1024


async def keep_alive(response: httpx.Response) -> None:
    """httpx response hook: read the rest of `response` when it is closed early (see the module)."""
    response.stream = _DrainOnClose(response.stream)  # type: ignore[arg-type]  # httpx: Sync|Async


class _DrainOnClose(httpx.AsyncByteStream):
    def __init__(self, stream: httpx.AsyncByteStream) -> None:
        self._stream = stream
        self._ended = False  # read to its end, or failed: nothing left to read

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._stream:
                yield chunk
        finally:
            self._ended = True

    async def aclose(self) -> None:
        try:
            if not self._ended:
                with anyio.move_on_after(DRAIN_SECONDS):
                    left = DRAIN_BYTES
                    async for chunk in self._stream:
                        left -= len(chunk)
                        if left < 0:
                            break
        except Exception:  # the connection broke: closing it is all there is to do
            pass
        finally:
            with anyio.CancelScope(shield=True):
                await self._stream.aclose()
