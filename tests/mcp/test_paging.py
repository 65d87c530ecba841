"""Results the model can page through: ``page_results`` keeps what ``max_output_chars`` cuts, and the list's
``read_more`` tool returns it part by part.

Against tests/servers/kitchen.py (its ``echo`` returns a text as long as the caller likes), over stdio,
Streamable HTTP, a live connection and a config file.
"""

from __future__ import annotations

import logging
import pickle
import re
import sys
from pathlib import Path

import anyio
import pytest
from conftest import EVERYTHING, KITCHEN, PYTHON, SERVERS, RunningServer

from cubepi import AgentTool, AgentToolResult, TextContent
from cubepi.errors import UserError
from cubepi.mcp import (
    StdioServer,
    load_mcp_tools,
    load_mcp_tools_from_config,
    load_mcp_tools_http,
    load_mcp_tools_stdio,
)

READ_ON = re.compile(r"read on with (\w+)\(ref='([^']+)', offset=(\d+)\)\]$")


def long_text(size: int, seed: str = "") -> str:
    """A text of `size` characters in which every position is distinct."""
    words = "".join(f"{seed}{i:06d}:é\n" for i in range(size // 8 + 1))
    return words[:size]


def by_name(tools: list[AgentTool]) -> dict[str, AgentTool]:
    return {tool.name: tool for tool in tools}


def text_of(result: AgentToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def read_on(result: AgentToolResult) -> tuple[str, str, int] | None:
    """What the model reads at the end of a cut result: the tool, the reference and the offset."""
    match = READ_ON.search(text_of(result))
    return None if match is None else (match[1], match[2], int(match[3]))


async def read_all(tools: dict[str, AgentTool], first: AgentToolResult) -> tuple[str, int]:
    """The whole text, as a model reading on to the end gets it; and how many reads it took."""
    hint = read_on(first)
    assert hint is not None, text_of(first)
    kept = first.details["truncated"]["kept_chars"]
    whole, reads = text_of(first)[:kept], 0
    while hint is not None:
        name, ref, offset = hint
        assert offset == len(whole)
        part = await tools[name].execute({"ref": ref, "offset": offset})
        assert not part.is_error, text_of(part)
        assert isinstance(part.content[0], TextContent)
        whole += part.content[0].text
        reads += 1
        hint = read_on(part)
    return whole, reads


def kitchen() -> StdioServer:
    return StdioServer(PYTHON, [str(KITCHEN)])


async def test_a_cut_result_says_how_to_read_on_and_reading_on_gives_the_whole_text() -> None:
    message = long_text(3500)
    tools = by_name(
        await load_mcp_tools_stdio(
            PYTHON, [str(KITCHEN)], prefix="k", max_output_chars=1000, page_results=True
        )
    )
    assert "k__read_more" in tools
    result = await tools["k__echo"].execute({"message": message})
    text = text_of(result)
    assert text.startswith(message[:1000]) and message[:1001] not in text
    assert "[truncated: 2,500 of 3,500 characters cut (max_output_chars=1,000)]" in text
    assert read_on(result) is not None and read_on(result)[::2] == ("k__read_more", 1000)  # type: ignore[index]
    assert result.details["truncated"]["ref"] == read_on(result)[1]  # type: ignore[index]
    whole, reads = await read_all(tools, result)
    assert whole == message
    assert reads == 3  # 1000-2000, 2000-3000, 3000-3500
    # a part may be read again, from any offset of what was cut
    _, ref, _ = read_on(result)  # type: ignore[misc]
    again = await tools["k__read_more"].execute({"ref": ref, "offset": 3400})
    assert text_of(again) == message[3400:] and read_on(again) is None


async def test_off_by_default_and_only_with_max_output_chars() -> None:
    tools = by_name(await load_mcp_tools(kitchen(), max_output_chars=10))
    assert not [name for name in tools if "read_more" in name]
    result = await tools["echo"].execute({"message": long_text(50)})
    assert "truncated" in text_of(result) and "read on" not in text_of(result)
    assert "ref" not in result.details["truncated"]
    with pytest.raises(UserError, match="set max_output_chars too"):
        await load_mcp_tools(kitchen(), page_results=True)
    for wrong in (0, -5, "yes", 1.5):
        with pytest.raises(UserError, match="page_results must be"):
            await load_mcp_tools(kitchen(), max_output_chars=10, page_results=wrong)  # type: ignore[arg-type]


async def test_the_bound_drops_the_oldest_and_an_expired_reference_is_an_error_result(
    kitchen_http: RunningServer,
) -> None:
    # Each echo of 1100 characters leaves 1000 to keep; the list keeps 3000: a fourth drops the first.
    tools = by_name(await load_mcp_tools_http(kitchen_http.url, max_output_chars=100, page_results=3000))
    messages = [long_text(1100, seed) for seed in "abcd"]
    results = [await tools["echo"].execute({"message": message}) for message in messages]
    hints = [read_on(result) for result in results]
    assert all(hint is not None for hint in hints)
    first = await tools["read_more"].execute({"ref": hints[0][1], "offset": 100})  # type: ignore[index]
    assert first.is_error
    assert "has expired" in text_of(first) and "page_results=3,000" in text_of(first)
    for message, result in zip(messages[1:], results[1:], strict=True):
        whole, _ = await read_all(tools, result)
        assert whole == message
    # longer than the whole bound: not kept, and the result says so
    huge = await tools["echo"].execute({"message": long_text(3200)})
    assert read_on(huge) is None and "too long to keep for reading on" in text_of(huge)
    assert "ref" not in huge.details["truncated"]


async def test_an_unknown_reference_or_offset_is_an_error_result(kitchen_http: RunningServer) -> None:
    tools = by_name(await load_mcp_tools_http(kitchen_http.url, max_output_chars=100, page_results=True))
    unknown = await tools["read_more"].execute({"ref": "nope", "offset": 100})
    assert unknown.is_error and "unknown reference 'nope'" in text_of(unknown)
    result = await tools["echo"].execute({"message": long_text(300)})
    _, ref, _ = read_on(result)  # type: ignore[misc]
    for offset in (99, 300):
        outside = await tools["read_more"].execute({"ref": ref, "offset": offset})
        assert outside.is_error and "characters 100 to 300 of 300" in text_of(outside)
    # another list's reference is not this list's
    other = by_name(await load_mcp_tools_http(kitchen_http.url, max_output_chars=100, page_results=True))
    foreign = await other["read_more"].execute({"ref": ref, "offset": 100})
    assert foreign.is_error and "unknown reference" in text_of(foreign)


async def test_read_more_exports_like_any_tool(kitchen_http: RunningServer) -> None:
    tools = by_name(
        await load_mcp_tools_http(kitchen_http.url, prefix="k", max_output_chars=100, page_results=True)
    )
    exported = tools["k__read_more"].to_openai(strict=True)
    function = exported["function"]
    assert function["name"] == "k__read_more" and function["strict"] is True
    assert function["parameters"]["required"] == ["ref", "offset"]
    assert function["parameters"]["additionalProperties"] is False
    assert tools["k__read_more"].annotations == {"readOnlyHint": True}
    assert tools["k__read_more"].to_anthropic()["name"] == "k__read_more"


async def test_pickled_tools_read_on_here_and_say_why_not_in_another_process(
    kitchen_http: RunningServer, tmp_path: pytest.TempPathFactory
) -> None:
    tools = await load_mcp_tools_http(kitchen_http.url, max_output_chars=100, page_results=True)
    message = long_text(250)
    result = await by_name(tools)["echo"].execute({"message": message})
    _, ref, _ = read_on(result)  # type: ignore[misc]
    copies = by_name(pickle.loads(pickle.dumps(list(tools))))
    here = await copies["read_more"].execute({"ref": ref, "offset": 100})
    assert text_of(here).startswith(message[100:200])  # in this process, a copy reads the same store
    # in another process, the copies share a store of their own, which knows nothing of this one's
    script = (
        "import pickle, sys, anyio\n"
        "tools = {t.name: t for t in pickle.loads(sys.stdin.buffer.read())}\n"
        f"result = anyio.run(tools['read_more'].execute, {{'ref': {ref!r}, 'offset': 100}})\n"
        "print(result.is_error, result.content[0].text)\n"
    )
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [sys.executable, "-c", script], input=pickle.dumps(list(tools)), check=False
        )
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    assert out.startswith("True unknown reference") and "in this process" in out


async def test_a_connection_pages_many_calls_at_once() -> None:
    messages = [long_text(700 + 50 * i, str(i)) for i in range(6)]
    async with kitchen().connect() as conn:
        tools = by_name(await load_mcp_tools(conn, max_output_chars=200, page_results=True))
        results: dict[int, AgentToolResult] = {}

        async def call(i: int) -> None:
            results[i] = await tools["echo"].execute({"message": messages[i]})

        async with anyio.create_task_group() as group:
            for i in range(len(messages)):
                group.start_soon(call, i)
        refs = {read_on(result)[1] for result in results.values()}  # type: ignore[index]
        assert len(refs) == len(messages)
        for i, message in enumerate(messages):
            whole, _ = await read_all(tools, results[i])
            assert whole == message


async def test_config_servers_each_page_with_their_prefix() -> None:
    config = {
        "mcpServers": {
            "one": {"command": PYTHON, "args": [str(KITCHEN)]},
            "two": {"command": PYTHON, "args": [str(KITCHEN)]},
        }
    }
    tools = by_name(
        await load_mcp_tools_from_config(config, max_output_chars=50, servers={"one": {"page_results": True}})
    )
    assert "one__read_more" in tools and "two__read_more" not in tools
    message = long_text(120)
    result = await tools["one__echo"].execute({"message": message})
    assert read_on(result)[0] == "one__read_more"  # type: ignore[index]
    whole, reads = await read_all(tools, result)
    assert whole == message and reads == 2
    assert read_on(await tools["two__echo"].execute({"message": message})) is None


def test_policies_with_paging_compare_without_their_store() -> None:
    from cubepi.mcp._lists.policies import Policies

    one, two = (Policies.create(max_output_chars=5, page_results=True) for _ in range(2))
    assert one == two and one.pages is not two.pages
    assert one.pages is not None and one.pages.bound == 1_000_000


async def test_a_long_resource_read_by_the_model_is_paged_too() -> None:
    if not EVERYTHING.exists():
        pytest.skip("test servers not installed: npm ci --prefix tests")
    uri = "demo://resource/static/document/architecture.md"
    server = StdioServer(str(EVERYTHING), ["stdio"])
    async with await load_mcp_tools(
        server, resources=True, max_output_chars=300, page_results=True, timeout=30
    ) as loaded:
        tools = by_name(loaded)
        whole_text = text_of(AgentToolResult(content=await loaded.read_resource(uri)))
        assert len(whole_text) > 900
        result = await tools["read_resource"].execute({"uri": uri})
        whole, reads = await read_all(tools, result)
        assert whole == whole_text and reads >= 3


async def test_refresh_keeps_read_more_and_what_it_kept(kitchen_http: RunningServer) -> None:
    loaded = await load_mcp_tools_http(kitchen_http.url, max_output_chars=100, page_results=True)
    message = long_text(250)
    result = await by_name(loaded)["echo"].execute({"message": message})
    await loaded.refresh(force=True)
    tools = by_name(loaded)
    assert [name for name in tools if name.endswith("read_more")] == ["read_more"]
    whole, _ = await read_all(tools, result)
    assert whole == message


async def test_a_listed_read_more_is_left_to_the_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "tools.json"
    state.write_text('{"read_more": "the server\'s own"}')  # changing.py serves the tools of its STATE
    server = StdioServer(PYTHON, [str(SERVERS / "changing.py")], env={"STATE": str(state)})
    caplog.set_level(logging.WARNING, logger="cubepi.mcp")
    async with await load_mcp_tools(server, prefix="c", max_output_chars=100, page_results=True) as loaded:
        assert [tool.name for tool in loaded].count("c__read_more") == 1
        tools = by_name(loaded)
        assert tools["c__read_more"].description == "the server's own"
        assert text_of(await tools["c__read_more"].execute({"text": "hi"})) == "read_more: hi"
    assert "not adding the tool 'c__read_more': a tool of that name is listed" in caplog.text


def test_a_list_keeps_exactly_its_bound_and_references_count_from_one() -> None:
    from cubepi.mcp._lists.policies import Policies

    policies = Policies.create(max_output_chars=2, page_results=10)
    store = policies.pages
    assert store is not None

    def cut(text: str) -> AgentToolResult:
        return policies.render({"content": [{"type": "text", "text": text}]})

    def read(ref: str, offset: int = 2) -> AgentToolResult:
        return store.read(ref, offset, 5, "read_more")

    first, second = cut("xxaaaaa"), cut("xxbbbbb")  # 5 + 5 characters kept: the bound, exactly
    refs = [result.details["truncated"]["ref"] for result in (first, second)]
    assert re.fullmatch(r"[0-9a-f]{8}-1", refs[0]) and refs[1] == refs[0][:-1] + "2"
    assert text_of(read(refs[0])) == "aaaaa" and text_of(read(refs[1])) == "bbbbb"
    cut("xxc")  # one character more: the oldest goes
    assert read(refs[0]).is_error and text_of(read(refs[1])) == "bbbbb"
    exact = cut("xx" + "d" * 10)  # a rest as long as the bound is kept (alone)
    assert text_of(read(exact.details["truncated"]["ref"])).startswith("ddddd[5 more characters")
    assert read(refs[1]).is_error
    malformed = read(refs[0][:-1] + "x")
    assert malformed.is_error and "unknown reference" in text_of(malformed)
    assert Policies.create(max_output_chars=1, page_results=1).pages.bound == 1  # type: ignore[union-attr]


def test_each_list_pickles_to_its_own_store() -> None:
    from cubepi.mcp._lists.policies import Policies

    one, two = (Policies.create(max_output_chars=5, page_results=100) for _ in range(2))
    assert pickle.loads(pickle.dumps(one)).pages is one.pages
    assert pickle.loads(pickle.dumps(two)).pages is two.pages
    assert one.pages is not two.pages
