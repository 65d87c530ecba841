"""The gate in front of the ``mcp`` extra, in this process: with the SDK installed it lets connections
through and names the modern protocol revisions; with a part of the extra missing it refuses with the install
command and the import problem. (A fresh process without the extra: tests/mcp/test_servers.py.)"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from cubepi.errors import UserError
from cubepi.mcp import _sdk
from cubepi.mcp._sdk import INSTALL_HINT, ensure_sdk, modern_versions


@pytest.fixture
def fresh_check() -> Iterator[None]:
    """The check is made once per process: forget its answer before and after the test."""
    _sdk._check.cache_clear()
    yield
    _sdk._check.cache_clear()


def test_with_the_extra_installed_the_gate_is_open(fresh_check: None) -> None:
    ensure_sdk()  # no error
    versions = modern_versions()
    assert isinstance(versions, tuple) and "2026-07-28" in versions
    assert all(isinstance(version, str) for version in versions)


@pytest.mark.parametrize("missing", ["mcp", "mcp.client.session", "httpx2"])
def test_without_a_part_of_the_extra_the_gate_names_the_install_command(
    missing: str, fresh_check: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, missing, None)  # as if it were not installed
        with pytest.raises(UserError) as raised:
            ensure_sdk()
        assert modern_versions() is None
    message = str(raised.value)
    assert message.startswith(f"connecting to MCP servers needs the MCP extra: {INSTALL_HINT} (")
    assert INSTALL_HINT == 'pip install "cubepi[mcp]"'
    assert f"import of {missing} halted" in message  # the import problem, for a partial install
