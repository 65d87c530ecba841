"""Loader policies against real servers: prefix, include/exclude, retries, timeout, max_output_chars,
result_renderer, needs_approval, max_concurrency, and deferral of MCP tools with their policies intact.

Most tests use tests/servers/annotated.py over HTTP (the server stays up); retries need a server that dies
mid-call, so they run over stdio, where every stateless call starts a process of its own.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import PYTHON, SERVERS, LeakChecker, RunningServer, StartServer

from cubepi import AgentTool, AgentToolResult, MCPError, MCPTimeoutError, TextContent, UserError, defer_tools
from cubepi.mcp import (
    HttpServer,
    StdioServer,
    load_mcp_tools,
    load_mcp_tools_http,
    load_mcp_tools_stdio,
)
from cubepi.mcp._calls.limits import Timeouts
from cubepi.mcp._calls.runner import Stateless
from cubepi.mcp._lists.building import Lister
from cubepi.mcp._lists.options import LoadOptions
from cubepi.mcp._lists.policies import Policies, is_destructive, is_retry_safe
from cubepi.tools import ensure_unique_names

ANNOTATED = SERVERS / "annotated.py"
POLICIES = (
    "prefix",
    "include",
    "exclude",
    "timeout",
    "retries",
    "max_output_chars",
    "result_renderer",
    "needs_approval",
    "max_concurrency",
    "page_results",
)


@pytest.fixture(scope="module")
def annotated_http(http_server_factory: StartServer) -> RunningServer:
    return http_server_factory([PYTHON, str(ANNOTATED), "streamable-http"], "/mcp")


def stdio() -> StdioServer:
    return StdioServer(PYTHON, [str(ANNOTATED)])


def by_name(tools: list[AgentTool]) -> dict[str, AgentTool]:
    return {t.name: t for t in tools}


def test_every_loader_takes_every_policy() -> None:
    for loader in (load_mcp_tools, load_mcp_tools_stdio, load_mcp_tools_http):
        parameters = inspect.signature(loader).parameters
        missing = [name for name in POLICIES if name not in parameters]
        assert not missing, f"{loader.__name__} lacks {missing}"
        assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in POLICIES)


def test_the_loaders_share_their_defaults() -> None:
    """`load_mcp_tools_stdio` and `load_mcp_tools_http` default each option as `load_mcp_tools` does (tasks
    on, the parent environment not inherited, no approval asked), but for the response size: a server config
    brings its own to `load_mcp_tools`."""
    shared = inspect.signature(load_mcp_tools).parameters
    for loader in (load_mcp_tools_stdio, load_mcp_tools_http):
        parameters = inspect.signature(loader).parameters
        differ = {
            name: (shared[name].default, parameter.default)
            for name, parameter in parameters.items()
            if name in shared and name != "max_response_bytes" and shared[name].default != parameter.default
        }
        assert not differ, f"{loader.__name__}: {differ}"
    assert shared["tasks"].default is True and shared["needs_approval"].default is False
    assert inspect.signature(load_mcp_tools_stdio).parameters["inherit_env"].default is False


def test_the_loaders_options_are_one_value_with_the_same_defaults() -> None:
    """Each loader's option keywords are the fields of `LoadOptions`, defaulted alike (a stdio or HTTP
    loader's response size goes to its server config), so none is lost on the way to the list."""
    options = {field.name: field.default for field in dataclasses.fields(LoadOptions)}
    shared = inspect.signature(load_mcp_tools).parameters
    assert {name: p.default for name, p in shared.items() if name != "server"} == options
    for loader in (load_mcp_tools_stdio, load_mcp_tools_http):
        parameters = inspect.signature(loader).parameters
        taken = {name: p.default for name, p in parameters.items() if name in options}
        assert set(options) - set(taken) <= {"prespawn"}, loader.__name__
        differ = {n: d for n, d in taken.items() if n != "max_response_bytes" and d != options[n]}
        assert not differ, f"{loader.__name__}: {differ}"


def test_the_options_value_cannot_change_under_a_list() -> None:
    options = LoadOptions(include=iter(["a", "b"]))
    assert options.include == ("a", "b")  # an iterator is read once, kept as a tuple
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.timeout = 1.0  # type: ignore[misc]


