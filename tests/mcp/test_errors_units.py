"""Error reports without a server: how each SDK, HTTP and OS failure is worded, what the report names (the
phase, the tool, the server, an exit code, a forced revision) and what it never shows (secrets, URL
queries). The exceptions are the real types the SDK, httpx2 and anyio raise; the servers that make them
are in tests/mcp/test_sdk_wording.py and the fault tests."""

from __future__ import annotations

import sys

import anyio
import httpx2
import pydantic
import pytest
from mcp.shared.exceptions import MCPError as SdkError

from cubepi.errors import MCPError, UserError
from cubepi.mcp._errors import (
    SDK_PREFIXES,
    SDK_WORDING,
    Attempt,
    RevisionRefused,
    describe_failure,
    is_cancellation,
    is_lost,
    leaves,
    mcp_errors,
    reraise,
    root_cause,
    translate,
)

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup, ExceptionGroup

SERVER = "demo-server"


def sdk(name: str, detail: str = "") -> SdkError:
    """The SDK's own error for a transport event, as the SDK words it."""
    code, text = SDK_WORDING[name] if name in SDK_WORDING else SDK_PREFIXES[name]
    return SdkError(code, text + detail)


def http_error(status: int, reason: str) -> httpx2.HTTPStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1:1/mcp")
    response = httpx2.Response(status, request=request, extensions={"reason_phrase": reason.encode()})
    return httpx2.HTTPStatusError(f"{status} {reason}", request=request, response=response)


# -- describe_failure: one line per kind of failure -------------------------------------------------------


def test_the_sdks_transport_events_are_worded_for_what_happened() -> None:
    assert describe_failure(sdk("closed")) == "the server closed the connection"
    broke = sdk("sse", "disconnected before the answer")
    assert describe_failure(broke) == f"the server's response broke off: {broke}"
    garbled = sdk("json", "Expecting value")
    assert describe_failure(garbled) == f"the server sent a malformed answer: {garbled}"
    html = sdk("content_type", "text/html")
    assert describe_failure(html) == f"the server sent a malformed answer: {html}"
    assert describe_failure(sdk("accepted")) == (
        "the server answered a request with 202 Accepted: no answer follows"
    )
    status = sdk("http_error")
    assert describe_failure(status) == f"the server answered with an HTTP error ({status})"


def test_a_servers_own_error_is_not_taken_for_a_transport_event() -> None:
    # The same codes as the SDK's made-up errors, with the server's own words.
    for code, text in [
        (-32600, "the arguments are wrong"),
        (-32000, "quota used up"),
        (-32603, "Redirect to x"),
    ]:
        error = SdkError(code, text)
        assert describe_failure(error) == f"the server returned JSON-RPC error {code}: {text}"
        assert not is_lost(error)
    assert is_lost(sdk("closed")) and is_lost(sdk("sse", "cut"))


def test_an_http_status_is_named_with_a_hint() -> None:
    assert describe_failure(http_error(401, "Unauthorized")) == (
        "the server answered HTTP 401 Unauthorized (check the headers / auth)"
    )
    assert describe_failure(http_error(403, "Forbidden")) == (
        "the server answered HTTP 403 Forbidden (check the headers / auth)"
    )
    assert describe_failure(http_error(404, "Not Found")) == (
        "the server answered HTTP 404 Not Found (no MCP endpoint there, or the session expired)"
    )
    assert describe_failure(http_error(302, "Found")).startswith(
        "the server answered HTTP 302 Found (a redirect"
    )
    assert describe_failure(http_error(400, "Bad Request")) == "the server answered HTTP 400 Bad Request"
    assert describe_failure(http_error(500, "")) == "the server answered HTTP 500"


