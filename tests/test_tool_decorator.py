"""`@tool` gives hand-written tools the guarantees of MCP tools (issue 19): strict exports round-trip,
progress callbacks fit the function, `Field(...)` defaults, partials and callable objects, awkward parameter
names, closed signatures, readable errors and results."""

from __future__ import annotations

import contextvars
import functools
import json
import math
import threading
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from cubepi import AgentToolResult, TextContent, ToolUpdate, UserError, tool
from cubepi.schema import schema_to_model

# -- 1. strict exports round-trip --------------------------------------------------------------------


class Filter(BaseModel):
    lang: str = "en"
    size: int = 10
    tags: list[str] | None = None


DEFAULT = Filter()


def strict_schema(item: Any) -> dict[str, Any]:
    schema: dict[str, Any] = item.to_openai(strict=True)["function"]["parameters"]
    return schema


async def test_strict_nulls_become_defaults_also_in_nested_models() -> None:
    received: list[tuple[Any, ...]] = []

    @tool
    def search(query: str, limit: int = 10, mode: Literal["a", "b"] = "a", where: Filter = DEFAULT) -> str:
        received.append((query, limit, mode, where))
        return "ok"

    sent = {"query": "q", "limit": None, "mode": None, "where": {"lang": None, "size": None, "tags": None}}
    assert Draft202012Validator(strict_schema(search)).is_valid(sent)
    result = await search.execute(sent)
    assert not result.is_error, result.text
    assert received == [("q", 10, "a", Filter(lang="en", size=10, tags=None))]
    await search.execute({"query": "q", "limit": None, "mode": "b", "where": None})
    assert received[-1] == ("q", 10, "b", Filter())


async def test_a_null_the_parameter_allows_stays_a_null() -> None:
    @tool
    def pick(cursor: str | None = "start") -> str:
        return repr(cursor)

    assert (await pick.execute({"cursor": None})).text == "None"
    assert (await pick.execute({})).text == "'start'"


async def test_a_null_for_a_required_parameter_is_still_refused() -> None:
    @tool
    def need(query: str) -> str:
        return query

    result = await need.execute({"query": None})
    assert result.is_error and "query" in result.text


# -- a property over generated signatures (points 1 and 9) -----------------------------------------


class Inner(BaseModel):
    name: str
    size: int = 3
    note: str | None = None


# (annotation, strategy for a default, whether null is a value of the type)
TYPES: dict[str, tuple[Any, st.SearchStrategy[Any], bool]] = {
    "int": (int, st.integers(-5, 5), False),
    "float": (float, st.floats(-1e3, 1e3), False),
    "str": (str, st.text(max_size=5), False),
    "bool": (bool, st.booleans(), False),
    "literal": (Literal["a", "b"], st.sampled_from(["a", "b"]), False),
    "ints": (list[int], st.lists(st.integers(0, 3), max_size=2), False),
    "bounded": (Annotated[int, Field(ge=0, le=100)], st.integers(0, 100), False),
    "maybe_int": (int | None, st.none() | st.integers(0, 3), True),
    "inner": (Inner, st.builds(Inner, name=st.just("d")), False),
    "maybe_inner": (Inner | None, st.none(), True),
}
NAMES = [
    "query",
    "limit",
    "mode",
    "_private",
    "model_config",
    "schema",
    "json",
    "count",
    "model_name",
    "flag",
]
KINDS = ["positional_only", "normal", "keyword_only"]


@st.composite
def signatures(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(NAMES), max_size=6, unique=True))
    params = []
    for name in names:
        kind = draw(st.sampled_from(KINDS))
        type_key = draw(st.sampled_from(sorted(TYPES)))
        optional = draw(st.booleans())
        default = draw(TYPES[type_key][1]) if optional else None
        params.append(
            {"name": name, "kind": kind, "type": type_key, "optional": optional, "default": default}
        )
    params.sort(key=lambda p: (KINDS.index(p["kind"]), p["optional"] and p["kind"] != "keyword_only"))
    seen_default = False
    for p in params:  # Python: no required positional parameter after one with a default
        if p["kind"] != "keyword_only":
            if p["optional"]:
                seen_default = True
            elif seen_default:
                p["kind"] = "keyword_only"
    params.sort(key=lambda p: KINDS.index(p["kind"]))
    return {"params": params, "is_async": draw(st.booleans()), "kwargs": draw(st.booleans())}


