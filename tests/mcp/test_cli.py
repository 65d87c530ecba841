"""The ``cubepi`` command, run in-process (`cubepi.cli.main`) against real servers."""

from __future__ import annotations

import json

import pytest
from conftest import KITCHEN, PYTHON, RunningServer

from cubepi.cli import main


def test_tools_over_stdio(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", "--", PYTHON, str(KITCHEN)]) == 0
    out = capsys.readouterr().out
    assert "13 tools from stdio server" in out
    assert "echo(message: str)" in out and "add(a: int, b: int)" in out
    assert "Echo the message back." in out


def test_tools_and_call_over_http(kitchen_http: RunningServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", "--url", kitchen_http.url]) == 0
    assert "weather(city: str)" in capsys.readouterr().out

    assert main(["call", "add", '{"a": 2, "b": 40}', "--url", kitchen_http.url]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "42"

    assert main(["call", "weather", '{"city": "Oslo"}', "--json", "--url", kitchen_http.url]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["details"]["structuredContent"]["city"] == "Oslo" and result["is_error"] is False

    assert main(["call", "fail", "{}", "--url", kitchen_http.url]) == 1
    assert "[tool error]" in capsys.readouterr().out

    assert (
        main(["call", "header", '{"name": "x-demo"}', "--header", "X-Demo: yes", "--url", kitchen_http.url])
        == 0
    )
    assert capsys.readouterr().out.splitlines()[0] == "yes"


def test_call_errors_are_readable(kitchen_http: RunningServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "nope", "{}", "--url", kitchen_http.url]) == 2
    err = capsys.readouterr().err
    assert "has no tool 'nope'" in err and "echo" in err

    assert main(["call", "echo", "[1, 2]", "--url", kitchen_http.url]) == 2
    assert "JSON object" in capsys.readouterr().err

    assert main(["tools"]) == 2
    assert "--url URL, or -- COMMAND" in capsys.readouterr().err

    assert main(["tools", "--", "/nonexistent/cubepi-server"]) == 2
    assert "command not found" in capsys.readouterr().err


def test_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "add(a: int, b: int)" in out
    assert "forecast(city: str" in out
    assert "light rain" in out
    assert "less than or equal to 5" in out