def test_an_option_that_is_not_a_bool_is_refused_by_name() -> None:
    for option in ("prespawn", "tasks", "resources", "prompts"):
        with pytest.raises(UserError, match=rf"^{option} must be True or False, got 'yes'$"):
            LoadOptions(**{option: "yes"})


async def test_prefix_include_exclude(annotated_http: RunningServer) -> None:
    server = HttpServer(annotated_http.url)
    tools = await load_mcp_tools(server, prefix="ann", include=["peek", "delete", "pid"], exclude=["pid"])
    assert [t.name for t in tools] == ["ann__peek", "ann__delete"]
    peek = by_name(tools)["ann__peek"]
    # The model sees the prefixed name; the server is called by its own name.
    result = await peek.execute({"name": "x"})
    assert result.text == "peeked at x" and not result.is_error
    assert peek.annotations is not None and peek.annotations["readOnlyHint"] is True
    assert peek.origin == server.describe()
    assert peek.description == "Read-only."

    http_tools = await load_mcp_tools_http(annotated_http.url, prefix="h", exclude=["chatty", "ask"])
    names = {t.name for t in http_tools}
    assert "h__peek" in names and "h__chatty" not in names and "h__ask" not in names


async def test_unknown_names_list_what_the_server_offers(annotated_http: RunningServer) -> None:
    server = HttpServer(annotated_http.url)
    for option in ("include", "exclude"):
        with pytest.raises(UserError) as caught:
            await load_mcp_tools(server, **{option: ["peek", "nope"]})
        message = str(caught.value)
        assert option in message and "'nope'" in message and "peek" in message and "delete" in message
    with pytest.raises(UserError, match="retries names tool"):
        await load_mcp_tools(server, retries={"nope": 1})


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("prefix", ""),
        ("include", "peek"),
        ("exclude", [1]),
        ("retries", -1),
        ("retries", {"peek": "2"}),
        ("max_output_chars", 0),
        ("result_renderer", "text"),
        ("needs_approval", "sometimes"),
        ("max_concurrency", 0),
    ],
)
async def test_bad_policies_fail_before_connecting(option: str, value: Any) -> None:
    # Nothing listens on port 9: a UserError (not an MCPError) shows the options were checked first.
    with pytest.raises(UserError, match=option):
        await load_mcp_tools(HttpServer("http://127.0.0.1:9/mcp"), **{option: value})


def test_a_listing_whose_names_collide_is_rejected() -> None:
    runner = Stateless(HttpServer("http://a/mcp"), Timeouts())
    twice = [{"name": "fetch"}, {"name": "fetch"}]
    with pytest.raises(UserError, match="two tools are named 'web__fetch'"):
        Lister(runner, Policies.create(prefix="web")).build(twice)
    dotted = [{"name": "a.b"}, {"name": "a_b"}]
    with pytest.raises(UserError, match="both become 'a_b'"):
        Lister(runner, Policies.create()).build(dotted)


async def test_combined_lists_name_both_origins(annotated_http: RunningServer, kitchen_http: Any) -> None:
    ours = await load_mcp_tools_http(annotated_http.url, include=["pid"])
    theirs = await load_mcp_tools_http(kitchen_http.url, include=["pid"])
    with pytest.raises(UserError) as caught:
        ensure_unique_names([*ours, *theirs])
    assert str(annotated_http.port) in str(caught.value) and str(kitchen_http.port) in str(caught.value)
    prefixed = await load_mcp_tools_http(kitchen_http.url, include=["pid"], prefix="kitchen")
    ensure_unique_names([*ours, *prefixed])


def test_annotation_helpers_follow_the_spec_defaults() -> None:
    assert is_retry_safe({"readOnlyHint": True}) and is_retry_safe({"idempotentHint": True})
    assert not is_retry_safe(None) and not is_retry_safe({"destructiveHint": False})
    assert is_destructive(None) and is_destructive({}) and is_destructive({"destructiveHint": True})
    assert not is_destructive({"readOnlyHint": True})
    assert not is_destructive({"readOnlyHint": False, "destructiveHint": False})
    assert is_destructive({"readOnlyHint": True, "destructiveHint": True})