def test_the_endpoints_status_replaces_the_sdks_made_up_error() -> None:
    # The SDK turns a 404 once a session exists into "Session terminated": the recorded status is named.
    assert describe_failure(sdk("terminated"), (404, "Not Found")) == (
        "the server answered HTTP 404 Not Found (no MCP endpoint there, or the session expired)"
    )
    assert describe_failure(sdk("redirect", "http://elsewhere/mcp"), (307, "Temporary Redirect")).startswith(
        "the server answered HTTP 307 Temporary Redirect (a redirect to another origin is not followed"
    )
    # ... but not for a closed connection, nor for a server's own error.
    assert (
        describe_failure(sdk("closed"), (500, "Internal Server Error")) == "the server closed the connection"
    )
    own = SdkError(-32602, "bad params")
    assert describe_failure(own, (500, "Internal Server Error")) == (
        "the server returned JSON-RPC error -32602: bad params"
    )


def test_os_and_other_failures() -> None:
    missing = FileNotFoundError(2, "No such file or directory", "no-such-server")
    assert describe_failure(missing) == "command not found: no-such-server"
    assert describe_failure(PermissionError(13, "Permission denied")) == "PermissionError: Permission denied"
    assert describe_failure(ValueError("bad value")) == "ValueError: bad value"
    assert describe_failure(ValueError()) == "ValueError"
    # httpx quotes the whole URL, query (and token) included: only the type is told.
    refused = httpx2.ConnectError("cannot reach http://127.0.0.1:1/mcp?token=s3cret-token")
    assert describe_failure(refused) == "ConnectError"
    assert describe_failure(httpx2.ConnectError("All connection attempts failed")) == (
        "ConnectError: All connection attempts failed"
    )


# -- translate: the report a user reads (in an event loop: it tells cancellations apart) -------------------


async def test_the_report_names_the_phase_the_tool_and_the_server() -> None:
    failure = ValueError("boom")
    called = translate(failure, phase="call", server=SERVER, tool_name="echo")
    assert isinstance(called, MCPError)
    assert str(called) == "calling tool 'echo' on demo-server failed: ValueError: boom"
    assert (called.tool_name, called.server) == ("echo", SERVER)
    starting = translate(failure, phase="initialize", server=SERVER, tool_name="echo")
    assert str(starting) == "initializing demo-server (for tool 'echo') failed: ValueError: boom"
    listing = translate(failure, phase="list", server=SERVER)
    assert str(listing) == "listing the tools of demo-server failed: ValueError: boom"
    other = translate(failure, phase="resources/read", server=SERVER, note="over SSE")
    assert str(other) == "resources/read demo-server failed (over SSE): ValueError: boom"
    assert other.tool_name is None


async def test_a_lost_connection_tells_how_the_process_ended() -> None:
    lost = anyio.BrokenResourceError()
    exited = translate(lost, phase="call", server=SERVER, tool_name="t", exit_code=3)
    assert str(exited).endswith("BrokenResourceError (exited with code 3)")
    killed = translate(sdk("closed"), phase="call", server=SERVER, tool_name="t", exit_code=-9)
    assert str(killed).endswith("the server closed the connection (killed by signal 9)")
    # A failure that is not a lost connection says nothing of the exit code.
    other = translate(ValueError("x"), phase="call", server=SERVER, tool_name="t", exit_code=3)
    assert "exited" not in str(other)


async def test_a_forced_revision_is_named_when_the_server_refused_the_request() -> None:
    refused = translate(
        SdkError(-32601, "Method not found"), phase="list", server=SERVER, forced_revision="2026-07-28"
    )
    assert str(refused) == (
        "listing the tools of demo-server failed: "
        "the server returned JSON-RPC error -32601: Method not found; "
        "the server may not speak protocol revision 2026-07-28, which protocol='2026-07-28' forces: "
        "protocol='auto' finds out which revision it speaks"
    )
    # An answer of the wrong shape is what a server of the other era sends, too.
    try:
        pydantic.TypeAdapter(int).validate_python("not a listing")
    except pydantic.ValidationError as exc:
        garbled = translate(exc, phase="list", server=SERVER, forced_revision="2026-07-28")
    assert "protocol='auto' finds out which revision it speaks" in str(garbled)
    # A transport failure is not the revision's fault.
    closed = translate(sdk("closed"), phase="list", server=SERVER, forced_revision="2026-07-28")
    assert "protocol=" not in str(closed)
    broken = translate(OSError("broken pipe"), phase="list", server=SERVER, forced_revision="2026-07-28")
    assert "protocol=" not in str(broken)


