"""Edges of hand-written tools that the decorator tests leave out: a parameter whose name pydantic
reserves, the label of a partial in errors, and a sync tool relaying updates through the event loop."""

from __future__ import annotations

import functools
from typing import Any

import anyio.from_thread
import pytest

from cubepi import ToolUpdate, UserError, tool


@tool
def configured(model_config: str, json: int = 1) -> str:
    """Parameters named like pydantic's own attributes."""
    return f"{model_config}/{json}"


async def test_a_renamed_parameter_is_given_by_its_own_name_only() -> None:
    assert (await configured.execute({"model_config": "a", "json": 2})).text == "a/2"
    by_field = await configured.execute({"model_config_": "a"})
    assert by_field.is_error and "model_config_" in by_field.text


def test_a_partial_is_named_as_one_in_errors() -> None:
    namespace: dict[str, Any] = {}
    exec("def hinted(x: 'Missing', y: int) -> str:\n    return 'h'", namespace)
    with pytest.raises(UserError) as caught:
        tool(functools.partial(namespace["hinted"], y=1))
    assert "functools.partial(" in str(caught.value)
    with pytest.raises(UserError) as plain:
        tool(namespace["hinted"])
    assert "functools.partial(" not in str(plain.value)


@tool
def relay(on_update: Any) -> str:
    """Sends its update through the event loop's thread."""
    anyio.from_thread.run_sync(on_update, ToolUpdate(progress=1))
    return "relayed"


async def test_a_sync_tool_relaying_through_the_loop_works_with_a_sync_callback() -> None:
    seen: list[Any] = []
    result = await relay.execute({}, on_update=lambda update: seen.append(update.progress))
    assert result.text == "relayed" and seen == [1]


async def test_a_sync_tool_relaying_through_the_loop_to_an_async_callback_is_told_why_not() -> None:
    seen: list[Any] = []

    async def callback(update: ToolUpdate) -> None:
        seen.append(update.progress)

    with pytest.raises(UserError, match="on_update from the event loop's thread"):
        await relay.execute({}, on_update=callback)
    assert seen == []
