"""JSON Schema -> Pydantic, and back to the wire.

`schema_to_model` builds what validates a model's arguments; `to_arguments` gives what goes on the wire;
`normalize_schema` repairs the loose schemas real servers send; `provider_schema` rewrites a schema into
the dialect an LLM API accepts without changing what cubepi validates or sends.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

__all__ = ["normalize_schema", "provider_schema", "schema_to_model", "to_arguments"]

Provider = Literal["anthropic", "openai", "openai-strict", "gemini"]


def schema_to_model(schema: Any, *, name: str) -> type[BaseModel]:
    """Build a Pydantic model from a tool's `inputSchema` (PLACEHOLDER: being written)."""
    raise NotImplementedError


def to_arguments(params: BaseModel) -> dict[str, Any]:
    """The wire arguments of a validated model (PLACEHOLDER: being written)."""
    return params.model_dump(mode="json", by_alias=True, exclude_unset=True)


def normalize_schema(schema: Any) -> dict[str, Any]:
    """Repair a loose schema (PLACEHOLDER: being written)."""
    return dict(schema)


def provider_schema(schema: dict[str, Any], provider: Provider) -> dict[str, Any]:
    """Rewrite a schema for one LLM API (PLACEHOLDER: being written)."""
    return schema
