"""Output schemas: a model of a tool's `outputSchema`, and checking ``structuredContent`` against it.

The MCP SDK raises a bare `RuntimeError` when ``structuredContent`` does not match the tool's
`outputSchema`, throwing away a result whose text is often fine. cubepi keeps the result: the content is
untouched, the mismatch goes in ``details["structuredContentError"]`` and a warning is logged on the
``cubepi.mcp`` logger (naming the tool and where the mismatch is, never the values).

```python
from .. import output_model

Weather = output_model(tool)            # a pydantic model of tool.output_schema, or None
result = await tool.execute({"city": "Paris"})
if "structuredContentError" not in result.details:
    weather = Weather.model_validate(result.details["structuredContent"])
```
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ...schema._validator import SchemaValidator
from ...tools import AgentTool, AgentToolResult

__all__ = ["STRUCTURED_CONTENT_ERROR", "OutputCheck", "output_model"]

logger = logging.getLogger("cubepi.mcp")

STRUCTURED_CONTENT_ERROR = "structuredContentError"
_MAX_MESSAGE = 500

_models: weakref.WeakKeyDictionary[AgentTool, type[BaseModel]] = weakref.WeakKeyDictionary()
_models_lock = threading.Lock()


def output_model(tool: AgentTool) -> type[BaseModel] | None:
    """A Pydantic model of ``tool.output_schema`` (built on first use, then cached), or None without one.

    Built with `cubepi.schema.schema_to_model`, so it accepts what the schema accepts; an output schema
    that is not an object schema raises `SchemaError` naming the tool.
    """
    schema = tool.output_schema
    if not isinstance(schema, dict):
        return None
    with _models_lock:
        model = _models.get(tool)
        if model is None:
            from ...schema import schema_to_model

            model = _models[tool] = schema_to_model(schema, name=f"{tool.name}_output")
    return model


class OutputCheck:
    """Checks the ``structuredContent`` of one tool's results against its `outputSchema` (with the one
    JSON Schema validator, compiled on first use)."""

    def __init__(self, tool_name: str, schema: Mapping[str, Any] | None) -> None:
        self.tool_name = tool_name
        self.schema = dict(schema) if isinstance(schema, Mapping) else None
        self._validator = None if self.schema is None else SchemaValidator(self.schema, tool_name=tool_name)

    def mismatch(self, raw: Any) -> tuple[str, str] | None:
        """(full message for `details`, value-free summary for the log) when `raw` breaks the schema."""
        if self._validator is None:
            return None
        data = _as_dict(raw)
        if data is None or data.get("isError"):
            return None
        structured = data.get("structuredContent")
        if structured is None:
            text = "the tool declares an outputSchema but returned no structuredContent"
            return text, text
        error = self._validator.first_error(structured)
        if error is None:
            return None
        where, _, rule = error.partition(": ")
        where = "(root)" if where == "(arguments)" else where
        full = f"structuredContent does not match the outputSchema at {where}: {rule}"
        if len(full) > _MAX_MESSAGE:
            full = full[: _MAX_MESSAGE - 1] + "…"
        return full, f"at {where}: {rule}"[:_MAX_MESSAGE]

    def apply(self, raw: Any, result: AgentToolResult) -> AgentToolResult:
        """`result`, with ``details["structuredContentError"]`` set (and a warning logged) on a mismatch."""
        found = self.mismatch(raw)
        if found is not None:
            full, summary = found
            result.details[STRUCTURED_CONTENT_ERROR] = full
            logger.warning(
                "tool %r returned structuredContent that does not match its outputSchema (%s); "
                "the result is kept, the mismatch is in details[%r]",
                self.tool_name,
                summary,
                STRUCTURED_CONTENT_ERROR,
            )
        return result


def _as_dict(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, Mapping):
        return dict(raw)
    dump = getattr(raw, "model_dump", None)
    if callable(dump):
        dumped = dump(mode="json", by_alias=True, exclude_none=True)
        return dumped if isinstance(dumped, dict) else None
    return None
