"""Per-provider schema dialects (being written)."""

from __future__ import annotations

import copy
from typing import Any, Literal

__all__ = ["Provider", "provider_schema"]

Provider = Literal["anthropic", "openai", "openai-strict", "gemini"]


def provider_schema(schema: dict[str, Any], provider: Provider) -> dict[str, Any]:
    """Rewrite a schema for one LLM API."""
    return copy.deepcopy(schema)
