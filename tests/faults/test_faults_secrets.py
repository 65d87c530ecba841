"""Secrets with a canary value: header values, `auth` tokens and `env` values never appear in a repr, a
log record (caplog at DEBUG, every logger) or an exception message; the parent environment is not
inherited unless ``inherit_env=True``."""

from __future__ import annotations

import json
import logging

import httpx2
import pytest
from conftest import HttpFaults

from cubepi import MCPError
from cubepi.mcp import HttpServer, load_mcp_tools, load_mcp_tools_stdio, make_mcp_agent_tool

from .conftest import PYTHON, STDIO_FAULTS, Leaks, stdio_server

CANARY = "canary-51d2e8-SECRET"
ECHO = {"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}


def assert_not_in_logs(caplog: pytest.LogCaptureFixture) -> None:
    for record in caplog.records:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += repr(record.exc_info[1]) + str(record.exc_info[1])
        assert CANARY not in text, f"{record.name}: {text[:300]}"


def assert_not_in_error(error: BaseException) -> None:
    """Not in the error nor in any exception its traceback prints (causes, unsuppressed contexts)."""
    seen: BaseException | None = error
    while seen is not None:
        assert CANARY not in str(seen) and CANARY not in repr(seen)
        if isinstance(seen, MCPError):
            assert CANARY not in (seen.stderr or "")
        seen = seen.__cause__ or (None if seen.__suppress_context__ else seen.__context__)


async def test_env_values_stay_out_of_reprs_logs_and_errors(caplog: pytest.LogCaptureFixture) -> None:
    leaks = Leaks()
    env = {"API_TOKEN": CANARY}
    with caplog.at_level(logging.DEBUG):
        server = stdio_server("ok", env=env)
        tools = await load_mcp_tools(server, timeout=10)
        result = await next(item for item in tools if item.name == "env").execute({})
        assert json.loads(result.text)["API_TOKEN"] == CANARY  # the server did get it
        crashing = await load_mcp_tools(stdio_server("crash_call", env=env), timeout=10)
        with pytest.raises(MCPError) as caught:
            await crashing[0].execute({"message": "hi"})
    for text in (repr(server), server.describe(), repr(tools), repr(tools[0]), str(tools[0].origin)):
        assert CANARY not in text
    assert "API_TOKEN" in repr(server)  # the names are shown, not the values
    assert_not_in_error(caught.value)
    assert_not_in_logs(caplog)
    await leaks.check()


async def test_env_values_the_server_prints_are_redacted_from_the_stderr_tail() -> None:
    server = stdio_server("exit", "--print-env", "API_TOKEN", env={"API_TOKEN": CANARY})
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools(server, timeout=10)
    assert "API_TOKEN=" in str(caught.value)
    assert_not_in_error(caught.value)


async def test_header_and_auth_values_stay_out_of_reprs_logs_and_errors(
    http_faults: HttpFaults, caplog: pytest.LogCaptureFixture
) -> None:
    leaks = Leaks()
    headers = {"Authorization": f"Bearer {CANARY}", "X-Api-Key": CANARY}
    auth = httpx2.BasicAuth("user", CANARY)
    with caplog.at_level(logging.DEBUG):
        server = HttpServer(http_faults.url("/mcp"), headers=headers, auth=auth)
        async with await load_mcp_tools(server, timeout=10) as tools:
            assert (await tools[0].execute({"message": "hi"})).text == "hi"
        refused = HttpServer(http_faults.url("/status/401"), headers=headers, auth=auth)
        with pytest.raises(MCPError) as caught:
            await load_mcp_tools(refused, timeout=10)
    # The server did get the header, so the canary was really in play.
    assert any(record["headers"].get("X-Api-Key") == CANARY for record in http_faults.records())
    for text in (repr(server), server.describe(), repr(refused), repr(tools), repr(tools[0])):
        assert CANARY not in text
    assert_not_in_error(caught.value)
    assert_not_in_logs(caplog)
    await leaks.check()


async def test_a_token_in_the_url_query_stays_out_of_reprs_and_errors(http_faults: HttpFaults) -> None:
    server = HttpServer(http_faults.url(f"/status/403?api_key={CANARY}"))
    assert CANARY not in repr(server) and CANARY not in server.describe()
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools(server, timeout=10)
    assert_not_in_error(caught.value)


async def test_parent_environment_is_not_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUBEPI_PARENT_CANARY", CANARY)
    tools = await load_mcp_tools_stdio(PYTHON, [str(STDIO_FAULTS), "ok"], env={"GIVEN": "yes"}, timeout=10)
    env = json.loads((await next(item for item in tools if item.name == "env").execute({})).text)
    assert "CUBEPI_PARENT_CANARY" not in env
    assert env["GIVEN"] == "yes"
    assert "PATH" in env  # the SDK's safe default environment


async def test_parent_environment_is_inherited_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUBEPI_PARENT_CANARY", CANARY)
    tools = await load_mcp_tools_stdio(
        PYTHON, [str(STDIO_FAULTS), "ok"], env={"GIVEN": "yes"}, inherit_env=True, timeout=10
    )
    env = json.loads((await next(item for item in tools if item.name == "env").execute({})).text)
    assert env["CUBEPI_PARENT_CANARY"] == CANARY
    assert env["GIVEN"] == "yes"
    server = stdio_server("ok", inherit_env=True)
    assert CANARY not in repr(server)
    tool = make_mcp_agent_tool(ECHO, server)
    assert CANARY not in repr(tool)
