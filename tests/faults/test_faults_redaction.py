"""Redaction by value: a server that prints back what the user gave it (a token in a 401's reason phrase, a
header value in a JSON-RPC error message, an env value on stderr, cut by the tail window) never gets it
into an exception, its repr, its causes, or a log record. What the model reads stays the server's own."""

from __future__ import annotations

import json
import logging

import pytest
from conftest import HttpFaults

from cubepi import MCPError
from cubepi.mcp import HttpServer, load_mcp_tools
from cubepi.mcp._redact import MASK
from cubepi.mcp._transports.stdio import STDERR_LIMIT as DEFAULT_LIMIT

from .conftest import Leaks, stdio_server

SECRET = "tok-5f1e9a7c2b84d6e03a91"


def pieces(secret: str, size: int = 8) -> list[str]:
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def assert_nowhere(error: BaseException, caplog: pytest.LogCaptureFixture) -> None:
    """No 8-character piece of SECRET in the error, its reprs, its stderr, its causes, or any log record."""
    texts = []
    seen: BaseException | None = error
    while seen is not None:
        texts += [str(seen), repr(seen), getattr(seen, "stderr", None) or ""]
        seen = seen.__cause__ or (None if seen.__suppress_context__ else seen.__context__)
    texts += [record.getMessage() for record in caplog.records]
    for text in texts:
        for piece in pieces(SECRET):
            assert piece not in text, text[:500]


async def test_a_token_in_a_401_reason_phrase(
    http_faults: HttpFaults, caplog: pytest.LogCaptureFixture
) -> None:
    leaks = Leaks()
    server = HttpServer(http_faults.url("/echo-401"), headers={"Authorization": f"Bearer {SECRET}"})
    with caplog.at_level(logging.DEBUG), pytest.raises(MCPError) as caught:
        await load_mcp_tools(server, timeout=10)
    assert "HTTP 401 Denied for ***" in str(caught.value)  # the reason is shown, the token is not
    assert_nowhere(caught.value, caplog)
    # The HTTP stack's own log line is kept, with the token masked: it is still there to debug with.
    logged = [record.getMessage() for record in caplog.records if record.name == "httpx2"]
    assert any(line.endswith('"HTTP/1.1 401 Denied for ***"') for line in logged), logged
    await leaks.check()


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_a_header_value_in_a_json_rpc_error_message(
    protocol: str, http_faults: HttpFaults, caplog: pytest.LogCaptureFixture
) -> None:
    server = HttpServer(http_faults.url("/echo-error"), headers={"X-Api-Key": SECRET}, protocol=protocol)
    with caplog.at_level(logging.DEBUG), pytest.raises(MCPError) as caught:
        await load_mcp_tools(server, timeout=10)
    assert "JSON-RPC error -32603: key *** is not allowed to list" in str(caught.value)
    assert_nowhere(caught.value, caplog)


async def test_an_env_value_cut_by_the_stderr_window(caplog: pytest.LogCaptureFixture) -> None:
    server = stdio_server(
        "exit", "--secret-at-cut", "API_TOKEN", str(DEFAULT_LIMIT), env={"API_TOKEN": SECRET}
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(MCPError) as caught:
        await load_mcp_tools(server, timeout=10)
    stderr = caught.value.stderr or ""
    assert stderr.startswith(MASK + "\n...")  # the window cut the secret: the piece it kept is masked
    assert_nowhere(caught.value, caplog)


async def test_results_the_model_reads_are_left_as_the_server_sent_them() -> None:
    tools = await load_mcp_tools(stdio_server("ok", env={"API_TOKEN": SECRET}), timeout=10)
    env = json.loads((await next(item for item in tools if item.name == "env").execute({})).text)
    assert env["API_TOKEN"] == SECRET
