"""Server configurations: validation, secret-free reprs, and `import cubepi.mcp` without the SDK."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import httpx2
import pytest

from cubepi import UserError
from cubepi.mcp import HttpServer, StdioServer


def test_stdio_repr_shows_env_names_not_values() -> None:
    server = StdioServer("npx", ["-y", "pkg"], env={"API_KEY": "sk-secret-123"}, cwd="/srv")
    text = repr(server)
    assert "sk-secret-123" not in text
    assert "API_KEY" in text and "npx" in text and "/srv" in text
    assert "sk-secret-123" not in server.describe()
    assert server.args == ("-y", "pkg")


def test_http_repr_hides_header_values_query_and_userinfo() -> None:
    class TokenAuth(httpx2.Auth):
        pass

    server = HttpServer(
        "https://user:pw@example.com:8443/mcp?api_key=sk-q-999",
        headers={"Authorization": "Bearer sk-h-777"},
        auth=TokenAuth(),
    )
    for text in (repr(server), server.describe()):
        assert "sk-h-777" not in text and "sk-q-999" not in text and "pw" not in text
    assert "Authorization" in repr(server)
    assert "https://example.com:8443/mcp" in server.describe()
    assert "TokenAuth" in repr(server)


def test_bad_configurations_are_user_errors() -> None:
    with pytest.raises(UserError):
        StdioServer("")
    with pytest.raises(UserError, match="list of strings"):
        StdioServer("npx", "-y pkg")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="http"):
        HttpServer("ftp://example.com")
    with pytest.raises(UserError, match="transport"):
        HttpServer("http://example.com/mcp", transport="websocket")  # type: ignore[arg-type]


@pytest.mark.parametrize("protocol", ["2099-01-01", "2025-06-18", 5])
def test_a_protocol_the_sdk_does_not_speak_is_refused_with_the_choices(protocol: object) -> None:
    """Only "auto", "legacy" or a 2026-07-28+ revision the installed SDK speaks can be pinned; the error
    lists them. (A handshake-era revision is not pinned: "legacy" finds it.)"""
    choices = "protocol must be one of 'auto', 'legacy', '2026-07-28'"
    with pytest.raises(UserError, match=choices) as caught:
        StdioServer("python", ["server.py"], protocol=protocol)  # type: ignore[arg-type]
    assert str(caught.value).endswith(f"; got {protocol!r}")
    with pytest.raises(UserError, match=choices):
        HttpServer("http://example.com/mcp", protocol=protocol)  # type: ignore[arg-type]
    for good in ("auto", "legacy", "2026-07-28"):
        assert StdioServer("python", ["server.py"], protocol=good).protocol == good


def test_import_without_the_mcp_extra_then_a_clear_error() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["mcp"] = None  # as if the extra were not installed
        import anyio
        import cubepi.mcp as m
        from cubepi import UserError
        assert not [name for name, mod in sys.modules.items() if name.startswith("mcp") and mod is not None]
        try:
            anyio.run(m.load_mcp_tools_stdio, "whatever")
        except UserError as exc:
            print(type(exc).__name__, exc)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("UserError")
    assert 'pip install "cubepi[mcp]"' in done.stdout


async def test_loader_arguments_are_checked_before_connecting() -> None:
    from cubepi.mcp import load_mcp_tools

    with pytest.raises(UserError, match="StdioServer or an HttpServer"):
        await load_mcp_tools("npx -y pkg")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="timeout"):
        await load_mcp_tools(StdioServer("/nonexistent/server"), timeout=0)
    with pytest.raises(UserError, match="timeout"):
        await load_mcp_tools(StdioServer("/nonexistent/server"), timeout="30")  # type: ignore[arg-type]
    positive = "must be a positive number of seconds or None"
    with pytest.raises(UserError, match=f"startup_timeout {positive}, got -1"):
        await load_mcp_tools(StdioServer("/nonexistent/server"), startup_timeout=-1)
    with pytest.raises(UserError, match=f"max_duration {positive}, got 0"):
        await load_mcp_tools(StdioServer("/nonexistent/server"), max_duration=0)


def test_the_environment_a_stdio_server_gets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUBEPI_TEST_PARENT_ONLY", "parent")
    env = StdioServer("python", env={"API_KEY": "sk-1"}).environment()
    assert env["API_KEY"] == "sk-1" and "PATH" in env
    assert "CUBEPI_TEST_PARENT_ONLY" not in env  # not passed through unless inherit_env=True
    assert StdioServer("python", inherit_env=True).environment()["CUBEPI_TEST_PARENT_ONLY"] == "parent"


def test_a_long_command_is_shortened_in_its_description() -> None:
    server = StdioServer("python", ["-c", "x" * 400])
    text = server.describe()
    assert text.startswith("stdio server `python -c ") and text.endswith("...`")
    assert len(text) == len("stdio server ``") + 160
    assert StdioServer("python", ["server.py"]).describe() == "stdio server `python server.py`"


def test_reprs_show_the_protocol_and_limit_only_when_set() -> None:
    assert "protocol" not in repr(StdioServer("python")) and "protocol" not in repr(
        HttpServer("http://h/mcp")
    )
    assert "protocol='legacy'" in repr(StdioServer("python", protocol="legacy"))
    assert "protocol='legacy'" in repr(HttpServer("http://h/mcp", protocol="legacy"))
    assert "max_response_bytes" not in repr(HttpServer("http://h/mcp"))
    assert "max_response_bytes=1024" in repr(HttpServer("http://h/mcp", max_response_bytes=1024))


@pytest.mark.parametrize("bad", [0, -1, 2.5, "64"])
def test_a_bad_max_response_bytes_is_refused_by_both_configs(bad: object) -> None:
    with pytest.raises(UserError, match="max_response_bytes"):
        StdioServer("python", max_response_bytes=bad)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="max_response_bytes"):
        HttpServer("http://example.com/mcp", max_response_bytes=bad)  # type: ignore[arg-type]


def test_odd_urls_are_described_without_secrets() -> None:
    assert HttpServer("http://h:99999/mcp?key=sk-1").describe() == "http server http://h/mcp?…"  # bad port
    assert HttpServer("http://u:pw@[::1]:8000/mcp").describe() == "http server http://[::1]:8000/mcp"
    with pytest.raises(UserError, match="<unparsable url>"):
        HttpServer("ftp://[::1/mcp")
