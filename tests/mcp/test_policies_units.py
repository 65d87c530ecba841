"""`Policies` on a fake caller (no server): retries and their pauses, the last failure, output cuts and
renderers. The end-to-end behaviour against real servers is in test_policies.py."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from mcp import types

from cubepi import AgentToolResult, ImageContent, MCPError, MCPTimeoutError, TextContent, UserError
from cubepi.mcp._calls import runner as _runner
from cubepi.mcp._calls.shared_state import Shared
from cubepi.mcp._lists import policies as _policies
from cubepi.mcp._lists import tool as _tool
from cubepi.mcp._lists.building import Lister
from cubepi.mcp._lists.policies import Policies

OK = {"content": [{"type": "text", "text": "ok"}]}


def spec(name: str, **annotations: bool) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, "annotations": annotations or None}


class Caller(_runner.Runner):
    """A runner that raises `failures` (in order), then returns `result`; it counts its calls."""

    def __init__(self, *failures: BaseException, result: Any = OK) -> None:
        self.failures = list(failures)
        self.result = result
        self.calls: list[str | None] = []

    async def request(self, work: Any, *args: Any, tool_name: str | None = None) -> Any:
        self.calls.append(tool_name)
        if self.failures:
            raise self.failures.pop(0)
        return self.result

    def describe(self) -> str:
        return "fake server"


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses between retries, recorded instead of slept."""
    seen: list[float] = []

    class Recording:
        def __getattr__(self, name: str) -> Any:
            return getattr(anyio, name)

        async def sleep(self, seconds: float) -> None:
            seen.append(seconds)

    monkeypatch.setattr(_tool, "anyio", Recording())
    return seen


def crash() -> MCPError:
    return MCPError("calling tool 'read' failed: the server closed the connection", tool_name="read")


def build(caller: _runner.Runner, *tools: dict[str, Any], **options: Any) -> dict[str, Any]:
    listing = Lister(caller, Policies.create(**options)).build(list(tools))
    return {t.name: t for t in listing.tools}


# -- retries -------------------------------------------------------------------------------------------------


async def test_the_last_failed_retry_raises_the_servers_error(pauses: list[float]) -> None:
    caller = Caller(*(crash() for _ in range(10)))
    tool = build(caller, spec("read", readOnlyHint=True), retries=3)["read"]
    with pytest.raises(MCPError) as caught:
        await tool.execute({})
    assert type(caught.value) is MCPError and "closed the connection" in str(caught.value)
    assert len(caller.calls) == 4
    assert pauses == [0.1, 0.2, 0.4]


async def test_pauses_double_up_to_the_cap(pauses: list[float]) -> None:
    caller = Caller(*(crash() for _ in range(7)))
    tool = build(caller, spec("read", readOnlyHint=True), retries=7)["read"]
    assert (await tool.execute({})).text == "ok"
    assert pauses == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]


async def test_a_retry_that_succeeds_returns_its_result(pauses: list[float]) -> None:
    caller = Caller(crash(), result={"content": [{"type": "text", "text": "second time"}]})
    tool = build(caller, spec("read", idempotentHint=True), retries=1)["read"]
    assert (await tool.execute({})).text == "second time"
    assert len(caller.calls) == 2 and pauses == [0.1]


async def test_a_slow_call_is_not_retried_but_a_slow_start_is(pauses: list[float]) -> None:
    slow_call = MCPTimeoutError("calling timed out", phase="call", limit=1.0)
    caller = Caller(slow_call)
    tool = build(caller, spec("read", readOnlyHint=True), retries=2)["read"]
    with pytest.raises(MCPTimeoutError):
        await tool.execute({})
    assert len(caller.calls) == 1

    slow_start = [MCPTimeoutError("starting timed out", phase="startup", limit=1.0) for _ in range(3)]
    caller = Caller(*slow_start)
    tool = build(caller, spec("read", readOnlyHint=True), retries=2)["read"]
    with pytest.raises(MCPTimeoutError) as caught:
        await tool.execute({})
    assert caught.value is slow_start[2] and len(caller.calls) == 3

    caller = Caller(slow_start[0])
    tool = build(caller, spec("read", readOnlyHint=True), retries=1)["read"]
    assert (await tool.execute({})).text == "ok" and len(caller.calls) == 2


