"""`with_defaults` and `missing_input_hint` without a server: which answers get the requested schema's
defaults (SEP-1034) and which pass untouched, and the advice a call's error gets for each capability. The
same behaviour through real servers is in tests/mcp/test_input.py."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import types

from cubepi.mcp._calls.elicitation import missing_input_hint, with_defaults

MISSING_CAPABILITY = -32021  # the server needed a client capability the client did not declare

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},  # no default: left out stays left out
        "city": {"type": "string", "default": "Paris"},
        "count": {"type": "integer", "default": 3},
        "odd": "not a property schema",
    },
}


def form(schema: dict[str, Any]) -> types.ElicitRequestFormParams:
    return types.ElicitRequestFormParams(message="Your details?", requested_schema=schema)


def answering(result: types.ElicitResult) -> Any:
    """A caller's callback that records what it was asked and gives `result`."""
    asked: list[tuple[Any, Any]] = []

    async def callback(context: Any, params: Any) -> types.ElicitResult:
        asked.append((context, params))
        return result

    callback.asked = asked  # type: ignore[attr-defined]
    return callback


async def test_an_accepted_form_gets_the_defaults_of_the_fields_left_out() -> None:
    callback = answering(types.ElicitResult(action="accept", content={"name": "Ada"}))
    params = form(SCHEMA)
    result = await with_defaults(callback)("the context", params)
    assert isinstance(result, types.ElicitResult)
    assert (result.action, result.content) == ("accept", {"name": "Ada", "city": "Paris", "count": 3})
    assert callback.asked == [("the context", params)]  # the caller's callback saw the request as sent


async def test_the_users_own_answer_wins_over_a_default() -> None:
    answer = types.ElicitResult(action="accept", content={"city": "Oslo", "count": 0})
    result = await with_defaults(answering(answer))(None, form(SCHEMA))
    assert result.content == {"city": "Oslo", "count": 0}
    assert result is answer  # nothing was missing: the answer itself goes back


async def test_an_accepted_form_with_no_content_gets_every_default() -> None:
    result = await with_defaults(answering(types.ElicitResult(action="accept")))(None, form(SCHEMA))
    assert (result.action, result.content) == ("accept", {"city": "Paris", "count": 3})


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_form_not_accepted_goes_back_untouched(action: str) -> None:
    answer = types.ElicitResult(action=action)  # type: ignore[arg-type]
    result = await with_defaults(answering(answer))(None, form(SCHEMA))
    assert result is answer and result.content is None


@pytest.mark.parametrize(
    "schema",
    [{"type": "object"}, {"type": "object", "properties": ["city"]}, {"type": "object", "properties": {}}],
    ids=["no properties", "properties not a mapping", "no fields"],
)
async def test_a_schema_without_usable_properties_leaves_the_answer_untouched(schema: dict[str, Any]) -> None:
    answer = types.ElicitResult(action="accept", content={"name": "Ada"})
    assert await with_defaults(answering(answer))(None, form(schema)) is answer


async def test_a_request_without_a_schema_leaves_the_answer_untouched() -> None:
    """A URL-mode request has no form, so nothing to fill; neither has an answer that is an error."""
    url = types.ElicitRequestURLParams(
        message="Sign in", url="https://example.com/login", elicitation_id="e1"
    )
    answer = types.ElicitResult(action="accept")
    assert await with_defaults(answering(answer))(None, url) is answer
    error = types.ErrorData(code=types.INVALID_REQUEST, message="not today")
    assert await with_defaults(answering(error))(None, form(SCHEMA)) is error


@pytest.mark.parametrize(
    ("message", "keyword", "advice"),
    [
        ("elicitation/create", "elicitation_callback", "to the loader (or to connect())"),
        ("Client did not declare the form Elicitation capability", "elicitation_callback", "to the loader"),
        ("sampling/createMessage", "sampling_callback", "to connect()"),
        ("Client did not declare the SAMPLING capability", "sampling_callback", "to connect()"),
        ("roots/list", "list_roots_callback", "to connect()"),
        ("Client did not declare the Roots capability", "list_roots_callback", "to connect()"),
    ],
)
def test_the_hint_names_the_callback_that_answers(message: str, keyword: str, advice: str) -> None:
    hint = missing_input_hint(MISSING_CAPABILITY, message)
    assert hint is not None
    assert f"pass {keyword}= " in hint and advice in hint


def test_the_hints_are_worded_for_each_capability() -> None:
    assert missing_input_hint(MISSING_CAPABILITY, "elicitation/create") == (
        "the server asked for input mid-call (elicitation); pass elicitation_callback= to the loader "
        "(or to connect()) to answer it"
    )
    assert missing_input_hint(MISSING_CAPABILITY, "sampling/createMessage") == (
        "the server asked for sampling mid-call; pass sampling_callback= to connect() to answer it"
    )
    assert missing_input_hint(MISSING_CAPABILITY, "roots/list") == (
        "the server asked for roots mid-call; pass list_roots_callback= to connect() to answer it"
    )


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (MISSING_CAPABILITY, "Client did not declare the tasks capability"),  # no callback answers it
        (MISSING_CAPABILITY - 1, "elicitation/create"),  # other errors get no advice
        (MISSING_CAPABILITY + 1, "sampling/createMessage"),
        (types.METHOD_NOT_FOUND, "roots/list"),
        (types.INTERNAL_ERROR, "elicitation failed"),
    ],
)
def test_no_hint_for_other_errors_or_capabilities(code: int, message: str) -> None:
    assert missing_input_hint(code, message) is None
