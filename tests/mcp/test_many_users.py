"""One list, many users: `call_context` (headers, auth, ``_meta``, values) and `hidden_arguments` reach a real
HTTP server (tests/servers/whoami.py, which echoes who called) in both eras, through every way a tool is
called; hidden parameters are in no schema; app-only tools are kept from the model."""

from __future__ import annotations

import inspect
import json
import pickle
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.to_thread
import pytest
from conftest import PYTHON, SERVERS, Bearer, RunningServer, StartServer

from cubepi import AgentTool, UserError
from cubepi.agent import Agent
from cubepi.mcp import (
    CallContext,
    HttpServer,
    MCPToolList,
    StdioServer,
    call_context,
    current_call_context,
    load_mcp_tools,
)
from cubepi.providers import FauxProvider, Model, ProviderRequest, ToolCall

FAUX = Model(id="faux-1", provider="faux")
USERS = ("alice", "bob")


def user_id(ctx: CallContext) -> Any:
    return ctx.values["user_id"]


@pytest.fixture(scope="module")
def whoami_http(http_server_factory: StartServer) -> RunningServer:
    return http_server_factory([PYTHON, str(SERVERS / "whoami.py"), "http"], "/mcp")


@pytest.fixture(params=["auto", "legacy"])
async def tools(request: pytest.FixtureRequest, whoami_http: RunningServer) -> AsyncIterator[MCPToolList]:
    """The server's tools, loaded once with the server's own token; `user_id` hidden, bound to the context."""
    server = HttpServer(whoami_http.url, headers={"Authorization": "Bearer service"}, protocol=request.param)
    async with await load_mcp_tools(server, hidden_arguments={"user_id": user_id}) as loaded:
        yield loaded


def seen(text: str) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(text)
    return answer


def scope(user: str) -> call_context:
    return call_context(
        headers={"Authorization": f"Bearer {user}-token"}, meta={"who": user}, values={"user_id": user}
    )


def check(answer: dict[str, Any], user: str) -> None:
    assert answer["authorization"] == f"Bearer {user}-token"
    assert answer["user_id"] == user
    assert answer["meta"]["who"] == user


async def both(run: Any) -> dict[str, dict[str, Any]]:
    """`run(user)` for each user at once, each in its own scope; what the server saw for each."""
    answers: dict[str, dict[str, Any]] = {}

    async def one(user: str) -> None:
        async with scope(user):
            answers[user] = seen(await run(user))

    async with anyio.create_task_group() as group:
        for user in USERS * 3:
            group.start_soon(one, user)
    for user in USERS:
        check(answers[user], user)
    return answers


# -- the ways a tool is called ---------------------------------------------------------------------------


async def test_execute(tools: MCPToolList) -> None:
    whoami = tools[0]

    async def run(user: str) -> str:
        result = await whoami.execute({"note": user})
        assert not result.is_error, result.text
        return result.text

    answers = await both(run)
    assert {answers[user]["note"] for user in USERS} == set(USERS)
    # a call in a scope without headers carries the server's token: nothing of the users' calls was kept
    with call_context(values={"user_id": "nobody"}):
        plain = seen((await whoami.execute({})).text)
    assert plain["authorization"] == "Bearer service" and plain["meta"].get("who") is None


async def test_a_call_without_the_value_is_a_clear_error(tools: MCPToolList) -> None:
    with pytest.raises(UserError, match=r"hidden_arguments\['user_id'\].*KeyError.*call_context"):
        await tools[0].execute({})


async def test_the_agent(tools: MCPToolList) -> None:
    async def run(user: str) -> str:
        provider = FauxProvider([ToolCall(id="c1", name="whoami", arguments={"note": user}), "done"])
        agent = Agent(provider=provider, model=FAUX, tools=tools)
        await agent.prompt("who am I?")
        request: ProviderRequest = provider.requests[0]
        assert [tool.name for tool in request.tools] == ["whoami"]  # the app-only tool is not offered
        result = agent.messages[2]
        return str(result.content[0].text)  # type: ignore[union-attr]

    await both(run)


async def test_as_function_async_and_sync(tools: MCPToolList) -> None:
    function = tools[0].as_function()
    assert "user_id" not in inspect.signature(function).parameters
    await both(lambda user: function(note=user))
    sync = tools[0].as_function(sync=True)
    await both(lambda user: anyio.to_thread.run_sync(lambda: sync(note=user)))