def build(sig: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """The function the signature describes (real source, exec'd) and the list its calls go into."""
    received: list[dict[str, Any]] = []
    namespace: dict[str, Any] = {"received": received}
    parts: list[str] = []
    kinds = [p["kind"] for p in sig["params"]]
    for i, p in enumerate(sig["params"]):
        namespace[f"T{i}"] = TYPES[p["type"]][0]
        namespace[f"D{i}"] = p["default"]
        if p["kind"] == "keyword_only" and "keyword_only" not in kinds[:i]:
            parts.append("*")
        parts.append(f"{p['name']}: T{i}" + (f" = D{i}" if p["optional"] else ""))
        if p["kind"] == "positional_only" and kinds[i + 1 : i + 2] != ["positional_only"]:
            parts.append("/")
    if sig["kwargs"]:
        parts.append("**extra: int")
    prefix = "async def" if sig["is_async"] else "def"
    source = (
        f"{prefix} generated({', '.join(parts)}):\n    received.append(dict(locals()))\n    return 'ok'\n"
    )
    exec(source, namespace)
    return namespace["generated"], received


def expected(param: dict[str, Any], sent: Any) -> Any:
    nullable = TYPES[param["type"]][2]
    if sent is None and not nullable:
        return param["default"]
    if param["type"] in ("inner", "maybe_inner") and sent is not None:
        return Inner.model_validate({k: v for k, v in sent.items() if not (k == "size" and v is None)})
    return sent


PROPERTY = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@PROPERTY
@given(data=st.data())
def test_every_strict_instance_validates_and_reaches_the_function_as_defaults(data: st.DataObject) -> None:
    sig = data.draw(signatures())
    func, received = build(sig)
    generated = tool(func)
    sent = data.draw(from_schema(strict_schema(generated)))
    result = generated.execute_sync(sent)
    assert not result.is_error, (sent, result.text)
    (got,) = received
    for param in sig["params"]:
        assert got[param["name"]] == expected(param, sent[param["name"]]), param
    if sig["kwargs"]:
        assert got["extra"] == {}


@PROPERTY
@given(
    data=st.data(),
    unknown=st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), st.integers(), min_size=1),
)
def test_unknown_keys_are_named_in_an_error_unless_the_function_takes_kwargs(
    data: st.DataObject, unknown: dict[str, int]
) -> None:
    sig = data.draw(signatures())
    unknown = {k: v for k, v in unknown.items() if k not in NAMES and k != "on_update"}
    if not unknown:
        return
    func, received = build(sig)
    generated = tool(func)
    sent = {**data.draw(from_schema(strict_schema(generated))), **unknown}
    result = generated.execute_sync(sent)
    if sig["kwargs"]:
        assert not result.is_error, result.text
        assert received[0]["extra"] == unknown
    else:
        assert result.is_error and received == []
        for key in unknown:
            assert f"- {key}: unknown key" in result.text


# -- 2. progress callbacks shaped for the function ---------------------------------------------------


@tool
async def async_steps(on_update: Any) -> str:
    for i in range(2):
        await on_update(ToolUpdate(progress=i + 1, total=2))
    return "async done"


@tool
def sync_steps(on_update: Any) -> str:
    for i in range(2):
        assert on_update(ToolUpdate(progress=i + 1, total=2)) is None
    return "sync done"


def make_callbacks() -> tuple[list[float | None], list[str], dict[str, Any]]:
    seen: list[float | None] = []
    threads: list[str] = []

    def plain(update: ToolUpdate) -> None:
        threads.append(threading.current_thread().name)
        seen.append(update.progress)

    async def awaitable(update: ToolUpdate) -> None:
        threads.append(threading.current_thread().name)
        await anyio.lowlevel.checkpoint()
        seen.append(update.progress)

    return seen, threads, {"sync": plain, "async": awaitable}


@pytest.mark.parametrize("item", [async_steps, sync_steps], ids=["async tool", "sync tool"])
@pytest.mark.parametrize("kind", ["sync", "async", "none"])
async def test_progress_callbacks_work_whatever_the_kinds(item: Any, kind: str) -> None:
    seen, threads, callbacks = make_callbacks()
    result = await item.execute({}, on_update=callbacks.get(kind))
    assert not result.is_error, result.text
    assert seen == ([] if kind == "none" else [1, 2])
    assert set(threads) <= {threading.current_thread().name}  # the caller's callback runs in its loop


