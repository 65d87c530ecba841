"""The gate in front of the `mcp` SDK: `import cubepi.mcp` works without the extra.

Modules of this package import the SDK inside functions, after `ensure_sdk()`, so that a missing extra
surfaces as a `UserError` naming the install command the first time a connection is made.
"""

from __future__ import annotations

import functools

from ..errors import UserError

__all__ = ["INSTALL_HINT", "ensure_sdk", "modern_versions"]

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
