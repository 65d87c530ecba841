"""The ``cubepi`` command, run in-process (`cubepi.cli.main`) against real servers."""

from __future__ import annotations

import io
import json

import pytest
from conftest import KITCHEN, PYTHON, RunningServer

from cubepi import AgentToolResult, TextContent
from cubepi.cli import _print_content, main


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
    assert "less than or equal to 5" in out
    assert "(text:" not in out


def test_demo_shows_the_text_the_model_reads(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    read = out.split("the model reads:\n\n", 1)[1].split("\n\nYour program also gets", 1)[0]
    # The forecast's text block, whole: the JSON the server wrote, as the model gets it.
    assert '"conditions": "light rain"' in read
    forecast = json.loads(read)
    assert forecast["city"] == "Paris" and [day["day"] for day in forecast["days"]] == [1, 2]
    structured = out.split("details['structuredContent'] = ", 1)[1].splitlines()[0]
    assert json.loads(structured) == forecast


def test_long_texts_are_shortened_for_reading() -> None:
    long = "\n".join(f"line {i}" for i in range(100))
    out = io.StringIO()
    _print_content(AgentToolResult([TextContent(long), TextContent("short")]), out, shorten=True)
    lines = out.getvalue().splitlines()
    assert lines[:20] == [f"line {i}" for i in range(20)]
    kept = "\n".join(lines[:20])
    assert lines[20] == f"... ({len(long) - len(kept)} more characters)"
    assert lines[21:] == ["short"]

    wide = "x" * 5000
    out = io.StringIO()
    _print_content(AgentToolResult([TextContent(wide)]), out, shorten=True)
    assert out.getvalue() == "x" * 1000 + "\n... (4000 more characters)\n"