async def test_langchain(tools: MCPToolList) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.utils.function_calling import convert_to_openai_tool

    tool = tools[0].to_langchain()
    assert "user_id" not in json.dumps(convert_to_openai_tool(tool))

    async def run(user: str) -> str:
        message = await tool.ainvoke(
            {"name": "whoami", "args": {"note": user}, "id": "c1", "type": "tool_call"}
        )
        return str(message.content)

    await both(run)
    await both(lambda user: anyio.to_thread.run_sync(lambda: tool.invoke({"note": user})))


async def test_pydantic_ai(tools: MCPToolList) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    schemas: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        schemas.extend(json.dumps(tool.parameters_json_schema) for tool in info.function_tools)
        returns = [part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)]
        if returns:
            return ModelResponse(parts=[TextPart(str(returns[-1].content))])
        return ModelResponse(parts=[ToolCallPart("whoami", json.dumps({"note": "x"}), tool_call_id="c1")])

    agent = PydanticAgent(FunctionModel(respond), tools=[tools[0].to_pydantic_ai()])

    async def run(user: str) -> str:
        return str((await agent.run("who?")).output)

    await both(run)
    assert schemas and not any("user_id" in schema for schema in schemas)


async def test_openai_agents(tools: MCPToolList) -> None:
    pytest.importorskip("agents")
    from agents import RunContextWrapper
    from agents.tool_context import ToolContext

    tool = tools[0].to_openai_agents()
    assert "user_id" not in json.dumps(tool.params_json_schema)

    async def run(user: str) -> str:
        context = ToolContext(context=None, tool_name="whoami", tool_call_id="c1", tool_arguments="{}")
        assert isinstance(context, RunContextWrapper)
        return str(await tool.on_invoke_tool(context, json.dumps({"note": user})))

    await both(run)


# -- what the model is shown, and what it may not do -------------------------------------------------------


async def test_no_export_shows_a_hidden_parameter(tools: MCPToolList) -> None:
    whoami = tools[0]
    exports = [whoami.to_openai(strict=True), whoami.to_openai(), whoami.to_anthropic(), whoami.to_gemini()]
    assert all("user_id" not in json.dumps(export) for export in exports)
    assert "user_id" not in whoami.parameters.model_fields
    schema = whoami.input_schema
    assert schema is not None and set(schema["properties"]) == {"note"}
    assert "user_id" not in schema.get("required", [])


async def test_the_model_cannot_set_a_hidden_parameter(tools: MCPToolList) -> None:
    with call_context(values={"user_id": "alice"}):
        result = await tools[0].execute({"user_id": "mallory", "note": "x"})
    assert result.is_error and "user_id" in result.text and "mallory" not in result.text
    provider = FauxProvider([ToolCall(id="c1", name="whoami", arguments={"user_id": "mallory"}), "ok"])
    with call_context(values={"user_id": "alice"}):
        await Agent(provider=provider, model=FAUX, tools=tools).prompt("be mallory")
    answer = provider.requests[1].messages[-1]
    assert answer.is_error  # type: ignore[union-attr]
    # refused as an unknown argument is; the value it tried is in no part of the result (details get logged)
    assert result.details == {
        "validation_errors": [
            {"type": "extra_forbidden", "loc": ("user_id",), "msg": "Extra inputs are not permitted"}
        ]
    }


async def test_a_plain_value_and_an_async_function(whoami_http: RunningServer) -> None:
    async def later(ctx: CallContext) -> str:
        return f"async-{ctx.values['n']}"

    for bound, want in (("fixed", "fixed"), (later, "async-7")):
        async with await load_mcp_tools(
            HttpServer(whoami_http.url), hidden_arguments={"user_id": bound}
        ) as tools:
            with call_context(values={"n": 7}):
                assert seen((await tools[0].execute({})).text)["user_id"] == want


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_scope_headers_add_to_a_callables(whoami_http: RunningServer, protocol: str) -> None:
    # The server's headers come from a callable (per session); a call context's headers go on top of them,
    # neither replacing the other.
    server = HttpServer(whoami_http.url, headers=lambda: {"X-Tenant": "acme"}, protocol=protocol)
    async with await load_mcp_tools(server, hidden_arguments={"user_id": "u"}) as tools:
        with call_context(headers={"Authorization": "Bearer alice-token"}):
            answer = seen((await tools[0].execute({})).text)
        assert (answer["x_tenant"], answer["authorization"]) == ("acme", "Bearer alice-token")
        answer = seen((await tools[0].execute({})).text)
        assert (answer["x_tenant"], answer["authorization"]) == ("acme", None)


