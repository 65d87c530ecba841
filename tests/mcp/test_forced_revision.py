"""A revision forced with ``protocol=`` on a server that does not speak it: the error says so, and names
``protocol="auto"``; an error that has nothing to do with the revision does not."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import EVERYTHING

from cubepi import MCPError
from cubepi.mcp import StdioServer, load_mcp_tools, make_mcp_agent_tool
from cubepi.mcp._errors import translate

FORCED = "2026-07-28"
HINT = f"the server may not speak protocol revision {FORCED}, which protocol='{FORCED}' forces"
AUTO = "protocol='auto' finds out which revision it speaks"
ECHO = {"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}
STDIO_FAULTS = Path(__file__).parents[1] / "faults" / "servers" / "stdio_faults.py"


@pytest.fixture
def everything() -> StdioServer:
    if not EVERYTHING.exists():
        pytest.skip("test servers not installed: npm ci --prefix tests")
    return StdioServer(str(EVERYTHING), ["stdio"], protocol=FORCED)


async def test_a_call_on_a_handshake_only_server(everything: StdioServer) -> None:
    tool = make_mcp_agent_tool(ECHO, everything, timeout=30)
    with pytest.raises(MCPError) as caught:
        await tool.execute({"message": "hi"})
    message = str(caught.value)
    assert "calling tool 'echo'" in message  # it answered in the other era's shape
    assert HINT in message and AUTO in message


@pytest.mark.parametrize(
    ("code", "text", "hinted"),
    [(-32602, "Invalid request parameters", True), (-32000, "Connection closed", False)],
)
async def test_the_hint_is_for_what_the_server_answered(code: int, text: str, hinted: bool) -> None:
    """A JSON-RPC error the server sent gets the hint; one the SDK made up for a lost connection does not."""
    from mcp.shared.exceptions import MCPError as SdkError

    error = translate(SdkError(code=code, message=text), phase="call", server="s", forced_revision=FORCED)
    assert ("Invalid request parameters" in str(error)) is hinted
    assert ("closed the connection" in str(error)) is not hinted
    assert (HINT in str(error)) is hinted


async def test_a_listing_on_a_handshake_only_server(everything: StdioServer) -> None:
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools(everything, timeout=30)
    assert HINT in str(caught.value) and AUTO in str(caught.value)


async def test_a_server_that_dies_gets_no_revision_hint() -> None:
    server = StdioServer(sys.executable, [str(STDIO_FAULTS), "exit"], protocol=FORCED)
    with pytest.raises(MCPError) as caught:
        await load_mcp_tools(server, timeout=10)
    assert "exited with code 3" in str(caught.value)
    assert "protocol revision" not in str(caught.value)


async def test_a_forced_revision_the_server_stopped_serving(tmp_path: Path) -> None:
    """Refused with -32022 after load, a forced revision is not probed again: the error names the revision
    and `protocol='auto'`, and the call was sent once."""
    record, upgraded = tmp_path / "record.jsonl", tmp_path / "upgraded"
    faults = [str(STDIO_FAULTS), "ok", "--record", str(record), "--past-2026", str(upgraded)]
    server = StdioServer(sys.executable, faults, protocol=FORCED)
    async with await load_mcp_tools(server, include=["echo"], timeout=30) as tools:
        upgraded.touch()
        with pytest.raises(MCPError) as caught:
            await tools[0].execute({"message": "hi"})
    assert "calling tool 'echo'" in str(caught.value)
    assert HINT in str(caught.value) and AUTO in str(caught.value)
    sent = [json.loads(line)["method"] for line in record.read_text().splitlines()]
    assert sent.count("tools/call") == 1 and "initialize" not in sent