async def test_needs_approval(annotated_http: RunningServer) -> None:
    url = annotated_http.url
    include = ["peek", "delete", "append", "plain"]
    tools = by_name(await load_mcp_tools_http(url, include=include, needs_approval="destructive"))
    args = {"name": "x"}
    asks = {name: t.requires_approval(t.validate(args)) for name, t in tools.items()}
    assert asks == {"peek": False, "delete": True, "append": False, "plain": True}

    every = await load_mcp_tools_http(url, include=include, needs_approval=True)
    assert all(t.requires_approval(t.validate(args)) for t in every)
    never = await load_mcp_tools_http(url, include=include)
    assert not any(t.requires_approval(t.validate(args)) for t in never)

    def risky(params: Any) -> bool:
        return bool(params.name.startswith("prod"))

    predicate = by_name(await load_mcp_tools_http(url, include=include, needs_approval=risky))
    delete = predicate["delete"]
    assert delete.requires_approval(delete.validate({"name": "prod-db"}))
    assert not delete.requires_approval(delete.validate({"name": "scratch"}))


async def test_the_loaders_response_bound_reaches_the_server_config(annotated_http: RunningServer) -> None:
    tools = by_name(await load_mcp_tools(HttpServer(annotated_http.url), max_response_bytes=20_000))
    with pytest.raises(MCPError, match=r"exceeded max_response_bytes=20000 \(19\.53 KiB\)"):
        await tools["big"].execute({"size": 50_000})
    assert (await tools["big"].execute({"size": 10})).text == "a" * 10


async def test_max_output_chars(annotated_http: RunningServer) -> None:
    tools = by_name(await load_mcp_tools_http(annotated_http.url, max_output_chars=1500))
    result = await tools["big"].execute({"size": 1000, "blocks": 3})
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    assert len(texts) == 2, "the third block had no room left"
    assert texts[0] == "a" * 1000
    assert texts[1].startswith("b" * 500 + "\n[truncated: 1,500 of 3,000 characters cut")
    assert "max_output_chars=1,500" in texts[1]
    assert result.details["truncated"] == {"total_chars": 3000, "kept_chars": 1500, "limit": 1500}

    small = await tools["big"].execute({"size": 10})
    assert small.text == "a" * 10 and "truncated" not in small.details

    # Structured content stays whole in details (never shown to the model); the text is cut.
    short = by_name(await load_mcp_tools_http(annotated_http.url, include=["report"], max_output_chars=5))
    report = await short["report"].execute({"rows": 3})
    assert report.details["structuredContent"] == {"rows": 3, "status": "ok"}
    assert report.text.startswith("{") and "[truncated: 28 of 33 characters cut" in report.text


async def test_result_renderer_gets_the_raw_result(annotated_http: RunningServer) -> None:
    from mcp import types

    seen: list[Any] = []

    def as_upper(raw: types.CallToolResult) -> str:
        seen.append(raw)
        return " ".join(block.text.upper() for block in raw.content if isinstance(block, types.TextContent))

    tools = by_name(await load_mcp_tools_http(annotated_http.url, result_renderer=as_upper))
    result = await tools["peek"].execute({"name": "x"})
    assert result.text == "PEEKED AT X" and not result.is_error
    assert isinstance(seen[0], types.CallToolResult)
    refused = await tools["refuse"].execute({"path": "/nonexistent/dir/counter"})
    assert refused.is_error, "isError survives a renderer that returns a str"

    def whole(raw: types.CallToolResult) -> AgentToolResult:
        return AgentToolResult(content=[TextContent("x" * 50)], details={"mine": True})

    capped = by_name(
        await load_mcp_tools_http(annotated_http.url, result_renderer=whole, max_output_chars=10)
    )
    out = await capped["peek"].execute({"name": "x"})
    assert out.text.startswith("x" * 10 + "\n[truncated: 40 of 50") and out.details["mine"] is True


async def test_timeout_policy(annotated_http: RunningServer) -> None:
    tools = by_name(
        await load_mcp_tools_http(annotated_http.url, include=["hold"], timeout=0.5, startup_timeout=30)
    )
    with pytest.raises(MCPTimeoutError) as caught:
        await tools["hold"].execute({"seconds": 3})
    assert caught.value.phase == "call" and caught.value.tool_name == "hold"