async def test_other_errors_are_not_retried(pauses: list[float]) -> None:
    caller = Caller(ValueError("a bug"))
    tool = build(caller, spec("read", readOnlyHint=True), retries=3)["read"]
    with pytest.raises(ValueError):
        await tool.execute({})
    assert len(caller.calls) == 1 and pauses == []


@pytest.mark.parametrize(
    ("annotations", "options", "attempts"),
    [
        ({}, {"retries": 2}, 1),  # no annotations: not safe to repeat
        ({"readOnlyHint": False, "idempotentHint": False}, {"retries": 2}, 1),
        ({"readOnlyHint": True}, {"retries": 2}, 3),
        ({"idempotentHint": True}, {"retries": 1}, 2),
        ({}, {"retries": {"read": 2}}, 3),  # by name, annotations ignored
        ({"readOnlyHint": True}, {"retries": {"read": 0}}, 1),
        ({"readOnlyHint": True}, {"retries": lambda name, ann: 1 if ann.get("readOnlyHint") else 0}, 2),
        ({}, {"retries": lambda name, ann: 1 if ann.get("readOnlyHint") else 0}, 1),
    ],
)
async def test_how_many_attempts(
    annotations: dict[str, bool], options: dict[str, Any], attempts: int, pauses: list[float]
) -> None:
    caller = Caller(*(crash() for _ in range(5)))
    tool = build(caller, spec("read", **annotations), **options)["read"]
    with pytest.raises(MCPError):
        await tool.execute({})
    assert len(caller.calls) == attempts


async def test_a_tool_a_retries_mapping_does_not_name_is_called_once(pauses: list[float]) -> None:
    caller = Caller(*(crash() for _ in range(5)))
    tools = build(caller, spec("read", readOnlyHint=True), spec("write"), retries={"write": 2})
    with pytest.raises(MCPError, match="closed the connection"):
        await tools["read"].execute({})
    assert caller.calls == ["read"] and pauses == []


async def test_a_retries_function_returning_a_bad_count_is_a_user_error() -> None:
    with pytest.raises(UserError, match="retries"):
        build(Caller(), spec("read"), retries=lambda name, ann: -1)


# -- checks before connecting --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("prefix", ""),
        ("prefix", 3),
        ("retries", -1),
        ("retries", True),
        ("retries", 1.5),
        ("retries", {"read": -1}),
        ("max_output_chars", 0),
        ("max_output_chars", True),
        ("max_output_chars", 2.5),
        ("result_renderer", "text"),
        ("needs_approval", "always"),
        ("max_concurrency", 0),
        ("max_concurrency", True),
        ("max_concurrency", 1.5),
        ("include", "read"),
        ("include", [1]),
        ("exclude", 7),
    ],
)
def test_bad_options(option: str, value: Any) -> None:
    with pytest.raises(UserError, match=option):
        Policies.create(**{option: value})


def test_the_defaults() -> None:
    policies = Policies.create()
    assert (policies.prefix, policies.include, policies.exclude, policies.retries) == (None, None, None, 0)
    assert (policies.max_output_chars, policies.result_renderer, policies.max_concurrency) == (None, None, 8)
    assert policies.needs_approval is False
    tool = build(Caller(), spec("read", readOnlyHint=True))["read"]
    assert tool.needs_approval is False and tool.name == "read"


@pytest.mark.parametrize(
    ("option", "value"),
    [("max_output_chars", 1), ("retries", 0), ("max_concurrency", 1), ("max_concurrency", None)],
)
def test_the_smallest_good_options(option: str, value: Any) -> None:
    Policies.create(**{option: value})


def test_names_the_server_does_not_offer() -> None:
    for option in ("include", "exclude"):
        with pytest.raises(UserError) as caught:
            build(Caller(), spec("read"), spec("write"), **{option: ["nope"]})
        assert f"{option} names tool(s) 'nope' that fake server does not offer" in str(caught.value)
        assert "it offers: read, write" in str(caught.value)
    with pytest.raises(UserError, match=r"retries names tool\(s\) 'nope'"):
        build(Caller(), spec("read"), retries={"nope": 1})
    with pytest.raises(UserError, match=r"\(no tools\)"):
        build(Caller(), include=["nope"])


