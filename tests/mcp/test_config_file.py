"""`read_mcp_config`: the ``mcpServers`` file parsed into server configs, ``${VAR}`` expanded from the
environment given, bad entries refused with the server named (no server is started here)."""

from __future__ import annotations

import dataclasses

import pytest

from cubepi import UserError
from cubepi.mcp import HttpServer, StdioServer
from cubepi.mcp._config_file import read_mcp_config


def test_an_empty_variable_is_kept_and_takes_a_default_when_one_is_given() -> None:
    config = {
        "mcpServers": {
            "k": {"command": "x", "env": {"PLAIN": "<${EMPTY}>", "DEFAULTED": "${EMPTY:-fallback}"}},
        }
    }
    [item] = read_mcp_config(config, environ={"EMPTY": ""})
    assert isinstance(item.server, StdioServer)
    assert item.server.env == {"PLAIN": "<>", "DEFAULTED": "fallback"}


@pytest.mark.parametrize("name", ["", 7])
def test_a_server_without_a_name_is_refused(name: object) -> None:
    with pytest.raises(UserError, match="every server needs a non-empty name"):
        read_mcp_config({"mcpServers": {"ok": {"command": "x"}, name: {"command": "x"}}})


def test_the_servers_read_are_named_in_file_order_and_cannot_be_changed() -> None:
    config = {"mcpServers": {"web": {"url": "http://127.0.0.1:9/mcp"}, "files": {"command": "x"}}}
    items = read_mcp_config(config, environ={})
    assert [(item.name, type(item.server)) for item in items] == [("web", HttpServer), ("files", StdioServer)]
    with pytest.raises(dataclasses.FrozenInstanceError):
        items[0].name = "other"  # type: ignore[misc]
