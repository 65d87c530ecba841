"""Input a server asks for in the middle of a call (elicitation): the caller's callback, made complete.

`with_defaults(callback)` wraps an ``elicitation_callback``: when the user accepts a form and leaves fields
out, the defaults the server's ``requestedSchema`` gives them are filled in (SEP-1034), so the server gets
what it asked for. `missing_input_hint` words the error a call gets when its server needed input and the
caller gave no callback.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.client.session import ElicitationFnT

__all__ = ["missing_input_hint", "with_defaults"]

_MISSING_CAPABILITY = -32021


def with_defaults(callback: ElicitationFnT) -> ElicitationFnT:
    """`callback`, with an accepted form's missing fields filled from the requested schema's defaults."""
    return _WithDefaults(callback)


class _WithDefaults:
    """`with_defaults` as an object (it travels with a pickled tool when `callback` pickles)."""

    def __init__(self, callback: ElicitationFnT) -> None:
        self.callback = callback

    async def __call__(self, context: Any, params: Any) -> Any:
        result: Any = await self.callback(context, params)
        schema = getattr(params, "requested_schema", None)
        if getattr(result, "action", None) != "accept" or not isinstance(schema, Mapping):
            return result
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return result
        content = dict(result.content or {})
        missing = {
            name: spec["default"]
            for name, spec in properties.items()
            if name not in content and isinstance(spec, Mapping) and "default" in spec
        }
        if not missing:
            return result
        return result.model_copy(update={"content": {**content, **missing}})


def missing_input_hint(code: int, message: str) -> str | None:
    """The sentence added to a call's error when its server asked for input the client cannot give."""
    if code != _MISSING_CAPABILITY:
        return None
    text = message.lower()
    if "elicitation" in text:
        return (
            "the server asked for input mid-call (elicitation); pass elicitation_callback= to the loader "
            "(or to connect()) to answer it"
        )
    for capability, keyword in (("sampling", "sampling_callback"), ("roots", "list_roots_callback")):
        if capability in text:
            return f"the server asked for {capability} mid-call; pass {keyword}= to connect() to answer it"
    return None
