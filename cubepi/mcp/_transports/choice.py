"""Which transport a server's config takes: the one place a call path looks at a server's kind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._configs import StdioConfig
from .http import HttpTransport
from .stdio import StdioTransport

if TYPE_CHECKING:
    from .._configs import ServerConfig
    from .base import Transport

__all__ = ["transport_for"]


def transport_for(server: ServerConfig) -> Transport:
    """`server`'s transport (`base.Transport`): a stdio process or an HTTP endpoint."""
    if isinstance(server, StdioConfig):
        return StdioTransport(server)
    return HttpTransport(server)
