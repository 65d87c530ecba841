"""The gate in front of the `mcp` SDK, and the one module that names its private parts.

Modules of this package import the SDK inside functions, after `ensure_sdk()`, so that a missing extra
surfaces as a `UserError` naming the install command the first time a connection is made.

The SDK's private names cubepi uses sit here and nowhere else, each behind one function, each pinned by a
test of tests/mcp/test_sdk_wording.py that fails loudly on an SDK that moved or changed it (CI installs the
newest ``mcp`` release the extra allows): the SDK's negotiation policy and its input-required driver
(rather than copies of them), its HTTP timeouts, the stamp and raw send of a request (2025-11-25 task
calls, whose answer the SDK's typed send would refuse), the listing a session absorbs (so a call carries
its ``Mcp-Param-*`` headers without listing first), and its process factory, wrapped to track cubepi's own
stdio spawns (process group, bounded stdout; `_transports.stdio`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import UserError

if TYPE_CHECKING:
    from mcp import ClientSession, types

__all__ = [
    "INSTALL_HINT",
    "absorb_tool_listing",
    "ensure_sdk",
    "http_timeouts",
    "modern_versions",
    "negotiate_auto",
    "run_input_required_driver",
    "send_raw",
    "wrap_process_factory",
]

INSTALL_HINT = 'pip install "cubepi[mcp]"'


@functools.lru_cache(maxsize=1)
def _check() -> str | None:
    try:
        import httpx2  # noqa: F401
        import mcp
        import mcp.client.session  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None


def ensure_sdk() -> None:
    """Raise `UserError` when the MCP SDK (the ``mcp`` extra) cannot be imported."""
    problem = _check()
    if problem is not None:
        raise UserError(f"connecting to MCP servers needs the MCP extra: {INSTALL_HINT} ({problem})")


def modern_versions() -> tuple[str, ...] | None:
    """The 2026-07-28+ protocol revisions the installed SDK speaks (None: no SDK installed)."""
    if _check() is not None:
        return None
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return tuple(MODERN_PROTOCOL_VERSIONS)


# -- the SDK's private names, one function each --------------------------------------------------------------


async def negotiate_auto(client: ClientSession) -> None:
    """The SDK's own era negotiation on `client` (``mcp.client._probe.negotiate_auto``)."""
    from mcp.client._probe import negotiate_auto as negotiate

    await negotiate(client)


async def run_input_required_driver(first: Any, *, dispatch: Any, retry: Any, max_rounds: int) -> Any:
    """The SDK's rounds of a 2026-07-28 ``InputRequiredResult`` (``mcp.client._input_required``)."""
    from mcp.client._input_required import run_input_required_driver as drive

    return await drive(first, dispatch=dispatch, retry=retry, max_rounds=max_rounds)


def http_timeouts() -> tuple[float, float]:
    """The SDK's HTTP timeouts: a request's, and an event stream's read (``mcp.shared._httpx_utils``)."""
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    return MCP_DEFAULT_TIMEOUT, MCP_DEFAULT_SSE_READ_TIMEOUT


async def send_raw(client: ClientSession, request: Any, on_progress: Any) -> dict[str, Any]:
    """`request` sent as ``ClientSession.send_request`` sends it (its ``_stamp``, the progress callback),
    its answer returned unchecked (through the session's ``_dispatcher``)."""
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    opts: dict[str, Any] = {}
    client._stamp(data, opts)  # type: ignore[arg-type]
    if on_progress is not None:
        opts["on_progress"] = on_progress
    return await client._dispatcher.send_raw_request(data["method"], data.get("params"), opts)  # type: ignore[arg-type]


def absorb_tool_listing(client: ClientSession, definition: types.Tool) -> None:
    """Hand `client` the definition of one tool as if it had listed it (``_absorb_tool_listing``, what
    the SDK's own response cache uses); nothing on an SDK without it."""
    from mcp import types

    absorb = getattr(client, "_absorb_tool_listing", None)
    if absorb is not None:
        absorb(types.ListToolsResult(tools=[definition.model_copy()]), complete=False)


def wrap_process_factory(wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> bool:
    """Replace the SDK's stdio process factory (``mcp.client.stdio._create_platform_compatible_process``)
    with ``wrap(original)``; False (nothing replaced) on an SDK without one."""
    import mcp.client.stdio as sdk_stdio

    original = getattr(sdk_stdio, "_create_platform_compatible_process", None)
    if original is None:
        return False
    sdk_stdio._create_platform_compatible_process = wrap(original)
    return True
