"""The gate in front of an optional framework: a missing extra is a `UserError` naming the install line."""

from __future__ import annotations

import importlib

from ..errors import UserError

__all__ = ["require"]


def require(module: str, extra: str) -> None:
    """Import `module`, or raise `UserError` saying ``pip install "cubepi[<extra>]"``."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise UserError(
            f'handing tools to {extra} needs its extra: pip install "cubepi[{extra}]" ({exc})'
        ) from exc
