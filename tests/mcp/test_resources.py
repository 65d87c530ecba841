"""Resources, resource templates, prompts and instructions: the application's API and the model's tools.

Against server-everything (stdio) and tests/servers/offers.py in both eras over stdio and Streamable HTTP.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest
from conftest import EVERYTHING, PYTHON, SERVERS, RunningServer, StartServer

from cubepi import AgentTool, ImageContent, TextContent
from cubepi.errors import MCPError, UserError
from cubepi.mcp import (
    HttpServer,
    MCPToolList,
    PromptMessage,
    StdioServer,
    instructions_prompt,
    load_mcp_tools,
    load_mcp_tools_from_config,
)
from cubepi.mcp._lists.offers import expand, template_schema, template_tool_name

OFFERS = SERVERS / "offers.py"
ERAS = ["auto", "legacy"]  # offers.py answers server/discover (2026-07-28); "legacy" forces the handshake


@pytest.fixture(scope="module")
def offers_http(http_server_factory: StartServer) -> RunningServer:
    return http_server_factory([PYTHON, str(OFFERS), "streamable-http"], "/mcp")


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def offers_server(
    transport: str, era: str, request: pytest.FixtureRequest, **env: str
) -> StdioServer | HttpServer:
    if transport == "stdio":
        return StdioServer(PYTHON, [str(OFFERS)], env=env or None, protocol=era)
    running: RunningServer = request.getfixturevalue("offers_http")
    return HttpServer(running.url, transport="streamable-http", protocol=era)


def by_name(tools: list[AgentTool]) -> dict[str, AgentTool]:
    return {tool.name: tool for tool in tools}


# -- server-everything --------------------------------------------------------------------------------------


@pytest.fixture
def everything() -> StdioServer:
    if not EVERYTHING.exists():
        pytest.skip("test servers not installed: npm ci --prefix tests")
    return StdioServer(str(EVERYTHING), ["stdio"])


async def test_everything_resources_prompts_instructions(everything: StdioServer) -> None:
    async with await load_mcp_tools(everything, timeout=30) as tools:
        assert tools.instructions is not None and "Everything Server" in tools.instructions
        resources = await tools.list_resources()
        assert "demo://resource/static/document/architecture.md" in {str(r.uri) for r in resources}
        templates = {t.uri_template: t for t in await tools.list_resource_templates()}
        assert "demo://resource/dynamic/text/{resourceId}" in templates
        text = await tools.read_resource("demo://resource/dynamic/text/2")
        assert isinstance(text[0], TextContent) and text[0].text.startswith("Resource 2:")
        blob = await tools.read_resource("demo://resource/dynamic/blob/1")
        assert isinstance(blob[0], TextContent)  # a text/plain blob reads as its text
        assert re.fullmatch(r"Resource 1: This is a base64 blob created at .+", blob[0].text)
        prompts = {p.name: p for p in await tools.list_prompts()}
        assert {"simple-prompt", "args-prompt", "resource-prompt"} <= set(prompts)
        messages = await tools.get_prompt("args-prompt", {"city": "Paris"})
        assert messages[0].role == "user" and "Paris" in messages[0].content[0].text  # type: ignore[union-attr]
        with pytest.raises(MCPError, match="not found"):
            await tools.read_resource("demo://nothing/here")


async def test_everything_the_model_follows_a_resource_link(everything: StdioServer) -> None:
    async with await load_mcp_tools(everything, timeout=30, resources=True, prompts=True) as tools:
        named = by_name(tools)
        links = await named["get-resource-links"].execute({"count": 2})
        uris = re.findall(r"\[resource link: (\S+)\]", links.text)
        text_uri = next(uri for uri in uris if "/text/" in uri)
        followed = await named["read_resource"].execute({"uri": text_uri})
        assert not followed.is_error and followed.text.startswith("Resource ")

        dynamic = await named["read_dynamic_text_resource"].execute({"resourceId": "3"})
        assert dynamic.text.startswith("Resource 3:")
        assert "resourceId" in named["read_dynamic_text_resource"].description

        listed = await named["list_prompts"].execute({})
        assert "- args-prompt(city, state?)" in listed.text
        prompt = await named["get_prompt"].execute({"name": "args-prompt", "arguments": {"city": "Oslo"}})
        assert "[user]" in prompt.text and "Oslo" in prompt.text
        missing = await named["read_resource"].execute({"uri": "demo://nothing/here"})
        assert missing.is_error and "not found" in missing.text


# -- tests/servers/offers.py, both eras, stdio and HTTP ---------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_offers_api(transport: str, era: str, request: pytest.FixtureRequest) -> None:
    server = offers_server(transport, era, request)
    async with await load_mcp_tools(server, max_response_bytes=100_000) as tools:
        assert tools.instructions is not None and tools.instructions.startswith(
            "Offers: read offers://readme"
        )
        uris = [str(r.uri) for r in await tools.list_resources()]  # three pages of 3
        assert len(uris) == 8 and uris[-1] == "offers://items/3"
        [template] = await tools.list_resource_templates()
        assert template.uri_template == "offers://users/{user}/notes/{note}"

        [image] = await tools.read_resource("offers://pixel.png")
        assert isinstance(image, ImageContent) and image.mime_type == "image/png"
        [binary] = await tools.read_resource("offers://data.bin")
        assert binary == TextContent("[resource: offers://data.bin (application/octet-stream, 1.0 KiB)]")

        messages = await tools.get_prompt("review", {"topic": "cats", "tone": "dry"})
        assert messages == [
            PromptMessage("user", [TextContent("Review cats in a dry tone.")]),
            PromptMessage("user", [TextContent("This server offers notes and files.")]),
        ]
        with pytest.raises(MCPError, match="max_response_bytes=100000"):
            await tools.read_resource("offers://huge")


@pytest.mark.parametrize("era", ERAS)
async def test_offers_tools_for_the_model(transport: str, era: str, request: pytest.FixtureRequest) -> None:
    server = offers_server(transport, era, request)
    async with await load_mcp_tools(
        server, resources=True, prompts=True, prefix="o", max_output_chars=12, needs_approval=True
    ) as tools:
        named = by_name(tools)
        assert {
            "o__read_resource",
            "o__list_resources",
            "o__read_note",
            "o__list_prompts",
            "o__get_prompt",
        } <= set(named)
        note = named["o__read_note"]
        assert note.input_schema == {
            "type": "object",
            "properties": {"user": {"type": "string"}, "note": {"type": "string"}},
            "required": ["user", "note"],
        }
        assert note.description.startswith("A note of a user, by id.")
        assert all(tool.needs_approval is True for tool in tools)
        result = await note.execute({"user": "ann", "note": "7"})
        assert result.text.startswith("note 7 of an") and "[truncated:" in result.text
        assert result.details["truncated"]["limit"] == 12
        listed = await named["o__list_resources"].execute({})
        assert "offers://items/3" not in listed.text  # cut by max_output_chars
        assert listed.details["truncated"]["total_chars"] > 200

        travelled = pickle.loads(pickle.dumps(note))
        assert (await travelled.execute({"user": "bo", "note": "1"})).text.startswith("note 1 of bo")
        assert note.to_openai()["function"]["name"] == "o__read_note"


async def test_a_2026_read_resource_is_one_request(http_server_factory: StartServer, tmp_path: Path) -> None:
    log = tmp_path / "requests.log"
    running = http_server_factory(
        [PYTHON, str(OFFERS), "streamable-http"], "/mcp", env={"OFFERS_LOG": str(log)}
    )
    async with await load_mcp_tools(HttpServer(running.url, transport="streamable-http")) as tools:
        assert "server/discover" in log.read_text().split()
        log.write_text("")
        [text] = await tools.read_resource("offers://readme")
        assert text == TextContent("This server offers notes and files.")
        assert log.read_text().split() == ["resources/read"]
        log.write_text("")
        await tools.list_resources()
        assert log.read_text().split() == ["resources/list"] * 3  # three pages, no handshake


async def test_a_refresh_lists_the_tools_alone(http_server_factory: StartServer, tmp_path: Path) -> None:
    log = tmp_path / "requests.log"
    running = http_server_factory(
        [PYTHON, str(OFFERS), "streamable-http"], "/mcp", env={"OFFERS_LOG": str(log)}
    )
    server = HttpServer(running.url, transport="streamable-http")
    async with await load_mcp_tools(server, resources=True, prompts=True) as tools:
        names = [tool.name for tool in tools]
        assert "resources/templates/list" in log.read_text().split()  # the load asked, for read_note
        log.write_text("")
        assert not await tools.refresh(force=True)
        assert log.read_text().split() == ["tools/list"]  # the tools for the model are kept, not asked again
        assert [tool.name for tool in tools] == names


@pytest.mark.parametrize("era", ERAS)
async def test_a_server_without_instructions(era: str) -> None:
    server = StdioServer(PYTHON, [str(OFFERS)], env={"OFFERS_NO_INSTRUCTIONS": "1"}, protocol=era)
    async with await load_mcp_tools(server) as tools:
        assert tools.instructions is None
        assert instructions_prompt(tools) is None


async def test_instructions_of_several_servers_and_the_system_prompt_block(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "notes": {"command": PYTHON, "args": [str(OFFERS)]},
            "quiet": {"command": PYTHON, "args": [str(OFFERS)], "env": {"OFFERS_NO_INSTRUCTIONS": "1"}},
        }
    }
    async with await load_mcp_tools_from_config(config, resources=True) as tools:
        assert (
            tools.instructions
            == "## notes\nOffers: read offers://readme first. Notes are at offers://users/{user}/notes/{note}."
        )
        block = instructions_prompt(tools)
        assert block is not None and "not by the user" in block.splitlines()[0]
        assert block.splitlines()[1:] == [
            '<mcp-server-instructions source="notes">',
            tools.servers["notes"].instructions,
            "</mcp-server-instructions>",
        ]
        assert {"notes__read_note", "quiet__read_note"} <= {tool.name for tool in tools}
        assert len(await tools.servers["quiet"].list_resources()) == 8
        with pytest.raises(UserError, match=r"tools.servers\[name\]"):
            await tools.list_resources()


async def test_on_a_connection() -> None:
    async with StdioServer(PYTHON, [str(OFFERS)]).connect() as conn:
        tools = await load_mcp_tools(conn, resources=True)
        assert tools.instructions is not None and tools.instructions.startswith("Offers:")
        assert (await tools.read_resource("offers://items/2")) == [TextContent("item 2")]
        assert (await by_name(tools)["read_note"].execute({"user": "a", "note": "b"})).text == "note b of a"
        assert conn.instructions == tools.instructions
        block = instructions_prompt(conn)
        assert block is not None and f'source="{conn.describe()}"' in block
        assert instructions_prompt(tools) == block
        assert (await conn.read_resource("offers://items/0")) == [TextContent("item 0")]
        assert [p.name for p in await conn.list_prompts()] == ["review"]
        assert len(await conn.list_resource_templates()) == 1 and len(await conn.list_resources()) == 8
        [first, _] = await conn.get_prompt("review", {"topic": "t"})
        assert first.content == [TextContent("Review t in a plain tone.")]


async def test_a_list_travels_with_what_its_server_offers() -> None:
    tools = await load_mcp_tools(StdioServer(PYTHON, [str(OFFERS)]))
    copy: MCPToolList = pickle.loads(pickle.dumps(tools))
    assert copy.instructions == tools.instructions
    assert (await copy.read_resource("offers://items/1")) == [TextContent("item 1")]
    await tools.aclose()
    await copy.aclose()


async def test_bad_input() -> None:
    with pytest.raises(UserError, match="resources must be True or False"):
        await load_mcp_tools(StdioServer(PYTHON, [str(OFFERS)]), resources="yes")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="not loaded from an MCP server"):
        await MCPToolList().list_resources()
    assert MCPToolList().instructions is None
    async with await load_mcp_tools(StdioServer(PYTHON, [str(OFFERS)])) as tools:
        with pytest.raises(UserError, match="needs a URI"):
            await tools.read_resource("")
        with pytest.raises(UserError, match="dict of str values"):
            await tools.get_prompt("review", {"topic": 3})  # type: ignore[dict-item]
    with pytest.raises(UserError, match="closed"):
        await tools.list_prompts()


def test_uri_templates() -> None:
    assert template_schema("demo://{a}/{+b}{?c,d}") == {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "string"},
            "c": {"type": "string"},
            "d": {"type": "string"},
        },
        "required": ["a", "b"],
    }
    assert (
        expand("demo://{a}/{+b}{?c,d}", {"a": "x y", "b": "p/q", "c": "1", "d": None})
        == "demo://x%20y/p/q?c=1"
    )

    class Named:
        name = "Dynamic Text Resource"

    assert template_tool_name(Named) == "read_dynamic_text_resource"
    Named.name = "userNotes"
    assert template_tool_name(Named) == "read_user_notes"
    Named.name = "!!"
    assert template_tool_name(Named) == "read_resource_template"


def test_cubepi_tools_shows_resources_templates_and_prompts(capsys: pytest.CaptureFixture[str]) -> None:
    from cubepi.cli import main

    assert main(["tools", "--", PYTHON, str(OFFERS)]) == 0
    out = capsys.readouterr().out
    assert "1 tools from stdio server" in out and "ping()" in out
    assert "\n8 resources:\n" in out and "  offers://items/3  item_3" in out
    assert "\n1 resource templates:\n\n  offers://users/{user}/notes/{note}  note" in out
    assert "\n1 prompts:\n\n  review(topic, tone)" in out


async def test_refresh_keeps_the_tools_for_the_model_and_defer_takes_them() -> None:
    from cubepi import defer_tools

    async with await load_mcp_tools(
        StdioServer(PYTHON, [str(OFFERS)]), resources=True, prompts=True
    ) as tools:
        names = [tool.name for tool in tools]
        assert not await tools.refresh(force=True)
        assert [tool.name for tool in tools] == names
        catalog = defer_tools(tools)
        found = await catalog.call_tool.execute(
            {"name": "read_note", "arguments": {"user": "u", "note": "n"}}
        )
        assert found.text == "note n of u"


def test_a_taken_name_is_left_to_the_server(caplog: pytest.LogCaptureFixture) -> None:
    from mcp import types

    from cubepi.mcp._lists.offers import offer_tools
    from cubepi.mcp._lists.policies import Policies

    class Runner:
        def describe(self) -> str:
            return "srv"

    templates = [
        types.ResourceTemplate(name="note", uri_template="x://{a}"),
        types.ResourceTemplate(name="Note", uri_template="y://{b}"),
    ]
    built = offer_tools(
        Runner(),  # type: ignore[arg-type]
        Policies(prefix="p"),
        resources=True,
        prompts=True,
        templates=templates,
        taken=["p__read_resource"],
    )
    assert [tool.name for tool in built] == [
        "p__list_resources",
        "p__read_note",
        "p__list_prompts",
        "p__get_prompt",
    ]
    assert built[1]._run.template == "x://{a}"  # type: ignore[attr-defined]
    assert "'p__read_resource'" in caplog.text and "'p__read_note'" in caplog.text


async def test_everything_over_sse(everything_sse: RunningServer) -> None:
    server = HttpServer(everything_sse.url, transport="auto")
    async with await load_mcp_tools(server, resources=True) as tools:
        assert tools.instructions is not None and "Everything Server" in tools.instructions
        [text] = await tools.read_resource("demo://resource/dynamic/text/5")
        assert isinstance(text, TextContent) and text.text.startswith("Resource 5:")
        read = await by_name(tools)["read_dynamic_text_resource"].execute({"resourceId": "6"})
        assert read.text.startswith("Resource 6:")


def test_cubepi_tools_of_a_config_names_each_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from cubepi.cli import main

    config = tmp_path / "mcp.json"
    servers = {
        "a": {"command": PYTHON, "args": [str(OFFERS)]},
        "b": {"command": PYTHON, "args": [str(OFFERS)]},
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    assert main(["tools", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "\n8 resources of a:\n" in out and "\n1 prompts of b:\n" in out


@pytest.mark.parametrize("era", ERAS)
async def test_a_server_offering_only_tools_is_not_asked(era: str) -> None:
    server = StdioServer(PYTHON, [str(SERVERS / "paged.py")], protocol=era)  # a low-level server: tools only
    async with await load_mcp_tools(server, resources=True, prompts=True) as tools:
        assert await tools.list_resources() == [] and await tools.list_resource_templates() == []
        assert await tools.list_prompts() == []
        listed = await by_name(tools)["list_prompts"].execute({})
        assert listed.text == "(no prompts)"
        assert (await by_name(tools)["list_resources"].execute({})).text == "(no resources listed)"
        assert not any(tool.name.startswith("read_") and tool.name != "read_resource" for tool in tools)


async def test_the_list_bounds_apply() -> None:
    from cubepi.errors import MCPTimeoutError

    slow_list = StdioServer(PYTHON, [str(OFFERS)], env={"OFFERS_SLOW": "resources/list"})
    async with await load_mcp_tools(slow_list, timeout=1.5, startup_timeout=30) as tools:
        with pytest.raises(MCPTimeoutError) as listing:
            await tools.list_resources()
        assert listing.value.phase == "list" and listing.value.limit == 1.5

    slow_read = StdioServer(PYTHON, [str(OFFERS)], env={"OFFERS_SLOW": "resources/read"})
    async with await load_mcp_tools(slow_read, timeout=1.5, startup_timeout=30) as tools:
        with pytest.raises(MCPTimeoutError) as reading:
            await tools.read_resource("offers://readme")
        assert reading.value.phase == "call" and reading.value.limit == 1.5
    async with await load_mcp_tools(slow_read, timeout=30, max_duration=1.5) as tools:
        with pytest.raises(MCPTimeoutError, match="max_duration") as bounded:
            await by_name(tools)["ping"].execute({})  # not slow
            await tools.read_resource("offers://readme")
        assert bounded.value.limit == 1.5


async def test_a_resource_read_from_a_process_that_never_starts_is_a_startup_timeout(tmp_path: Path) -> None:
    from cubepi.errors import MCPTimeoutError

    stuck = tmp_path / "stuck"  # once it exists, each new process of the server hangs before it starts
    server = StdioServer(
        PYTHON, [str(SERVERS / "slow_init.py")], env={"SLOW_INIT_IF": str(stuck)}, protocol="2026-07-28"
    )
    async with await load_mcp_tools(server, timeout=1, startup_timeout=3) as tools:
        stuck.touch()
        with pytest.raises(MCPTimeoutError) as caught:
            await tools.read_resource("offers://readme")
        assert (caught.value.phase, caught.value.limit) == ("startup", 3.0)
        assert "raise startup_timeout" in str(caught.value)
