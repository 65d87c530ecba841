"""Tools travel: MCP tools from every loader, their lists and module-level ``@tool`` functions pickle
(pickle and cloudpickle), call after unpickling (in this process and in a fresh one), keep sharing one
list, and refuse clearly what cannot travel (a live connection, an auth that does not pickle)."""

from __future__ import annotations

import json
import pickle
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import cloudpickle
import httpx2
import pytest
import scale_tools
from conftest import KITCHEN, PYTHON, LeakChecker, RunningServer, free_port

from cubepi import AgentTool, MCPError, UserError
from cubepi.mcp import (
    HttpServer,
    MCPToolList,
    StdioServer,
    load_mcp_tools,
    load_mcp_tools_from_config,
    load_mcp_tools_http,
    load_mcp_tools_stdio,
    make_mcp_agent_tool,
)

DUMPS: dict[str, Callable[[Any], bytes]] = {"pickle": pickle.dumps, "cloudpickle": cloudpickle.dumps}
SECRET = "Bearer s3cret-t0ken"


@pytest.fixture(params=sorted(DUMPS))
def dumps(request: pytest.FixtureRequest) -> Callable[[Any], bytes]:
    return DUMPS[request.param]


def travel(value: Any, dumps: Callable[[Any], bytes] = pickle.dumps) -> Any:
    return pickle.loads(dumps(value))


def by_name(tools: list[AgentTool]) -> dict[str, AgentTool]:
    return {item.name: item for item in tools}


async def in_fresh_process(tools: list[AgentTool], name: str, arguments: dict[str, Any]) -> str:
    """What calling `name` prints in a new Python process that gets `tools` pickled on its stdin."""
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [PYTHON, str(Path(scale_tools.__file__))],
            input=pickle.dumps((tools, name, arguments)),
            env=scale_tools.worker_env(),
        )
    return done.stdout.decode().strip()


def runner_of(item: AgentTool) -> Any:
    """The runner an MCP tool calls through."""
    return item._run.runner  # type: ignore[attr-defined]


async def test_stdio_list_round_trip_calls_and_shares(
    dumps: Callable[[Any], bytes], leaks: LeakChecker
) -> None:
    async with await load_mcp_tools_stdio(PYTHON, [str(KITCHEN)], prefix="k", retries=1) as tools:
        copy = travel(tools, dumps)
        assert isinstance(copy, MCPToolList) and [t.name for t in copy] == [t.name for t in tools]
        assert [t.input_schema for t in copy] == [t.input_schema for t in tools]
        assert [t.annotations for t in copy] == [t.annotations for t in tools]
        add = by_name(copy)["k__add"]
        built = by_name(tools)["k__add"]
        assert built.parameters  # a copy of a tool whose model was built still travels
        assert travel(built.replace(name="plus"), dumps).name == "plus"
        assert (await add.execute({"a": 2, "b": 40})).text == "42"
        assert (await add.execute({"a": "x"})).is_error  # the model is built again from the schema
        runners = {id(runner_of(item)) for item in copy}
        assert len(runners) == 1, "the tools of one list still share one runner"
        assert runner_of(copy[0]).learned.protocol == runner_of(tools[0]).learned.protocol
        assert runner_of(copy[0]).shared is copy._shared


async def test_http_list_calls_in_a_fresh_process(kitchen_http: RunningServer, leaks: LeakChecker) -> None:
    async with await load_mcp_tools_http(kitchen_http.url, timeout=20) as tools:
        local = (await by_name(tools)["echo"].execute({"message": "travelled"})).text
        protocol = runner_of(tools[0]).learned.protocol
        assert protocol is not None and protocol.stateless  # found at load, carried
        assert await in_fresh_process(tools, "echo", {"message": "travelled"}) == local == "travelled"