async def test_max_concurrency_limits_stateless_calls(annotated_http: RunningServer) -> None:
    url = annotated_http.url
    tools = by_name(await load_mcp_tools_http(url, include=["hold", "peak"], max_concurrency=2))

    async def burst(tool: AgentTool, calls: int) -> None:
        async with anyio.create_task_group() as group:
            for _ in range(calls):
                group.start_soon(tool.execute, {"seconds": 0.3})

    await tools["peak"].execute({})  # reset
    await burst(tools["hold"], 6)
    assert (await tools["peak"].execute({})).text == "2"

    default = by_name(await load_mcp_tools_http(url, include=["hold", "peak"]))
    await burst(default["hold"], 12)
    assert (await default["peak"].execute({})).text == "8", "the default limit is 8"


async def test_the_limit_is_shared_by_the_tools_of_a_list(annotated_http: RunningServer) -> None:
    url = annotated_http.url
    tools = by_name(await load_mcp_tools_http(url, include=["hold", "peak"], max_concurrency=1))
    watch = by_name(await load_mcp_tools_http(url, include=["peak"]))["peak"]  # a list with its own limit
    await watch.execute({})  # reset
    held = anyio.Event()

    async def hold() -> None:
        await tools["hold"].execute({"seconds": 1.0})
        held.set()

    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            group.start_soon(hold)
            while (await watch.execute({})).text != "1":  # the hold call is in flight at the server
                pass
            await tools["peak"].execute({})  # waits for the hold call's slot
            assert held.is_set(), "peak ran while hold had the list's only slot"


async def test_retries_follow_annotations(tmp_path: Path, leaks: LeakChecker) -> None:
    tools = by_name(await load_mcp_tools(stdio(), retries=2, include=["flaky_read", "flaky_write", "count"]))
    read = await tools["flaky_read"].execute({"path": str(tmp_path / "read"), "failures": 2})
    assert read.text == "call 3", "a read-only tool is retried after its server died twice"

    with pytest.raises(MCPError) as caught:
        await tools["flaky_write"].execute({"path": str(tmp_path / "write"), "failures": 1})
    assert caught.value.tool_name == "flaky_write"
    assert (tmp_path / "write").read_text() == "1", "a tool without annotations is never retried by default"


async def test_retries_per_tool_and_by_function(tmp_path: Path, leaks: LeakChecker) -> None:
    chosen = by_name(await load_mcp_tools(stdio(), retries={"flaky_write": 1}, include=["flaky_write"]))
    result = await chosen["flaky_write"].execute({"path": str(tmp_path / "w"), "failures": 1})
    assert result.text == "call 2", "the user said this one may run twice"

    asked: dict[str, Any] = {}

    def decide(name: str, annotations: Any) -> int:
        asked[name] = annotations
        return 1 if annotations.get("idempotentHint") else 0

    tools = by_name(await load_mcp_tools(stdio(), retries=decide, include=["flaky_idempotent", "refuse"]))
    assert asked["flaky_idempotent"]["idempotentHint"] is True and set(asked) == {
        "flaky_idempotent",
        "refuse",
    }
    again = await tools["flaky_idempotent"].execute({"path": str(tmp_path / "i"), "failures": 1})
    assert again.text == "call 2"


async def test_is_error_is_never_retried(tmp_path: Path, annotated_http: RunningServer) -> None:
    tools = by_name(await load_mcp_tools_http(annotated_http.url, retries=3, include=["refuse"]))
    result = await tools["refuse"].execute({"path": str(tmp_path / "n")})
    assert result.is_error and "refused (call 1)" in result.text
    assert (tmp_path / "n").read_text() == "1"


async def test_deferred_mcp_tools_keep_their_policies(annotated_http: RunningServer) -> None:
    tools = await load_mcp_tools_http(
        annotated_http.url,
        prefix="ann",
        include=["big", "peek", "delete"],
        max_output_chars=20,
        needs_approval="destructive",
    )
    catalog = defer_tools(tools)
    found = await catalog.search_tools.execute({"query": "destructive"})
    assert "ann__delete" in found.details["matches"]

    call = catalog.call_tool
    big = await call.execute({"name": "ann__big", "arguments": {"size": 100}})
    assert big.text.startswith("a" * 20 + "\n[truncated: 80 of 100"), "max_output_chars kept"
    delete = call.validate({"name": "ann__delete", "arguments": {"name": "x"}})
    peek = call.validate({"name": "ann__peek", "arguments": {"name": "x"}})
    assert call.requires_approval(delete) and not call.requires_approval(peek), "approval kept"
    bad = await call.execute({"name": "ann__peek", "arguments": {"name": 3}})
    assert bad.is_error, "validated against the tool's own model"
