"""The path of one call stays short: a stateless 2026-07-28 call over Streamable HTTP passes at most four
cubepi frames between `AgentTool.execute` and the SDK's `ClientSession.send_request`, and sends one
request. A layer added on the way fails here (docs/architecture.md shows the path)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import RunningServer
from mcp import ClientSession

import cubepi
from cubepi.mcp import load_mcp_tools_http

PACKAGE = str(Path(cubepi.__file__).parent)


def cubepi_frames_above_send() -> list[str]:
    """The functions of cubepi on the stack between `execute` and the caller of this, innermost first."""
    names: list[str] = []
    frame = sys._getframe(2)  # above this function and the patched send_request
    while frame is not None:
        code = frame.f_code
        if code.co_filename.startswith(PACKAGE):
            if code.co_name == "execute":
                return names
            names.append(code.co_name)
        frame = frame.f_back  # type: ignore[assignment]
    raise AssertionError("execute is not on the stack")


async def test_a_2026_http_call_is_four_frames_from_execute(
    kitchen_http: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []
    real = ClientSession.send_request

    async def send_request(self: ClientSession, *args: Any, **kwargs: Any) -> Any:
        seen.append(cubepi_frames_above_send())
        return await real(self, *args, **kwargs)

    async with await load_mcp_tools_http(kitchen_http.url) as tools:
        echo = next(tool for tool in tools if tool.name == "echo")
        monkeypatch.setattr(ClientSession, "send_request", send_request)
        assert (await echo.execute({"message": "hi"})).text == "hi"
    assert len(seen) == 1, "one request"
    assert seen[0] == ["send", "call_tool", "_one_request", "__call__"]  # MCPRun.__call__ on top