def test_include_exclude_and_prefix() -> None:
    tools = build(Caller(), spec("a"), spec("b"), spec("c"), include=["a", "b"], exclude=["b"], prefix="p")
    assert list(tools) == ["p__a"]
    assert list(build(Caller(), spec("a"), spec("b"), exclude=["a"])) == ["b"]


async def test_the_server_is_called_by_its_own_name() -> None:
    caller = Caller()
    await build(caller, spec("a"), prefix="web")["web__a"].execute({})
    assert caller.calls == ["a"]


def test_destructive_approval_follows_the_annotations() -> None:
    tools = build(
        Caller(),
        spec("plain"),
        spec("read", readOnlyHint=True),
        spec("add", destructiveHint=False),
        needs_approval="destructive",
    )
    assert tools["plain"].needs_approval is True
    assert tools["read"].needs_approval is False
    assert tools["add"].needs_approval is False
    assert (
        build(Caller(), spec("read", readOnlyHint=True), needs_approval=True)["read"].needs_approval is True
    )


class Holding(Caller):
    """A runner whose calls wait for `release`; at most `limit` at once in one loop (None: no limit)."""

    def __init__(self, limit: int | None) -> None:
        super().__init__()
        self.shared = Shared("fake server")
        self.limit = limit
        self.in_flight = self.peak = 0
        self.release = anyio.Event()

    def limiter(self) -> anyio.CapacityLimiter | None:
        return None if self.limit is None else self.shared.limiter(self.limit)

    async def request(self, work: Any, *args: Any, tool_name: str | None = None) -> Any:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await self.release.wait()
        self.in_flight -= 1
        return OK


async def test_the_limiter_is_one_per_loop_and_limits_calls() -> None:
    holding = Holding(2)
    limiter = holding.limiter()
    assert limiter is not None and limiter is holding.limiter() and limiter.total_tokens == 2
    (tool,) = Lister(holding, Policies.create(max_concurrency=2)).build([spec("hold")]).tools
    async with anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(tool.execute, {})
        while limiter.borrowed_tokens < 2 or holding.in_flight < 2:
            await anyio.lowlevel.checkpoint()
        assert limiter.statistics().tasks_waiting == 2
        holding.release.set()
    assert holding.peak == 2
    holding = Holding(None)
    (unlimited,) = Lister(holding, Policies.create()).build([spec("hold")]).tools
    async with anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(unlimited.execute, {})
        while holding.in_flight < 4:
            await anyio.lowlevel.checkpoint()
        holding.release.set()


# -- output --------------------------------------------------------------------------------------------------


def sdk_result(*texts: str, image: bool = False, resource: str | None = None) -> types.CallToolResult:
    blocks: list[Any] = [types.TextContent(type="text", text=text) for text in texts]
    if image:
        blocks.insert(0, types.ImageContent(type="image", data="aGk=", mimeType="image/png"))
    if resource is not None:
        contents = types.TextResourceContents(uri="memo://r", text=resource)
        blocks.append(types.EmbeddedResource(type="resource", resource=contents))
    return types.CallToolResult(content=blocks)


