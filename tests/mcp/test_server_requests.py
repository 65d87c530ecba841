"""Sampling and roots answered in stateless calls: the loaders' `sampling_callback` and
`list_roots_callback`, in both protocol eras, over stdio and Streamable HTTP."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from conftest import PYTHON, SERVERS, RunningServer, StartServer
from mcp import types

from cubepi import UserError
from cubepi.mcp import HttpServer, StdioServer, load_mcp_tools, load_mcp_tools_http, load_mcp_tools_stdio

ANNOTATED = SERVERS / "annotated.py"


@pytest.fixture(scope="module")
def annotated_http(http_server_factory: StartServer) -> RunningServer:
    return http_server_factory([PYTHON, str(ANNOTATED), "streamable-http"], "/mcp")


class Client:
    """A client's answers, and the questions it was asked."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.roots_asked = 0

    async def sample(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        content = params.messages[0].content
        self.prompts.append(content.text if isinstance(content, types.TextContent) else "")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="forty-two"), model="faux"
        )

    async def roots(self, context: Any) -> types.ListRootsResult:
        self.roots_asked += 1
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])


def server(transport: str, protocol: str, http: RunningServer | None) -> StdioServer | HttpServer:
    if transport == "stdio":
        return StdioServer(PYTHON, [str(ANNOTATED)], protocol=protocol)  # type: ignore[arg-type]
    assert http is not None
    return HttpServer(http.url, protocol=protocol)  # type: ignore[arg-type]


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("protocol", ["auto", "legacy"])  # auto: the 2026-07-28 revision
async def test_sampling_and_roots_are_answered_mid_call(
    transport: str, protocol: str, request: pytest.FixtureRequest
) -> None:
    http = request.getfixturevalue("annotated_http") if transport == "http" else None
    client = Client()
    async with await load_mcp_tools(
        server(transport, protocol, http),
        include=["survey"],
        sampling_callback=client.sample,
        list_roots_callback=client.roots,
    ) as tools:
        result = await tools[0].execute({"question": "What is six times seven?"})
        assert (result.is_error, result.text) == (False, "forty-two | roots: file:///work/project")
        assert client.prompts == ["What is six times seven?"]
        assert client.roots_asked == 1
        result = await tools[0].execute({"question": "Again?"})  # every stateless call has them
        assert result.text == "forty-two | roots: file:///work/project"
        assert client.roots_asked == 2


async def test_the_two_documented_loaders_take_them(annotated_http: RunningServer) -> None:
    client = Client()
    stdio = await load_mcp_tools_stdio(
        PYTHON, [str(ANNOTATED)], include=["ask"], sampling_callback=client.sample
    )
    http = await load_mcp_tools_http(annotated_http.url, include=["roots"], list_roots_callback=client.roots)
    async with stdio, http:
        assert (await stdio[0].execute({"question": "q"})).text == "forty-two"
        assert "file:///work/project" in (await http[0].execute({})).text


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_without_callbacks_the_call_is_an_error_result(protocol: str) -> None:
    async with await load_mcp_tools(server("stdio", protocol, None), include=["ask"]) as tools:
        result = await tools[0].execute({"question": "q"})
    assert result.is_error


async def test_bad_callbacks_and_connections_are_refused(annotated_http: RunningServer) -> None:
    with pytest.raises(UserError, match="sampling_callback must be an async function"):
        await load_mcp_tools(server("stdio", "auto", None), sampling_callback="yes")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="list_roots_callback must be an async function"):
        await load_mcp_tools(server("stdio", "auto", None), list_roots_callback=3)  # type: ignore[arg-type]
    async with HttpServer(annotated_http.url).connect() as conn:
        with pytest.raises(UserError, match=r"server\.connect"):
            await load_mcp_tools(conn, sampling_callback=Client().sample)


async def test_a_tool_with_callbacks_pickles_as_elicitation_does() -> None:
    """Callbacks are part of the tool's data: module-level functions travel, and the copy answers."""
    tools = await load_mcp_tools(
        server("stdio", "auto", None),
        include=["survey"],
        sampling_callback=_sample,
        list_roots_callback=_roots,
    )
    async with tools:
        copy = pickle.loads(pickle.dumps(tools))
        async with copy:
            result = await copy[0].execute({"question": "q"})
    assert result.text == "module-level | roots: file:///travelled"


async def _sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="module-level"), model="faux"
    )


async def _roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///travelled")])
