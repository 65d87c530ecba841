"""What a server logs during a stateless call (``log_level=`` on the loaders) -> the ``cubepi.mcp.server``
Python logger, at the matching level."""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["server_logs"]

logger = logging.getLogger("cubepi.mcp.server")

# MCP's syslog levels onto Python's.
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def server_logs(origin: str) -> Any:
    """A `logging_callback` for the SDK that logs each message of the server `origin` describes."""
    return _ServerLogs(origin)


class _ServerLogs:
    """`server_logs` as an object, so that it travels with a pickled tool."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    async def __call__(self, params: Any) -> None:
        where = f"{self.origin}" + (f" ({params.logger})" if getattr(params, "logger", None) else "")
        logger.log(_LEVELS.get(str(params.level), logging.INFO), "%s: %s", where, params.data)
