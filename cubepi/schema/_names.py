"""Python names for wire names: property names that are not identifiers, are keywords, start with `_`
or shadow `BaseModel` attributes get a safe field name and keep the wire name as their alias."""

from __future__ import annotations

import keyword
import re

from pydantic import BaseModel

__all__ = ["class_name", "field_names"]

_RESERVED = frozenset(dir(BaseModel)) | {"model_config", "model_fields", "model_computed_fields"}
_UNSAFE = re.compile(r"\W+", re.ASCII)
_WORDS = re.compile(r"[\W_]+", re.ASCII)


def _safe(wire: str) -> str:
    name = _UNSAFE.sub("_", wire).strip("_")
    if not name:
        name = "field"
    if name[0].isdigit():
        name = "f_" + name
    if keyword.iskeyword(name) or name in _RESERVED or name.startswith("__"):
        name += "_"
    return name


def _usable(wire: str) -> bool:
    return (
        wire.isidentifier()
        and wire.isascii()
        and not wire.startswith("_")
        and not keyword.iskeyword(wire)
        and wire not in _RESERVED
    )


def field_names(wires: list[str]) -> dict[str, str]:
    """Map each wire name to a unique Python field name (the wire name itself when it is usable).

    Linear in the number of names: each safe base remembers the next suffix to try.
    """
    taken = {wire for wire in wires if _usable(wire)}
    used: set[str] = set()
    suffix: dict[str, int] = {}
    out: dict[str, str] = {}
    for wire in wires:
        if wire in taken and wire not in used:
            name = wire
        else:
            base = name = _safe(wire)
            n = suffix.get(base, 2)
            while name in taken:
                name, n = f"{base}_{n}", n + 1
            suffix[base] = n
            taken.add(name)
        used.add(name)
        out[wire] = name
    return out


def class_name(text: str) -> str:
    """A class name from a tool or property name (``read_file`` -> ``ReadFile``)."""
    parts = [p for p in _WORDS.split(text) if p]
    name = "".join(p[:1].upper() + p[1:] for p in parts) or "Arguments"
    return "M" + name if name[0].isdigit() else name