def texts(result: AgentToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


@pytest.mark.parametrize("as_dict", [False, True])
def test_max_output_chars_cuts_across_blocks(as_dict: bool) -> None:
    raw: Any = sdk_result("a" * 6, "b" * 6, "c" * 6)
    if as_dict:
        raw = raw.model_dump(mode="json", by_alias=True, exclude_none=True)
    result = Policies.create(max_output_chars=8).render(raw)
    marker = "\n[truncated: 10 of 18 characters cut (max_output_chars=8)]"
    assert texts(result) == ["a" * 6, "bb" + marker]
    assert result.details["truncated"] == {"total_chars": 18, "kept_chars": 8, "limit": 8}


@pytest.mark.parametrize("as_dict", [False, True])
def test_max_output_chars_at_a_block_boundary(as_dict: bool) -> None:
    raw: Any = sdk_result("a" * 6, "b" * 6)
    if as_dict:
        raw = raw.model_dump(mode="json", by_alias=True, exclude_none=True)
    result = Policies.create(max_output_chars=6).render(raw)
    assert texts(result) == ["a" * 6 + "\n[truncated: 6 of 12 characters cut (max_output_chars=6)]"]
    unchanged = Policies.create(max_output_chars=12).render(raw)
    assert texts(unchanged) == ["a" * 6, "b" * 6] and "truncated" not in unchanged.details


def test_max_output_chars_cuts_embedded_resource_text_and_keeps_images() -> None:
    result = Policies.create(max_output_chars=5).render(sdk_result("abc", image=True, resource="defgh"))
    assert isinstance(result.content[0], ImageContent)
    assert texts(result) == ["abc", "de\n[truncated: 3 of 8 characters cut (max_output_chars=5)]"]


def test_a_cut_result_without_text_left_gets_the_marker_alone() -> None:
    rendered = AgentToolResult(content=[ImageContent(data="aGk=", mime_type="image/png")])
    result = _policies._clip_result(rendered, 5, already_cut=_policies._Cut(5, total=9, kept=5))
    assert texts(result) == ["[truncated: 4 of 9 characters cut (max_output_chars=5)]"]


def test_is_error_survives_the_cut() -> None:
    raw = {"content": [{"type": "text", "text": "x" * 50}], "isError": True}
    result = Policies.create(max_output_chars=20).render(raw)
    assert result.is_error and "[truncated:" in result.text


RENDERERS: list[tuple[Callable[[Any], Any], list[str]]] = [
    (lambda raw: "as text", ["as text"]),
    (lambda raw: [TextContent("one"), TextContent("two")], ["one", "two"]),
    (lambda raw: AgentToolResult(content=[TextContent("mine")]), ["mine"]),
]


@pytest.mark.parametrize(("renderer", "expected"), RENDERERS)
def test_result_renderer_forms(renderer: Callable[[Any], Any], expected: list[str]) -> None:
    result = Policies.create(result_renderer=renderer).render(sdk_result("raw"))
    assert texts(result) == expected


def test_result_renderer_keeps_is_error_and_structured_content_of_either_raw_form() -> None:
    policies = Policies.create(result_renderer=lambda raw: "seen")
    sdk = types.CallToolResult(content=[], structuredContent={"n": 1}, isError=True)
    for raw in (sdk, {"content": [], "structuredContent": {"n": 1}, "isError": True}):
        result = policies.render(raw)
        assert result.is_error and result.details == {"structuredContent": {"n": 1}}
    plain = policies.render({"content": []})
    assert not plain.is_error and plain.details == {}


def test_result_renderer_then_max_output_chars() -> None:
    result = Policies.create(result_renderer=lambda raw: "x" * 30, max_output_chars=10).render(sdk_result())
    assert result.text.startswith("x" * 10 + "\n[truncated: 20 of 30")


def test_a_renderer_returning_something_else_is_a_user_error() -> None:
    policies = Policies.create(result_renderer=lambda raw: 42)
    with pytest.raises(UserError, match="got int"):
        policies.render(sdk_result())
    with pytest.raises(UserError):
        Policies.create(result_renderer=lambda raw: [TextContent("a"), "b"]).render(sdk_result())


async def test_annotations_that_are_not_an_object_count_as_none(pauses: list[float]) -> None:
    odd = {"name": "odd", "inputSchema": {"type": "object"}, "annotations": ["readOnlyHint"]}
    caller = Caller(crash())
    tools = build(caller, odd, retries=2, needs_approval="destructive")
    assert tools["odd"].needs_approval is True  # no annotations: destructive by the spec's defaults
    with pytest.raises(MCPError):
        await tools["odd"].execute({})
    assert len(caller.calls) == 1  # and not safe to repeat


async def test_each_retry_is_logged_with_its_number(
    pauses: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    caller = Caller(crash(), crash())
    tool = build(caller, spec("read", readOnlyHint=True), retries=3)["read"]
    with caplog.at_level(logging.INFO, logger="cubepi.mcp"):
        assert (await tool.execute({})).text == "ok"
    retries = [r.getMessage() for r in caplog.records if r.getMessage().startswith("retrying")]
    assert [message.split(" after:")[0] for message in retries] == [
        "retrying tool 'read' (retry 1 of 3)",
        "retrying tool 'read' (retry 2 of 3)",
    ]


def test_a_dict_result_keeps_its_images_when_cut() -> None:
    raw = {
        "content": [
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "text", "text": "x" * 9},
        ]
    }
    result = Policies.create(max_output_chars=4).render(raw)
    assert isinstance(result.content[0], ImageContent)
    assert texts(result) == ["xxxx\n[truncated: 5 of 9 characters cut (max_output_chars=4)]"]


# -- a tool made without a list, a refresh, page_results, no SDK at import ---------------------------------


async def test_a_tool_built_with_the_default_policies_is_not_retried(pauses: list[float]) -> None:
    """`make_mcp_agent_tool` builds with `Policies()` itself: no retries, even for a read-only tool."""
    caller = Caller(crash())
    tool = _tool.build_tool(spec("read", readOnlyHint=True), caller, Policies(max_concurrency=None))
    with pytest.raises(MCPError, match="closed the connection"):
        await tool.execute({})
    assert caller.calls == ["read"] and pauses == []
    assert (await tool.execute({})).text == "ok"


async def test_a_refresh_forgets_the_names_the_server_dropped(pauses: list[float]) -> None:
    """A listing after a refresh (not strict): names in include/exclude/retries the server no longer
    offers are no error; the rest still apply."""
    policies = Policies.create(include=["a", "b", "gone"], exclude=["b", "gone"], retries={"a": 1, "gone": 2})
    caller = Caller(crash())
    listing = Lister(caller, policies).build([spec("a"), spec("b"), spec("c")], strict=False)
    tools = {t.name: t for t in listing.tools}
    assert list(tools) == ["a"]
    assert (await tools["a"].execute({})).text == "ok" and caller.calls == ["a", "a"]  # retried once
    with pytest.raises(UserError, match="'gone'"):
        Lister(Caller(), policies).build([spec("a"), spec("b")])
    cut = policies.offered_only(["a", "c"])
    assert (cut.include, cut.exclude, cut.retries) == (frozenset({"a"}), frozenset(), {"a": 1})
    counted = Policies.create(retries=2, prefix="p").offered_only(["a"])
    assert (counted.retries, counted.include, counted.exclude, counted.prefix) == (2, None, None, "p")
    caller = Caller(crash(), crash())
    (read,) = Lister(caller, counted).build([spec("a", readOnlyHint=True)], strict=False).tools
    assert (await read.execute({})).text == "ok" and len(caller.calls) == 3


def test_page_results_keeps_the_cut_text_for_read_more() -> None:
    policies = Policies.create(max_output_chars=5, page_results=True, prefix="p")
    result = policies.render(sdk_result("abcdefgh", "ij"))
    ref = result.details["truncated"]["ref"]
    assert result.details["truncated"] == {"total_chars": 10, "kept_chars": 5, "limit": 5, "ref": ref}
    assert texts(result) == [
        "abcde\n[truncated: 5 of 10 characters cut (max_output_chars=5)]"
        f"\n[5 more characters: read on with p__read_more(ref={ref!r}, offset=5)]"
    ]
    assert policies.pages is not None
    assert texts(policies.pages.read(ref, 5, 100, "p__read_more")) == ["fghij"]
    rendered = Policies.create(result_renderer=lambda raw: "x" * 8, max_output_chars=3, page_results=True)
    cut = rendered.render(sdk_result())
    assert "read on with read_more(ref=" in cut.text and cut.details["truncated"]["kept_chars"] == 3


def test_page_results_says_when_the_rest_is_too_long_to_keep() -> None:
    result = Policies.create(max_output_chars=2, page_results=3).render(sdk_result("abcdefg"))
    assert texts(result) == [
        "ab\n[truncated: 5 of 7 characters cut (max_output_chars=2)]"
        "\n[the rest is too long to keep for reading on (page_results=3)]"
    ]
    assert "ref" not in result.details["truncated"]


def test_without_page_results_nothing_is_kept() -> None:
    policies = Policies.create(max_output_chars=2)
    assert policies.pages is None
    result = policies.render(sdk_result("abcdefg"))
    assert texts(result) == ["ab\n[truncated: 5 of 7 characters cut (max_output_chars=2)]"]


def test_policies_need_no_sdk_to_import_and_check() -> None:
    """`import cubepi.mcp` works without the mcp extra; the policies are checked without it too."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["mcp"] = None  # as if the extra were not installed
        from cubepi.mcp._lists.policies import Policies
        policies = Policies.create(prefix="p", include=["a"], max_output_chars=3)
        print([name for name, _ in policies.select([{"name": "a"}, {"name": "b"}], "a server")])
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['p__a']"
