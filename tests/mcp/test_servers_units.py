"""Server configurations travelling (pickle, cloudpickle): what a worker gets, what stays behind and says so,
and what a copy's repr and error show (never a secret)."""

from __future__ import annotations

import pickle
import threading
from typing import Any

import cloudpickle
import httpx2
import pytest
from conftest import KITCHEN, PYTHON

from cubepi import UserError
from cubepi.mcp import HttpServer, StdioServer, load_mcp_tools

SECRET = "Bearer s3cret-t0ken"


def quiet(line: str) -> None:
    """An on_stderr callback at module level (pickle sends it by name)."""


def fresh_headers() -> dict[str, str]:
    """A headers callable at module level (pickle sends it by name)."""
    return {"Authorization": SECRET}


class LockedAuth(httpx2.Auth):
    """An auth holding a lock: it pickles with neither pickle nor cloudpickle."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.lock = threading.Lock()

    def auth_flow(self, request: httpx2.Request) -> Any:
        request.headers["Authorization"] = self.token
        yield request


class PlainAuth(httpx2.Auth):
    """An auth that pickles."""

    def __init__(self, token: str) -> None:
        self.token = token


def travel(value: Any, dumps: Any = pickle.dumps) -> Any:
    return pickle.loads(dumps(value))


def test_a_config_travels_whole_and_equal() -> None:
    stdio = StdioServer(
        PYTHON, [str(KITCHEN)], env={"API_KEY": "sk-1"}, cwd="/srv", inherit_env=True, protocol="legacy"
    )
    copy = travel(stdio)
    assert copy == stdio and repr(copy) == repr(stdio) and copy.describe() == stdio.describe()
    assert copy.env == {"API_KEY": "sk-1"} and copy.cwd == "/srv" and copy.inherit_env is True
    headers = {"Authorization": SECRET}
    http = HttpServer("http://h/mcp", headers=headers, transport="sse", max_response_bytes=10)
    sent = travel(http)
    assert sent == http and sent.headers == {"Authorization": SECRET} and sent.max_response_bytes == 10
    assert SECRET not in repr(sent)
    sent.check_travelled()


def test_callables_that_pickle_by_name_travel_as_themselves() -> None:
    stdio = travel(StdioServer(PYTHON, [str(KITCHEN)], on_stderr=quiet))
    assert stdio.on_stderr is quiet
    stdio.check_travelled()
    http = travel(HttpServer("http://h/mcp", headers=fresh_headers, auth=PlainAuth("t")))
    assert http.headers is fresh_headers and isinstance(http.auth, PlainAuth) and http.auth.token == "t"
    assert "left behind" not in repr(http) and "headers=<callable>" in repr(http)
    assert "auth=<PlainAuth>" in repr(http)
    http.check_travelled()


def test_cloudpickle_sends_a_lambda_that_plain_pickle_leaves_behind() -> None:
    lines: list[str] = []
    server = StdioServer(PYTHON, [str(KITCHEN)], on_stderr=lambda line: lines.append(line))
    sent = travel(server, cloudpickle.dumps)  # cloudpickle at work: it sends the lambda by value
    assert callable(sent.on_stderr) and "left behind" not in repr(sent.on_stderr)
    sent.check_travelled()
    left = travel(server)  # plain pickle cannot
    assert repr(left.on_stderr) == "<function, left behind>"
    refused = r"the on_stderr= of stdio server `.*` \(function\) could not be pickled"
    with pytest.raises(UserError, match=refused):
        left.check_travelled()


def test_an_auth_left_behind_says_so_in_its_repr_and_errors() -> None:
    server = HttpServer("http://h/mcp?key=qwz", headers={"Authorization": SECRET}, auth=LockedAuth(SECRET))
    for dumps in (pickle.dumps, cloudpickle.dumps):
        left = travel(server, dumps)
        assert left.headers == {"Authorization": SECRET}  # the headers travel; the auth stays behind
        text = repr(left)
        assert "auth=<LockedAuth, left behind>" in text and "headers=<Authorization>" in text
        assert SECRET not in text and "qwz" not in text
        with pytest.raises(UserError) as caught:
            left.check_travelled()
        message = str(caught.value)
        said = "the auth= of http server http://h/mcp?… (LockedAuth) could not be pickled ("
        assert message.startswith(said)
        assert "function that reads the token" in message and SECRET not in message


def test_callable_headers_left_behind() -> None:
    left = travel(HttpServer("http://h/mcp", headers=lambda: {"Authorization": SECRET}))
    assert "headers=<function, left behind>" in repr(left) and SECRET not in repr(left)
    with pytest.raises(UserError, match="module-level function"):
        left.check_travelled()


async def test_a_copy_that_cannot_call_is_refused_before_connecting() -> None:
    left = travel(StdioServer("/nonexistent/server", on_stderr=lambda line: None))
    with pytest.raises(UserError, match=r"on_stderr= .* could not be pickled"):
        await load_mcp_tools(left)


async def test_a_travelled_stdio_config_calls_its_server() -> None:
    copy = travel(StdioServer(PYTHON, [str(KITCHEN)], on_stderr=quiet))
    async with await load_mcp_tools(copy, include=["echo"]) as tools:
        assert (await tools[0].execute({"message": "here"})).text == "here"
