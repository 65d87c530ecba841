"""@modelcontextprotocol/server-everything over stdio, SSE and Streamable HTTP."""

from __future__ import annotations

import pytest
from conftest import EVERYTHING, LeakChecker, RunningServer

from cubepi import AgentTool, ImageContent, TextContent, ToolUpdate
from cubepi.mcp import HttpServer, StdioServer, load_mcp_tools, make_mcp_agent_tool


@pytest.fixture(params=["stdio", "sse", "streamable-http"])
def everything(request: pytest.FixtureRequest) -> StdioServer | HttpServer:
    if request.param == "stdio":
        if not EVERYTHING.exists():
            pytest.skip("test servers not installed: npm ci --prefix tests")
        return StdioServer(str(EVERYTHING), ["stdio"])
    fixture = "everything_sse" if request.param == "sse" else "everything_http"
    server: RunningServer = request.getfixturevalue(fixture)
    return HttpServer(server.url, transport="auto")


async def test_everything(everything: StdioServer | HttpServer, leaks: LeakChecker) -> None:
    tools: dict[str, AgentTool] = {t.name: t for t in await load_mcp_tools(everything, timeout=30)}
    assert {"echo", "get-sum", "get-tiny-image", "get-resource-links", "get-resource-reference"} <= set(tools)

    assert (await tools["echo"].execute({"message": "hi"})).text == "Echo: hi"
    assert "42" in (await tools["get-sum"].execute({"a": 40, "b": 2})).text

    image = await tools["get-tiny-image"].execute({})
    assert any(isinstance(block, ImageContent) and block.mime_type == "image/png" for block in image.content)

    links = await tools["get-resource-links"].execute({"count": 2})
    assert [b for b in links.text.splitlines() if b.startswith("[resource link: demo://resource/")]

    embedded = await tools["get-resource-reference"].execute({"resourceType": "Text", "resourceId": 1})
    assert "Resource 1: This is a plaintext resource" in embedded.text
    blob = await tools["get-resource-reference"].execute({"resourceType": "Blob", "resourceId": 1})
    assert "\nResource 1: This is a base64 blob created at " in blob.text  # text/plain, so read as text

    weather = await tools["get-structured-content"].execute({"location": "Chicago"})
    assert set(weather.details["structuredContent"]) >= {"temperature", "conditions", "humidity"}


async def test_everything_errors_and_progress(everything: StdioServer | HttpServer) -> None:
    # A schema looser than the server's, so the bad argument does reach it and it answers isError.
    loose = make_mcp_agent_tool({"name": "get-sum", "inputSchema": {"type": "object"}}, everything)
    result = await loose.execute({"a": "forty"})
    assert result.is_error and result.text.startswith("[tool error] ")

    long_run = make_mcp_agent_tool(
        {
            "name": "trigger-long-running-operation",
            "inputSchema": {
                "type": "object",
                "properties": {"duration": {"type": "number"}, "steps": {"type": "number"}},
            },
        },
        everything,
    )
    updates: list[ToolUpdate] = []
    done = await long_run.execute({"duration": 0.3, "steps": 3}, on_update=updates.append)
    assert not done.is_error
    assert [u.progress for u in updates] == [1, 2, 3] and all(u.total == 3 for u in updates)


async def test_a_text_blob_is_cut_by_max_output_chars(everything: StdioServer | HttpServer) -> None:
    whole = await make_mcp_agent_tool(
        {"name": "get-resource-reference", "inputSchema": {"type": "object"}}, everything
    ).execute({"resourceType": "Blob", "resourceId": 1})
    async with await load_mcp_tools(everything, timeout=30, max_output_chars=60) as tools:
        tool = next(t for t in tools if t.name == "get-resource-reference")
        cut = await tool.execute({"resourceType": "Blob", "resourceId": 1})
    texts = [block.text for block in whole.content if isinstance(block, TextContent)]
    assert texts[1].startswith("Resource 1: This is a base64 blob")
    assert cut.details["truncated"] == {"total_chars": sum(map(len, texts)), "kept_chars": 60, "limit": 60}
    kept = "".join(texts)[:60]
    assert cut.text.replace("\n", "").startswith(kept.replace("\n", "")) and "[truncated: " in cut.text
