"""`_transports.base.Transport` and its two kinds: each server config gets its transport from
`_transports.choice` alone, with the traits the calls read in place of asking for a kind; a stdio
transport finds its launch once (and a missing command stops every session, each time); an HTTP
session's headers are a callable's, then a call context's."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from cubepi import MCPError
from cubepi.mcp import HttpServer, StdioServer
from cubepi.mcp._transports import stdio as _stdio
from cubepi.mcp._transports.choice import transport_for
from cubepi.mcp._transports.http import HTTP_CLOSE_GRACE, HttpTransport
from cubepi.mcp._transports.stdio import StdioTransport

URL = "http://127.0.0.1:9/mcp"


def test_each_server_kind_gets_its_transport_and_what_the_calls_read_of_it() -> None:
    stdio = transport_for(StdioServer(command=sys.executable, args=["-c", "pass"]))
    http = transport_for(HttpServer(url=URL))
    assert isinstance(stdio, StdioTransport) and isinstance(http, HttpTransport)
    # A stdio server's exit may go on after the answer; its tasks poll on the call's own session.
    assert (stdio.detachable, stdio.close_grace, stdio.takes_call_context, stdio.polls_apart) == (
        True,
        None,
        False,
        False,
    )
    # An HTTP session ends within its grace, takes a call context's headers, polls on sessions of its own.
    assert (http.detachable, http.close_grace, http.takes_call_context, http.polls_apart) == (
        False,
        HTTP_CLOSE_GRACE,
        True,
        True,
    )


def test_a_stdio_transport_finds_its_launch_once(monkeypatch: pytest.MonkeyPatch) -> None:
    found: list[Any] = []
    original = _stdio.launch_parameters

    def counted(server: Any) -> Any:
        found.append(server)
        return original(server)

    monkeypatch.setattr(_stdio, "launch_parameters", counted)
    server = StdioServer(command=sys.executable, args=["-c", "pass"], env={"TOKEN": "not-printed"})
    transport = StdioTransport(server)
    assert transport.launch() is transport.launch()
    assert found == [server]


def test_a_missing_command_stops_every_session_each_time() -> None:
    transport = StdioTransport(StdioServer(command="cubepi-no-such-command-7d1"))
    for _ in range(2):  # a failure is not kept: the command may be installed by the next call
        with pytest.raises(MCPError, match="command not found: 'cubepi-no-such-command-7d1'"):
            transport.launch()


async def test_an_http_sessions_headers_are_a_callables_then_a_call_contexts() -> None:
    transport = HttpTransport(HttpServer(url=URL, headers=lambda: {"X-Tenant": "list", "X-Trace": "1"}))
    assert await transport.headers(None) == {"X-Tenant": "list", "X-Trace": "1"}
    assert await transport.headers({"X-Tenant": "call"}) == {"X-Tenant": "call", "X-Trace": "1"}
    static = HttpTransport(HttpServer(url=URL, headers={"X-Tenant": "static"}))
    assert await static.headers(None) is None  # the list's client sends static headers itself
    assert await static.headers({"X-Tenant": "call"}) == {"X-Tenant": "call"}