async def test_the_stderr_tail_goes_with_the_report() -> None:
    error = translate(ValueError("x"), phase="startup", server=SERVER, stderr="Traceback: no module foo")
    assert isinstance(error, MCPError) and error.stderr == "Traceback: no module foo"
    assert str(error).endswith("--- server stderr (tail) ---\nTraceback: no module foo")


async def test_cubepis_own_errors_pass_through_and_gain_what_they_lacked() -> None:
    own = MCPError("the server is gone", server=SERVER)
    group = ExceptionGroup("tasks", [ValueError("a consequence"), own])
    assert translate(group, phase="call", server=SERVER, tool_name="t", stderr="last words") is own
    assert (own.tool_name, own.stderr) == ("t", "last words")
    # What it already says is kept.
    kept = MCPError("x", tool_name="first", stderr="its own stderr")
    assert translate(kept, phase="call", server=SERVER, tool_name="second", stderr="other") is kept
    assert (kept.tool_name, kept.stderr) == ("first", "its own stderr")
    usage = UserError("wrong use")
    assert translate(usage, phase="call", server=SERVER, tool_name="t") is usage


async def test_a_cancellation_is_untouched_and_the_real_failure_is_dug_out() -> None:
    cancelled = anyio.get_cancelled_exc_class()()
    assert translate(cancelled, phase="call", server=SERVER) is cancelled
    interrupt = KeyboardInterrupt()
    assert translate(interrupt, phase="call", server=SERVER) is interrupt
    failure = ValueError("the real failure")
    nested = BaseExceptionGroup("outer", [cancelled, BaseExceptionGroup("inner", [cancelled, failure])])
    assert leaves(nested) == [cancelled, cancelled, failure]
    assert root_cause(nested) is failure
    assert str(translate(nested, phase="call", server=SERVER, tool_name="t")).endswith(
        "ValueError: the real failure"
    )
    assert is_cancellation(BaseExceptionGroup("all", [cancelled, cancelled]))
    assert not is_cancellation(nested)
    assert root_cause(BaseExceptionGroup("only", [cancelled])) is cancelled


async def test_secrets_and_url_queries_stay_out_of_the_report_and_its_cause() -> None:
    secret = "s3cret-token-value"
    leaky = ValueError(f"denied for {secret} at https://h.example/mcp?key=abc&x=1")
    error = translate(leaky, phase="call", server=SERVER, tool_name="t", secrets=[secret])
    assert secret not in str(error)
    cause = error.__cause__
    assert isinstance(cause, ValueError) and cause is not leaky
    assert str(cause) == "denied for *** at https://h.example/mcp?…"
    assert cause.__traceback__ is leaky.__traceback__
    # The SDK's error keeps the server's text in attributes too: it is replaced by a plain stand-in.
    sdk_leak = SdkError(-32602, f"bad token {secret}")
    cause = translate(sdk_leak, phase="call", server=SERVER, secrets=[secret]).__cause__
    assert type(cause) is RuntimeError and str(cause) == "MCPError: bad token ***"
    # Nothing to hide: the original is the cause.
    plain = ValueError("nothing secret")
    assert translate(plain, phase="call", server=SERVER, secrets=[secret]).__cause__ is plain


async def test_an_exception_that_cannot_be_copied_is_chained_as_plain_text() -> None:
    class Stubborn(Exception):
        def __copy__(self) -> Stubborn:
            raise TypeError("no copies")

    error = translate(
        Stubborn("key=s3cret-token-value"), phase="call", server=SERVER, secrets=["s3cret-token-value"]
    )
    assert type(error.__cause__) is RuntimeError and str(error.__cause__) == "key=***"