async def test_a_sync_tool_reports_from_threads_of_its_own() -> None:
    @tool
    def fan_out(on_update: Any) -> str:
        workers = [threading.Thread(target=on_update, args=(ToolUpdate(progress=i),)) for i in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return "fanned"

    seen, _, callbacks = make_callbacks()
    assert (await fan_out.execute({}, on_update=callbacks["async"])).text == "fanned"
    assert sorted(u or 0 for u in seen) == [0, 1, 2]


async def test_updates_after_the_call_returned_are_dropped() -> None:
    kept: list[Any] = []

    @tool
    def leaves_a_reporter(on_update: Any) -> str:
        kept.append(on_update)
        return "returned"

    seen, _, callbacks = make_callbacks()
    await leaves_a_reporter.execute({}, on_update=callbacks["sync"])
    await anyio.to_thread.run_sync(kept[0], ToolUpdate(progress=1))
    assert seen == []


# -- 4. Field(...) defaults and docstring descriptions ---------------------------------------------


@tool
def fielded(
    need: int = Field(description="Explicit, required."),
    count: int = Field(5, ge=0, description="Explicit wins."),
    size: int = Field(3, ge=1),
    label: Annotated[str, Field(max_length=4, description="Annotated wins.")] = "ab",
) -> list[Any]:
    """Field defaults.

    Args:
        need: From the docstring.
        count: From the docstring.
        size: From the docstring.
        label: From the docstring.
    """
    return [need, count, size, label]


def test_field_defaults_keep_their_description_constraints_and_requiredness() -> None:
    schema = fielded.json_schema()
    assert schema["required"] == ["need"]
    props = schema["properties"]
    assert props["need"]["description"] == "Explicit, required."
    assert props["count"] == {**props["count"], "description": "Explicit wins.", "minimum": 0, "default": 5}
    assert props["size"]["description"] == "From the docstring." and props["size"]["minimum"] == 1
    assert props["label"]["description"] == "Annotated wins." and props["label"]["maxLength"] == 4


async def test_omitted_field_defaults_reach_the_function_as_values() -> None:
    assert (await fielded.execute({"need": 1})).details["value"] == [1, 5, 3, "ab"]
    missing = await fielded.execute({})
    assert missing.is_error and "- need: Field required" in missing.text
    negative = await fielded.execute({"need": 1, "count": -1})
    assert negative.is_error and "count" in negative.text


# -- 6. functools.partial and callable objects -----------------------------------------------------


def lookup(query: str, limit: int = 3, *, api_key: str) -> str:
    """Look a word up.

    Args:
        query: The word.
        limit: How many senses.
        api_key: The service's key.
    """
    return f"{query}:{limit}:{api_key}"


async def test_a_partial_is_a_tool_whose_bound_arguments_leave_the_schema() -> None:
    bound = tool(functools.partial(lookup, api_key="secret"), name="lookup", description="Look up")
    assert set(bound.json_schema()["properties"]) == {"query", "limit"}
    assert "secret" not in json.dumps(bound.to_openai(strict=True))
    assert (await bound.execute({"query": "q"})).text == "q:3:secret"
    smuggled = await bound.execute({"query": "q", "api_key": "mine"})
    assert smuggled.is_error and "api_key" in smuggled.text
    plain = tool(functools.partial(lookup, "fixed", api_key="k"))
    assert plain.name == "lookup" and plain.description == "Look a word up."
    assert set(plain.json_schema()["properties"]) == {"limit"}
    assert (await plain.execute({"limit": 1})).text == "fixed:1:k"


async def test_callable_objects_sync_and_async_are_tools() -> None:
    class Counter:
        """Count words."""

        def __call__(self, text: str) -> int:
            return len(text.split())

    class Echo:
        async def __call__(self, text: str) -> str:
            """Say it back."""
            return text

    counter, echo = tool(Counter()), tool(Echo(), name="echo")
    assert (counter.name, counter.description) == ("Counter", "Count words.")
    assert (echo.name, echo.description) == ("echo", "Say it back.")
    assert (await counter.execute({"text": "a b c"})).text == "3"
    assert (await echo.execute({"text": "hi"})).text == "hi"


async def test_a_decorated_coroutine_function_is_an_async_tool() -> None:
    def logged(func: Any) -> Any:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return func(*args, **kwargs)

        return wrapper

    @tool
    @logged
    async def double(n: int, on_update: Any) -> int:
        await on_update(ToolUpdate(progress=1))
        return 2 * n

    seen, _, callbacks = make_callbacks()
    assert list(double.json_schema()["properties"]) == ["n"]
    assert (await double.execute({"n": 2}, on_update=callbacks["sync"])).text == "4"
    assert seen == [1]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (Filter, "not the class Filter"),
        (functools.partial(Filter, lang="x"), "partial of the class Filter"),
        (42, "needs a callable"),
    ],
)
def test_what_cannot_be_a_tool_is_refused_at_decoration(target: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        tool(target)


def test_star_args_and_unschematic_types_are_refused_at_decoration() -> None:
    def spread(*words: str) -> str:
        return " ".join(words)

    def opaque(lock: threading.Lock) -> None:
        return None

    with pytest.raises(UserError, match=r"\*words .*list parameter"):
        tool(spread)
    with pytest.raises(UserError, match="opaque"):
        tool(opaque)


# -- 8. positional-only parameters and awkward names -------------------------------------------------


async def test_positional_only_and_awkward_names_work() -> None:
    @tool
    def odd(a: int, /, _private: int = 1, model_config: str = "m", schema: str = "s") -> list[Any]:
        return [a, _private, model_config, schema]

    assert list(odd.json_schema()["properties"]) == ["a", "_private", "model_config", "schema"]
    result = await odd.execute({"a": 1, "_private": 2, "model_config": "c", "schema": "x"})
    assert result.details["value"] == [1, 2, "c", "x"]
    assert (await odd.execute({"a": 1})).details["value"] == [1, 1, "m", "s"]
    bad = await odd.execute({"a": 1, "_private": "two"})
    assert bad.is_error and "- _private:" in bad.text


# -- 9. closed signatures and **kwargs ----------------------------------------------------------------


async def test_a_misspelled_argument_is_an_error_naming_it() -> None:
    ran: list[int] = []

    @tool
    def search(query: str, limit: int = 10) -> str:
        ran.append(limit)
        return query

    result = await search.execute({"query": "q", "limt": 5})
    assert result.is_error and ran == []
    assert "- limt: unknown key" in result.text
    assert search.json_schema()["additionalProperties"] is False


async def test_kwargs_take_extra_keys_validated_by_their_annotation() -> None:
    @tool
    def tags(name: str, **counts: int) -> dict[str, int]:
        return counts

    assert (await tags.execute({"name": "n", "a": 1, "b": 2})).details["value"] == {"a": 1, "b": 2}
    bad = await tags.execute({"name": "n", "a": "x"})
    assert bad.is_error and "- a:" in bad.text
    reserved = await tags.execute({"name": "n", "on_update": 1})
    assert reserved.is_error and "'on_update'" in reserved.text


# -- rough edges -------------------------------------------------------------------------------------


def test_rest_and_numpy_docstrings_describe_parameters() -> None:
    def rest(a: int, b: int) -> int:
        """Add with reST.

        :param a: The first.
        :param b: The second,
            continued.
        :returns: The sum.
        """
        return a + b

    def numpy(a: int) -> int:
        """Double with numpydoc.

        Parameters
        ----------
        a : int
            The number.

        Returns
        -------
        int
        """
        return 2 * a

    for func, summary, first in [
        (rest, "Add with reST.", "The first."),
        (numpy, "Double with numpydoc.", "The number."),
    ]:
        made = tool(func)
        assert made.description == summary
        assert made.json_schema()["properties"]["a"]["description"] == first
    assert tool(rest).json_schema()["properties"]["b"]["description"] == "The second, continued."


async def test_execute_sync_inside_a_running_loop_carries_context_variables() -> None:
    current = contextvars.ContextVar("current", default="unset")

    @tool
    def sync_read() -> str:
        return current.get()

    @tool
    async def async_read() -> str:
        return current.get()

    current.set("caller")
    assert sync_read.execute_sync({}).text == "caller"
    assert async_read.execute_sync({}).text == "caller"


class ByPath(BaseModel):
    path: str


class ByUrl(BaseModel):
    url: str


async def test_union_errors_name_places_in_the_arguments_not_pydantic_internals() -> None:
    @tool
    def open_one(target: ByPath | ByUrl) -> str:
        return "opened"

    bridged = schema_to_model(
        {
            "type": "object",
            "properties": {
                "target": {
                    "oneOf": [
                        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                        {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
                    ]
                }
            },
        },
        name="open_one",
    )

    async def run(params: BaseModel, on_update: Any) -> AgentToolResult:
        return AgentToolResult()

    mcp_like = open_one.replace(parameters=bridged, run=run)
    for item in (open_one, mcp_like):
        result = await item.execute({"target": {"path": 1}})
        assert result.is_error
        lines = result.text.splitlines()[1:]
        assert "- target.path: Input should be a valid string" in lines
        assert "- target.url: Field required" in lines
        assert not any("function-after" in line or "ByPath" in line for line in lines), lines


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (math.nan, '"NaN"'),
        ({"low": -math.inf, "high": math.inf}, '{"low": "-Infinity", "high": "Infinity"}'),
    ],
)
async def test_non_finite_numbers_are_shown_as_valid_json(value: Any, text: str) -> None:
    @tool
    def measure() -> Any:
        return value

    result = await measure.execute({})
    assert result.text == text and not result.is_error
    json.loads(result.text)


async def test_a_value_with_no_json_form_is_an_error_result() -> None:
    lock = threading.Lock()

    @tool
    def give() -> Any:
        return lock

    result = await give.execute({})
    assert result.is_error and "lock" in result.text.lower()
    assert result.details["value"] is lock
    assert result.content == [TextContent(result.text)]
