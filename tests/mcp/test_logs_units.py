"""`server_logs` without a server: each MCP log message becomes a record of the ``cubepi.mcp.server`` logger,
at the matching Python level, naming the server and the server's own logger. Through a real server:
tests/mcp/test_revision.py (``log_level=``)."""

from __future__ import annotations

import logging
import pickle

import pytest
from mcp import types

from cubepi.mcp._calls.server_logs import server_logs

ORIGIN = "stdio server `python demo.py`"


def records(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "cubepi.mcp.server"]


@pytest.mark.parametrize(
    ("level", "python_level"),
    [
        ("debug", logging.DEBUG),
        ("info", logging.INFO),
        ("notice", logging.INFO),
        ("warning", logging.WARNING),
        ("error", logging.ERROR),
        ("critical", logging.CRITICAL),
        ("alert", logging.CRITICAL),
        ("emergency", logging.CRITICAL),
    ],
)
async def test_each_mcp_level_maps_onto_a_python_level(
    level: str, python_level: int, caplog: pytest.LogCaptureFixture
) -> None:
    params = types.LoggingMessageNotificationParams(level=level, data="disk almost full")  # type: ignore[arg-type]
    with caplog.at_level(logging.DEBUG, logger="cubepi.mcp.server"):
        await server_logs(ORIGIN)(params)
    assert records(caplog) == [(python_level, f"{ORIGIN}: disk almost full")]


async def test_the_servers_logger_name_follows_the_origin(caplog: pytest.LogCaptureFixture) -> None:
    named = types.LoggingMessageNotificationParams(level="error", logger="db", data={"table": "users"})
    unnamed = types.LoggingMessageNotificationParams(level="error", logger="", data="plain")
    with caplog.at_level(logging.DEBUG, logger="cubepi.mcp.server"):
        await server_logs(ORIGIN)(named)
        await server_logs(ORIGIN)(unnamed)
    assert records(caplog) == [
        (logging.ERROR, f"{ORIGIN} (db): {{'table': 'users'}}"),
        (logging.ERROR, f"{ORIGIN}: plain"),
    ]


async def test_the_callback_travels_with_a_pickled_tool(caplog: pytest.LogCaptureFixture) -> None:
    copy = pickle.loads(pickle.dumps(server_logs("http server `https://example.com/mcp`")))
    with caplog.at_level(logging.INFO, logger="cubepi.mcp.server"):
        await copy(types.LoggingMessageNotificationParams(level="info", data="hello"))
    assert records(caplog) == [(logging.INFO, "http server `https://example.com/mcp`: hello")]