async def test_an_attempt_reports_its_phase_status_and_secrets() -> None:
    attempt = Attempt(tool_name="t", phase="initialize", note="legacy session")
    attempt.add_secrets(["s3cret-token-value"])
    attempt.add_secrets(["s3cret-token-value", "another-secret"])
    assert attempt.secrets == ("s3cret-token-value", "another-secret")
    attempt.http_status, attempt.http_reason = 401, "Unauthorized"
    error = await attempt.error(sdk("http_error"), SERVER)
    assert str(error) == (
        "initializing demo-server (for tool 't') failed (legacy session): the server answered HTTP 401 "
        "Unauthorized (check the headers / auth)"
    )
    leak = await attempt.error(ValueError("header was another-secret"), SERVER)
    assert "another-secret" not in str(leak)


def test_reraise_keeps_the_errors_own_cause() -> None:
    cause = ValueError("why")
    error = MCPError("what")
    error.__cause__ = cause
    with pytest.raises(MCPError) as raised:
        reraise(error)
    assert raised.value is error and raised.value.__cause__ is cause


class EndedProcess:
    """What an `Attempt` reads of a stdio server's process: its stderr tail and its exit code."""

    def __init__(self, stderr: str, returncode: int | None) -> None:
        self.stderr, self.returncode = stderr, returncode
        self.settled: list[bool] = []

    async def stderr_tail(self, *, settled: bool = True) -> str:
        self.settled.append(settled)
        return self.stderr


async def test_an_attempt_tells_how_its_process_ended_and_what_it_printed_without_secrets() -> None:
    process = EndedProcess("Traceback: bad token s3cret-token-value", 3)
    attempt = Attempt(tool_name="t", phase="call", process=process)  # type: ignore[arg-type]
    attempt.add_secrets(["s3cret-token-value"])
    error = await attempt.error(anyio.BrokenResourceError(), SERVER)
    assert isinstance(error, MCPError)
    assert str(error).startswith(
        "calling tool 't' on demo-server failed: BrokenResourceError (exited with code 3)"
    )
    assert error.stderr == "Traceback: bad token ***"
    # Before the session has closed, the tail is what the server printed so far; a running process has no
    # exit code to tell.
    process.returncode = None
    error = await attempt.error(anyio.BrokenResourceError(), SERVER, settled=False)
    assert "exited" not in str(error) and process.settled == [True, False]


# -- the boundary of a request (mcp_errors) ----------------------------------------------------------------


async def test_the_boundary_raises_what_failed_inside_as_one_worded_error() -> None:
    attempt = Attempt(tool_name="echo", phase="call", secrets=("s3cret",))
    with pytest.raises(MCPError) as raised:
        async with mcp_errors(attempt, SERVER):
            raise ExceptionGroup("transport", [SdkError(-32603, "no such row s3cret")])
    assert str(raised.value) == (
        "calling tool 'echo' on demo-server failed: the server returned JSON-RPC error -32603: "
        "no such row ***"
    )
    assert not isinstance(raised.value, RevisionRefused)
    assert raised.value.__suppress_context__, "no 'During handling of ExceptionGroup' in a traceback"
    assert "s3cret" not in str(raised.value.__cause__)


async def test_a_refused_revision_is_its_own_kind_of_mcp_error() -> None:
    with pytest.raises(RevisionRefused, match="JSON-RPC error -32022"):
        async with mcp_errors(Attempt(phase="list"), SERVER):
            raise SdkError(-32022, "Unsupported protocol version")


async def test_a_cancellation_passes_the_boundary_as_it_is() -> None:
    explained: list[BaseException] = []

    async def explain(exc: BaseException) -> tuple[BaseException, bool]:
        explained.append(exc)
        return exc, True

    with anyio.CancelScope() as scope:
        async with mcp_errors(Attempt(), SERVER, explain=explain):
            scope.cancel()
            await anyio.sleep(1)
    assert scope.cancelled_caught and not explained


async def test_the_boundary_reports_what_explain_says_failed() -> None:
    cause = SdkError(*SDK_WORDING["closed"])
    seen: list[BaseException] = []

    async def explain(exc: BaseException) -> tuple[BaseException, bool]:
        seen.append(exc)
        return OSError(5, "Input/output error"), True

    with pytest.raises(MCPError, match=r"starting demo-server failed: OSError: Input/output error$"):
        async with mcp_errors(Attempt(), SERVER, explain=explain):
            raise cause
    assert seen == [cause]