# -- auth, nesting, app-only tools ----------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_auth_replaces_the_servers_per_call(whoami_http: RunningServer, protocol: str) -> None:
    server = HttpServer(whoami_http.url, auth=Bearer("service"), protocol=protocol)
    async with await load_mcp_tools(server, hidden_arguments={"user_id": "u"}) as tools:

        async def one(user: str) -> None:
            with call_context(auth=Bearer(f"{user}-oauth")):
                assert seen((await tools[0].execute({})).text)["authorization"] == f"Bearer {user}-oauth"

        async with anyio.create_task_group() as group:
            for user in USERS * 2:
                group.start_soon(one, user)
        assert seen((await tools[0].execute({})).text)["authorization"] == "Bearer service"


async def test_scopes_nest(tools: MCPToolList) -> None:
    async with call_context(
        headers={"X-Tenant": "acme"}, meta={"who": "outer", "org": "acme"}, values={"user_id": "o"}
    ):
        with call_context(meta={"who": "inner"}, values={"user_id": "i"}) as inner:
            assert inner.headers == {"X-Tenant": "acme"} and inner.meta == {"who": "inner", "org": "acme"}
            answer = seen((await tools[0].execute({})).text)
            assert (answer["x_tenant"], answer["meta"]["who"], answer["meta"]["org"], answer["user_id"]) == (
                "acme",
                "inner",
                "acme",
                "i",
            )
        assert current_call_context().values == {"user_id": "o"}
    assert current_call_context() == CallContext()


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_an_inner_scope_keeps_the_outer_auth_unless_it_has_its_own(
    whoami_http: RunningServer, protocol: str
) -> None:
    server = HttpServer(whoami_http.url, auth=Bearer("service"), protocol=protocol)
    async with await load_mcp_tools(server, hidden_arguments={"user_id": "u"}) as tools:
        outer_auth = Bearer("outer-oauth")
        async with call_context(auth=outer_auth):
            async with call_context(meta={"who": "inner"}) as inner:
                assert inner.auth is outer_auth
                answer = seen((await tools[0].execute({})).text)
            assert (answer["authorization"], answer["meta"]["who"]) == ("Bearer outer-oauth", "inner")
            async with call_context(auth=Bearer("inner-oauth")):
                answer = seen((await tools[0].execute({})).text)
            assert answer["authorization"] == "Bearer inner-oauth"
            answer = seen((await tools[0].execute({})).text)
            assert answer["authorization"] == "Bearer outer-oauth"
        answer = seen((await tools[0].execute({})).text)
        assert answer["authorization"] == "Bearer service"


async def test_app_only_tools_are_kept_for_the_app(tools: MCPToolList) -> None:
    assert [tool.name for tool in tools] == ["whoami"]
    (panel,) = tools.app_tools
    assert panel.name == "panel"
    with scope("alice"):
        answer = seen((await panel.execute({})).text)
    assert answer["panel"] is True and answer["authorization"] == "Bearer alice-token"


# -- secrets and travel -----------------------------------------------------------------------------------


def test_reprs_show_names_only() -> None:
    context = CallContext(
        headers={"Authorization": "Bearer s3cret"},
        auth=Bearer("t0ken"),
        meta={"k": "v4l"},
        values={"user_id": "u5er"},
    )
    for text in (
        repr(context),
        repr(call_context(headers={"Authorization": "Bearer s3cret"}, auth=Bearer("t0ken"))),
    ):
        assert not any(secret in text for secret in ("s3cret", "t0ken", "v4l", "u5er"))
        assert "Authorization" in text and "Bearer" in text  # the auth's type name
    assert pickle.loads(pickle.dumps(context)).headers == {"Authorization": "Bearer s3cret"}


