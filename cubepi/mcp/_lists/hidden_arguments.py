"""Hidden arguments: tool parameters the application sets and the model never sees.

The loader policy ``hidden_arguments={"user_id": value_or_function}`` binds, in every tool of the list that
has it, a parameter to a value or to a function of the call context (`_context.CallContext`). Such a
parameter leaves the tool's `input_schema` (so every export and framework hand-off, which are made from
it) and its argument model; a model that sets it anyway is refused as an unknown argument would be; each
call sends it with the value of the moment (`hidden_values`), required or not.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import pydantic

from ...errors import UserError
from ...tools import AgentToolResult, format_validation_error
from .._context import CallContext

__all__ = ["check_hidden", "hidden_values", "hide", "refuse_hidden"]


def check_hidden(value: Any) -> dict[str, Any] | None:
    """The `hidden_arguments` policy, checked: parameter name -> a value or a function of the context."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(name, str) and name for name in value):
        raise UserError(
            'hidden_arguments takes a dict {"parameter": value or function of the call context}, '
            f"got {type(value).__name__}"
        )
    return dict(value)


def hide(schema: dict[str, Any], hidden: Mapping[str, Any] | None) -> tuple[dict[str, Any], frozenset[str]]:
    """`schema` without the hidden parameters it has (from ``properties`` and ``required``), and their
    names; the schema itself when it has none of them."""
    properties = schema.get("properties")
    if not hidden or not isinstance(properties, Mapping):
        return schema, frozenset()
    names = frozenset(name for name in hidden if name in properties)
    if not names:
        return schema, frozenset()
    visible = dict(schema)
    visible["properties"] = {name: spec for name, spec in properties.items() if name not in names}
    required = schema.get("required")
    if isinstance(required, list):
        visible["required"] = [name for name in required if name not in names]
        if not visible["required"]:
            del visible["required"]
    return visible, names


def refuse_hidden(
    tool_name: str, names: frozenset[str], arguments: Mapping[str, Any]
) -> AgentToolResult | None:
    """The error result for arguments that set a hidden parameter (as for an unknown argument); None if
    they set none."""
    set_ = sorted(name for name in names if name in arguments)
    if not set_:
        return None
    error = pydantic.ValidationError.from_exception_data(
        tool_name,
        [{"type": "extra_forbidden", "loc": (name,), "input": arguments[name]} for name in set_],
    )
    return AgentToolResult.error(
        format_validation_error(tool_name, error, arguments),
        validation_errors=error.errors(include_url=False, include_context=False, include_input=False),
    )


async def hidden_values(
    hidden: Mapping[str, Any], names: frozenset[str], context: CallContext, tool_name: str
) -> dict[str, Any]:
    """The values of a tool's hidden parameters for a call made in `context` (a function is called with
    it, and awaited if it is async); a function that fails raises `UserError` naming the parameter."""
    values: dict[str, Any] = {}
    for name in sorted(names):
        bound = hidden[name]
        if not callable(bound):
            values[name] = bound
            continue
        try:
            value = bound(context)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            raise UserError(
                f"hidden_arguments[{name!r}] of tool {tool_name!r} raised {type(exc).__name__} "
                "(is the call made inside the call_context that gives it?)"
            ) from exc
        values[name] = value
    return values