async def test_a_prespawning_list_prespawns_where_it_lands(leaks: LeakChecker) -> None:
    async with await load_mcp_tools_stdio(PYTHON, [str(KITCHEN)], include=["echo"], prespawn=True) as tools:
        script = (
            "import pickle, sys\n"
            "tools = pickle.load(sys.stdin.buffer)\n"
            "shared = tools._shared\n"
            "print(shared.closed, shared.spawned, tools[0].execute_sync({'message': 'spare'}).text)\n"
        )
        with anyio.fail_after(60):
            done = await anyio.run_process([PYTHON, "-c", script], input=pickle.dumps(tools))
        assert done.stdout.decode().split() == ["False", "0", "spare"]  # made there, started on demand


async def test_tools_pickled_apart_share_one_list_where_they_land(kitchen_http: RunningServer) -> None:
    """Each tool pickled on its own (as an engine sends a task's arguments) still finds its list's
    resources: one per process, made there."""
    async with await load_mcp_tools_http(kitchen_http.url, timeout=20) as tools:
        script = (
            "import pickle, sys\n"
            "first, second = (pickle.loads(blob) for blob in pickle.load(sys.stdin.buffer))\n"
            "res = [t._run.runner.shared for t in (first, second)]\n"
            "print(res[0] is res[1], res[0].closed, first.execute_sync({'message': 'x'}).text)\n"
        )
        blobs = [pickle.dumps(tools[0]), pickle.dumps(tools[1])]
        with anyio.fail_after(60):
            done = await anyio.run_process([PYTHON, "-c", script], input=pickle.dumps(blobs))
        assert done.stdout.decode().split() == ["True", "False", "x"]
        # In the process that loaded them, a copy shares the original list's resources.
        assert runner_of(travel(tools[0])).shared is tools._shared


