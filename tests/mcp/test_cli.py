"""The ``cubepi`` command, run in-process (`cubepi.cli.main`) against real servers."""

from __future__ import annotations

import io
import json

import pytest
from conftest import EVERYTHING, KITCHEN, PYTHON, SERVERS, RunningServer

from cubepi import AgentToolResult, TextContent
from cubepi.cli import _keyword_arguments, _print_content, main
from cubepi.mcp import StdioServer, make_mcp_agent_tool


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


def test_call_takes_key_value_pairs(
    everything_http: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--url", everything_http.url]
    for arguments in (["a=1", "b=2"], ["a=1 b=2"], ['{"a": 1, "b": 2}'], ["a:=1", "b:=2"]):
        assert main(["call", "get-sum", *arguments, *url]) == 0, arguments
        assert capsys.readouterr().out.splitlines()[0] == "The sum of 1 and 2 is 3.", arguments

    assert main(["call", "get-sum", *url, "a=1.5", "b=-2"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "The sum of 1.5 and -2 is -0.5."

    for typed, echoed in [
        ("message=007", "007"),
        ("message=hello world", "hello world"),  # echo message='hello world'
        ("message=hi b=2", "hi b=2"),  # echo has no parameter b: one value, not two pairs
        ("message=[1, 2]", "[1, 2]"),
        ("message=", ""),
        ('message="quoted"', '"quoted"'),
        ("message=a=b", "a=b"),
    ]:
        assert main(["call", "echo", typed, *url]) == 0, typed
        assert capsys.readouterr().out.splitlines()[0] == f"Echo: {echoed}", typed

    assert (
        main(["call", "get-annotated-message", "messageType=success", "includeImage=true", "--json", *url])
        == 0
    )
    content = json.loads(capsys.readouterr().out)["content"]
    assert [block["type"] for block in content] == ["text", "image"]


def test_key_value_pairs_over_stdio(capsys: pytest.CaptureFixture[str]) -> None:
    if not EVERYTHING.exists():
        pytest.skip("test servers not installed: npm ci --prefix tests")
    assert main(["call", "get-sum", "a=1", "b=2", "--", str(EVERYTHING)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "The sum of 1 and 2 is 3."

    # A JSON object may still be followed by the command without --, as before.
    assert main(["call", "get-sum", '{"a": 1, "b": 2}', str(EVERYTHING)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "The sum of 1 and 2 is 3."

    assert main(["call", "get-tiny-image", "--", str(EVERYTHING)]) == 0
    assert "[image: image/png" in capsys.readouterr().out


def test_key_value_pairs_send_exactly_what_was_typed(capsys: pytest.CaptureFixture[str]) -> None:
    """tests/servers/recorder.py answers with the arguments it received; `max-results` and `style` have
    defaults, which only the server may apply."""
    recorder = ["--", PYTHON, str(SERVERS / "recorder.py")]

    assert main(["call", "record", "from=Paris", "--json", *recorder]) == 0
    received = json.loads(capsys.readouterr().out)["details"]["structuredContent"]["arguments"]
    assert received == {"from": "Paris"}

    typed = [
        "from=007",
        "max-results=3",
        "style=excited",
        "ratio=0.5",
        'when={"day": 2, "note": "12"}',
        'tags:=["x", "1"]',
        "note:=null",
    ]
    assert main(["call", "record", *typed, "--json", *recorder]) == 0
    received = json.loads(capsys.readouterr().out)["details"]["structuredContent"]["arguments"]
    assert received == {
        "from": "007",
        "max-results": 3,
        "style": "excited",
        "ratio": 0.5,
        "when": {"day": 2, "note": "12"},
        "tags": ["x", "1"],
        "note": None,
    }

    assert main(["call", "record", "from=x", "note=null", "tags=[1]", "--json", *recorder]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["is_error"] is True and "tags.0: Input should be a valid string" in out["content"][0]["text"]


def test_key_value_pairs_read_by_the_schema() -> None:
    """Parameter types no test server has: converted, never sent (the server is never started)."""
    schema = {
        "type": "object",
        "properties": {
            "level": {"enum": [1, 2]},
            "code": {"type": "string", "maxLength": 2},
            "anything": {},
            "flag": {"type": ["boolean", "string"]},
        },
    }
    tool = make_mcp_agent_tool(
        {"name": "t", "inputSchema": schema}, StdioServer(PYTHON, ["-c", "raise SystemExit(1)"])
    )
    assert _keyword_arguments(tool, ["level=2", "code=123", "anything=1", "flag=true"]) == {
        "level": 2,  # the enum takes the number, not the text
        "code": "123",  # too long, but text: the refusal speaks of what was typed
        "anything": "1",  # no type to go by: text, as typed
        "flag": "true",  # a string is allowed: text
    }
    assert _keyword_arguments(tool, ["anything:=1", "flag:=true"]) == {"anything": 1, "flag": True}


def test_key_value_errors_are_readable(
    everything_http: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--url", everything_http.url]

    assert main(["call", "get-sum", "a=1", "c=2", *url]) == 2
    assert "get-sum has no parameter 'c'; its parameters are: a, b" in capsys.readouterr().err

    assert main(["call", "get-tiny-image", "size=2", *url]) == 2
    assert "get-tiny-image has no parameter 'size'; it takes no parameters" in capsys.readouterr().err

    assert main(["call", "get-sum", "a=1", "a:=2", *url]) == 2
    assert "'a' is given twice" in capsys.readouterr().err

    assert main(["call", "get-sum", "a:=one", "b=2", *url]) == 2
    assert "a:= takes JSON, and 'one' is not" in capsys.readouterr().err

    assert main(["call", "echo", "message=hello", "world", *url]) == 2  # echo message=hello world
    assert "'world' is not key=value" in capsys.readouterr().err

    assert main(["call", "get-sum", '{"a": 1}', "b=2", *url]) == 2
    assert "one JSON object or as key=value pairs, not both" in capsys.readouterr().err

    assert main(["call", "get-sum", "a=one", "b=2", *url]) == 1
    out = capsys.readouterr().out
    assert "Invalid arguments for tool 'get-sum'" in out and "a: Input should be a valid number" in out


def test_call_help_shows_both_forms(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["call", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "cubepi call get-sum a=1 b=2 --" in out
    assert 'cubepi call get-sum \'{"a": 1, "b": 2}\' --' in out
    assert "key:=JSON" in out


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
