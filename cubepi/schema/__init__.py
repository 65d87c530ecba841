"""JSON Schema -> Pydantic, and back to the wire.

`schema_to_model` builds what validates a model's arguments; `to_arguments` gives what goes on the wire;
`normalize_schema` repairs the loose schemas real servers send; `provider_schema` rewrites a schema into
the dialect an LLM API accepts without changing what cubepi validates or sends.
"""

from __future__ import annotations

from ._arguments import to_arguments
from ._build import schema_to_model
from ._normalize import normalize_schema
from ._providers import Provider, provider_schema

__all__ = ["Provider", "normalize_schema", "provider_schema", "schema_to_model", "to_arguments"]