async def test_every_loader(kitchen_http: RunningServer, tmp_path: Path) -> None:
    """Each loader's tools travel (with pickle and cloudpickle in turn, to keep the test short)."""
    config = tmp_path / "mcp.json"
    servers = {
        "kit": {"command": PYTHON, "args": [str(KITCHEN)]},
        "web": {"url": kitchen_http.url},
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    async with await load_mcp_tools_from_config(config) as from_config:
        copy = travel(from_config, cloudpickle.dumps)
        assert type(copy) is type(from_config) and len(copy) == len(from_config)
        names = by_name(copy)
        assert (await names["kit__add"].execute({"a": 1, "b": 2})).text == "3"
        assert (await names["web__add"].execute({"a": 3, "b": 4})).text == "7"
    async with await load_mcp_tools(HttpServer(kitchen_http.url), include=["add"]) as general:
        assert (await travel(general)[0].execute({"a": 5, "b": 5})).text == "10"
    spec = {"name": "add", "inputSchema": {"type": "object", "properties": {"a": {}, "b": {}}}}
    single = make_mcp_agent_tool(spec, StdioServer(PYTHON, [str(KITCHEN)]))
    assert (await travel(single, cloudpickle.dumps).execute({"a": 20, "b": 22})).text == "42"


async def test_module_level_tool_functions(dumps: Callable[[Any], bytes]) -> None:
    assert travel(scale_tools.multiply, dumps) is scale_tools.multiply
    assert (await travel(scale_tools.shout, dumps).execute({"text": "hi"})).text == "HI"
    assert scale_tools.multiply.parameters  # built here: the copy still travels with the factory
    renamed = travel(scale_tools.multiply.replace(name="times"), dumps)
    assert renamed.name == "times" and (await renamed.execute({"a": 6, "b": 7})).text == "42"
    assert (await renamed.execute({"a": 6})).is_error  # its model was made again, and validates
    assert await in_fresh_process([scale_tools.multiply], "multiply", {"a": 3, "b": 5}) == "15"


async def test_a_closed_list_stays_closed() -> None:
    tools = await load_mcp_tools_stdio(PYTHON, [str(KITCHEN)], include=["echo"])
    await tools.aclose()
    copy = travel(tools)
    assert copy.closed
    with pytest.raises(UserError, match="was closed"):
        await copy[0].execute({"message": "x"})


async def test_a_connection_does_not_travel(kitchen_http: RunningServer, leaks: LeakChecker) -> None:
    async with HttpServer(kitchen_http.url).connect() as conn:
        tools = await load_mcp_tools(conn, include=["echo"])
        copy = travel(tools, cloudpickle.dumps)
        with pytest.raises(UserError, match="a connection does not travel") as caught:
            await copy[0].execute({"message": "x"})
        assert "load_mcp_tools(server)" in str(caught.value)
        with pytest.raises(UserError, match="a connection does not travel"):
            await copy.refresh(force=True)
        assert (await tools[0].execute({"message": "still here"})).text == "still here"


class LockedAuth(httpx2.Auth):
    """An auth holding a live object (a lock) that no pickler can send, and a secret."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.lock = threading.Lock()

    def auth_flow(self, request: httpx2.Request) -> Any:
        request.headers["Authorization"] = self.token
        yield request


async def test_an_auth_that_does_not_pickle(
    kitchen_http: RunningServer, dumps: Callable[[Any], bytes]
) -> None:
    server = HttpServer(kitchen_http.url, auth=LockedAuth(SECRET))
    async with await load_mcp_tools(server, include=["echo"]) as tools:
        assert (await tools[0].execute({"message": "here"})).text == "here"
        copy = travel(tools, dumps)  # the list travels; the auth stays behind
        with pytest.raises(UserError) as caught:
            await copy[0].execute({"message": "there"})
    message = str(caught.value)
    assert "auth=" in message and "LockedAuth" in message and "could not be pickled" in message
    assert "headers=" in message and "function that reads the token" in message
    assert SECRET not in message
    assert "LockedAuth, left behind" in repr(runner_of(copy[0]).server)


async def test_header_values_never_printed(dumps: Callable[[Any], bytes]) -> None:
    """A pickled tool carries the headers the user gave (the worker needs them) but never prints them. (The
    query value has letters a memory address in a repr never has.)"""
    port = free_port()  # nothing listens: the call fails, and its error is checked too
    spec = {"name": "echo", "inputSchema": {"type": "object", "properties": {}}}
    item = make_mcp_agent_tool(
        spec, HttpServer(f"http://127.0.0.1:{port}/mcp?key=qwz", headers={"Authorization": SECRET}), timeout=5
    )
    copy = travel(item, dumps)
    server = runner_of(copy).server
    assert server.headers == {"Authorization": SECRET}
    for text in (repr(copy), repr(server), server.describe(), repr(runner_of(copy))):
        assert SECRET not in text and "qwz" not in text
    with pytest.raises(MCPError) as caught:
        await copy.execute({})
    assert SECRET not in str(caught.value) and "qwz" not in str(caught.value)


def locked_stderr(line: str) -> None:
    """An on_stderr callback (module level: it pickles by name)."""


async def test_callables_travel_by_name_or_stay_behind() -> None:
    server = StdioServer(PYTHON, [str(KITCHEN)], on_stderr=locked_stderr)
    assert travel(server).on_stderr is locked_stderr
    lam = StdioServer(PYTHON, [str(KITCHEN)], on_stderr=lambda line: None)
    sent = travel(lam, cloudpickle.dumps)  # cloudpickle sends a lambda by value
    assert callable(sent.on_stderr) and "left behind" not in repr(sent.on_stderr)
    sent.check_travelled()
    left = travel(lam)  # plain pickle cannot
    with pytest.raises(UserError, match=r"on_stderr= .* could not be pickled"):
        await load_mcp_tools(left)


async def test_callable_headers_left_behind_say_so() -> None:
    server = HttpServer("http://127.0.0.1:1/mcp", headers=lambda: {"Authorization": SECRET})
    left = travel(server)
    assert "headers=<function, left behind>" in repr(left) and SECRET not in repr(left)
    with pytest.raises(UserError, match=r"the headers= of http server .* could not be pickled") as caught:
        await load_mcp_tools(left)
    assert "module-level function" in str(caught.value) and SECRET not in str(caught.value)