async def test_bad_arguments_are_user_errors() -> None:
    with pytest.raises(UserError, match="auth"):
        call_context(auth="Bearer x")
    with pytest.raises(UserError, match="headers"):
        call_context(headers={"a": 1})  # type: ignore[dict-item]
    for option in ("headers", "meta", "values"):
        with pytest.raises(UserError, match=rf"call_context\({option}=...\) takes a dict with string keys"):
            call_context(**{option: {1: "x"}})
    with pytest.raises(UserError, match="hidden_arguments"):
        from cubepi.mcp._lists.policies import Policies

        Policies.create(hidden_arguments=["user_id"])  # type: ignore[arg-type]
    nowhere = StdioServer("/nonexistent/server")  # checked before any server is started
    for names in ({"": "x"}, {1: "x"}):
        with pytest.raises(UserError, match="hidden_arguments takes a dict"):
            await load_mcp_tools(nowhere, hidden_arguments=names)  # type: ignore[dict-item]


def test_a_scope_is_what_was_given_when_it_was_made() -> None:
    headers, values = {"Authorization": "Bearer alice"}, {"user_id": "alice"}
    scope = call_context(headers=headers, values=values)
    headers["Authorization"], values["user_id"] = "Bearer mallory", "mallory"
    with scope as context:
        assert context.headers == {"Authorization": "Bearer alice"} and context.values == {"user_id": "alice"}
    assert current_call_context() == CallContext()
    with pytest.raises(UserError, match="entered once"), scope:
        pass
    assert current_call_context() == CallContext()


async def test_async_with_yields_the_current_context() -> None:
    async with call_context(values={"user_id": "alice"}) as outer:
        async with call_context(meta={"who": "alice"}) as inner:
            assert (
                inner
                == current_call_context()
                == CallContext(meta={"who": "alice"}, values={"user_id": "alice"})
            )
        assert outer == current_call_context() == CallContext(values={"user_id": "alice"})


def worker_call(tool: AgentTool, note: str) -> str:
    """What a worker runs: a plain sync call; the context came with the submitted function."""
    return tool.execute_sync({"note": note}).text


async def test_a_dask_worker_gets_the_context_with_the_call(tools: MCPToolList) -> None:
    distributed = pytest.importorskip("distributed")
    whoami = tools[0]

    def submit_all() -> dict[str, dict[str, Any]]:
        with (
            distributed.LocalCluster(
                n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            futures = {}
            for user in USERS:
                with scope(user):
                    futures[user] = client.submit(
                        current_call_context().bind(worker_call), whoami, user, pure=False
                    )
            return {user: seen(future.result(timeout=60)) for user, future in futures.items()}

    answers = await anyio.to_thread.run_sync(submit_all)
    for user in USERS:
        check(answers[user], user)


async def test_a_connections_calls_get_meta_and_values(whoami_http: RunningServer) -> None:
    """A live connection keeps its own credentials; `meta` and `values` still apply to each call."""
    server = HttpServer(whoami_http.url, headers={"Authorization": "Bearer connection"})
    async with server.connect() as connection:
        tools = await load_mcp_tools(connection, hidden_arguments={"user_id": user_id})
        with scope("alice"):
            answer = seen((await tools[0].execute({})).text)
    assert answer["user_id"] == "alice" and answer["meta"]["who"] == "alice"
    assert answer["authorization"] == "Bearer connection"


def test_hide_takes_only_the_parameters_a_schema_has() -> None:
    from cubepi.mcp._lists.hidden_arguments import hide

    schema = {"type": "object", "properties": {"a": {}, "user_id": {}}, "required": ["user_id"]}
    assert hide(schema, None) == (schema, frozenset()) and hide(schema, None)[0] is schema
    assert hide(schema, {"other": 1})[0] is schema
    assert hide({"type": "object"}, {"user_id": 1}) == ({"type": "object"}, frozenset())
    visible, names = hide(schema, {"user_id": 1, "other": 2})
    assert visible == {"type": "object", "properties": {"a": {}}} and names == {"user_id"}
    both_required = {**schema, "required": ["a", "user_id"]}
    assert hide(both_required, {"user_id": 1})[0]["required"] == ["a"]
    assert schema["required"] == ["user_id"]  # the server's schema is left as it was
