"""From what the SDK and its task groups raise to one readable `MCPError`.

The SDK runs every transport in anyio task groups, so a dead server surfaces as nested exception groups.
`Attempt` keeps what an error report needs of one session (phase reached, stderr tail, exit code, HTTP
status, the user's secrets); `translate` digs out the root cause and words it, naming the phase, the tool
and the server, with every secret redacted. `mcp_errors` is the boundary where a request's exceptions
become cubepi errors (in the manner of httpx's `map_httpcore_exceptions`): the runner's two paths and a
connection's calls each run inside it.

Errors are classified by type and JSON-RPC code. Where the SDK tells a transport event apart from a
server's answer only by its text (`SDK_WORDING`), the wording is pinned by tests/mcp/test_sdk_wording.py,
so an SDK release that rewords one fails the suite instead of changing cubepi's errors.
"""

from __future__ import annotations

import copy
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio

from ..errors import CubepiError, MCPError, MCPTimeoutError
from ._calls.limits import Phase, ResponseTooLarge, sse_limit_hit
from ._redact import redact

if TYPE_CHECKING:
    from mcp import types as mcp_types

    from ._transports.base import ServerProcess

__all__ = [
    "SDK_WORDING",
    "Attempt",
    "RevisionRefused",
    "error_result",
    "is_cancellation",
    "leaves",
    "mcp_errors",
    "reraise",
    "root_cause",
    "said",
    "translate",
]

CONNECTION_CLOSED = -32000
UNSUPPORTED_PROTOCOL_VERSION = -32022
# The errors the SDK makes up for transport events (not errors a server chose to send): exact texts, and
# the prefixes of texts that carry details.
SDK_WORDING = {
    "closed": (CONNECTION_CLOSED, "Connection closed"),
    "terminated": (-32600, "Session terminated"),  # an HTTP 404 once a session exists
    "http_error": (-32603, "Server returned an error response"),  # any other HTTP error status
    "not_found": (-32601, "Not Found"),  # an HTTP 404 before a session exists
    "accepted": (-32600, "server answered a request with 202 Accepted"),
}
SDK_PREFIXES = {
    "redirect": (-32600, "Redirect to "),
    "sse": (CONNECTION_CLOSED, "SSE stream "),
    "content_type": (-32600, "Unexpected content type: "),  # an answer neither JSON nor an event stream
    "json": (-32700, "Failed to parse JSON response: "),
    "sse_message": (-32700, "Failed to parse SSE message: "),
}
_EXACT = frozenset(SDK_WORDING.values())


def leaves(exc: BaseException) -> list[BaseException]:
    """The non-group exceptions inside `exc` (itself when it is not a group), depth first."""
    subs = getattr(exc, "exceptions", None)
    if isinstance(subs, tuple) and subs and all(isinstance(sub, BaseException) for sub in subs):
        return [leaf for sub in subs for leaf in leaves(sub)]
    return [exc]


def is_cancellation(exc: BaseException) -> bool:
    """True when `exc` is (a group made only of) the backend's cancellation exception."""
    cancelled = anyio.get_cancelled_exc_class()
    return all(isinstance(leaf, cancelled) for leaf in leaves(exc))


def root_cause(exc: BaseException) -> BaseException:
    """The first leaf that is not a cancellation (cubepi's own errors first): what actually went wrong."""
    found = leaves(exc)
    cancelled = anyio.get_cancelled_exc_class()
    return next(
        (leaf for leaf in found if isinstance(leaf, CubepiError)),
        next((leaf for leaf in found if not isinstance(leaf, cancelled)), found[0]),
    )


def sdk_code(exc: BaseException) -> int | None:
    """The JSON-RPC code of an SDK `MCPError` (not cubepi's own), else None."""
    code = getattr(getattr(exc, "error", None), "code", None)
    return code if isinstance(code, int) and type(exc).__module__.startswith("mcp.") else None


def is_transport_error(exc: BaseException) -> bool:
    """An SDK error the SDK made up for a transport event (connection gone, HTTP status, redirect)."""
    code = sdk_code(exc)
    if code is None:
        return False
    message = str(getattr(exc, "message", exc))
    return (code, message) in _EXACT or any(
        code == known and message.startswith(prefix) for known, prefix in SDK_PREFIXES.values()
    )


def is_connection_closed(exc: BaseException) -> bool:
    """The SDK's own "Connection closed" (not a server's error that happens to share its code)."""
    return (sdk_code(exc), getattr(exc, "message", None)) == SDK_WORDING["closed"]


def is_lost(exc: BaseException) -> bool:
    """The connection went away under the request (the SDK's "Connection closed", a broken stream)."""
    if is_transport_error(exc) and sdk_code(exc) == CONNECTION_CLOSED:
        return True
    return isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream))


@dataclass
class Attempt:
    """Book-keeping of one session for its error report: the phase reached, what the server printed and
    answered, and what the user gave that must never be printed (`secrets`)."""

    tool_name: str | None = None
    phase: Phase = "startup"
    note: str | None = None  # context, e.g. how the Streamable HTTP attempt failed before SSE
    process: ServerProcess | None = None  # a stdio server's process: its stderr tail and exit code
    secrets: tuple[str, ...] = ()
    http_status: int | None = None  # the last HTTP error (or redirect) status of the MCP endpoint
    http_reason: str = ""
    forced_revision: str | None = None  # the revision `protocol=` pins, for the error's hint
    # Told of a start-up timeout as soon as it happens (before the transport has closed).
    on_timeout: Callable[[MCPTimeoutError], None] | None = field(default=None, repr=False)

    def add_secrets(self, values: Iterable[str]) -> None:
        found = tuple(value for value in values if value not in self.secrets)
        if found:
            self.secrets = (*self.secrets, *found)

    async def error(self, exc: BaseException, server: str, *, settled: bool = True) -> BaseException:
        """`exc` as the readable error to raise in its place; `settled`: the session has closed (else the
        stderr tail is what the server printed so far)."""
        stderr = exit_code = None
        if self.process is not None:
            stderr = redact(await self.process.stderr_tail(settled=settled), self.secrets) or None
            exit_code = self.process.returncode
        return translate(
            exc,
            phase=self.phase,
            server=server,
            tool_name=self.tool_name,
            stderr=stderr,
            note=self.note,
            exit_code=exit_code,
            http_status=(self.http_status, self.http_reason) if self.http_status else None,
            secrets=self.secrets,
            forced_revision=self.forced_revision,
        )


class RevisionRefused(MCPError):
    """The server refused the protocol revision of the request (JSON-RPC -32022): a server whose
    protocol changed since the load, which the runner may send the request to once more."""


Explain: TypeAlias = Callable[[BaseException], Awaitable[tuple[BaseException, bool]]]


@asynccontextmanager
async def mcp_errors(attempt: Attempt, server: str, *, explain: Explain | None = None) -> AsyncIterator[None]:
    """The boundary of a request: what the SDK and the transports raise inside leaves it as the readable
    cubepi error `attempt` words (`translate`); a cancellation passes through as it is. `explain` (the
    runner's, for a leased session) says what to report for an exception, and whether the session has
    closed (its stderr tail is then whole)."""
    try:
        yield
    except BaseException as exc:
        if is_cancellation(exc):
            raise
        failure, settled = (exc, True) if explain is None else await explain(exc)
        reraise(await attempt.error(failure, server, settled=settled))


def _http_status(exc: BaseException) -> int | None:
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


_STATUS_HINTS = {
    401: " (check the headers / auth)",
    403: " (check the headers / auth)",
    404: " (no MCP endpoint there, or the session expired)",
}
_REDIRECT_HINT = " (a redirect to another origin is not followed: use the URL it names, if it is the server)"


def describe_failure(exc: BaseException, http_status: tuple[int, str] | None = None) -> str:
    """A short, secret-free account of a transport failure (no URLs: they may carry query tokens).

    `http_status` is the status and reason the MCP endpoint answered, when the SDK turned it into a
    JSON-RPC error.
    """
    transport = is_transport_error(exc)
    too_large = exc if isinstance(exc, ResponseTooLarge) else None
    if too_large is None and transport:
        too_large = sse_limit_hit(str(getattr(exc, "message", "")))
    if too_large is not None:
        return str(too_large)
    status = _http_status(exc)
    reason = getattr(getattr(exc, "response", None), "reason_phrase", "") or ""
    if status is None and http_status and transport and not is_connection_closed(exc):
        status, reason = http_status
    if status is not None:
        hint = _REDIRECT_HINT if 300 <= status < 400 else _STATUS_HINTS.get(status, "")
        return f"the server answered HTTP {status} {reason}".rstrip() + hint
    code = sdk_code(exc)
    if transport:
        if is_connection_closed(exc):
            return "the server closed the connection"
        if code == CONNECTION_CLOSED:
            return f"the server's response broke off: {exc}"
        if code == -32700 or str(exc).startswith(SDK_PREFIXES["content_type"][1]):
            return f"the server sent a malformed answer: {exc}"
        if (code, str(exc)) == SDK_WORDING["accepted"]:
            return "the server answered a request with 202 Accepted: no answer follows"
        return f"the server answered with an HTTP error ({exc})"
    if code is not None:
        return f"the server returned JSON-RPC error {code}: {exc}"
    if type(exc).__module__.startswith("mcp.") and "ValidationError" in type(exc).__name__:
        return f"the server sent a malformed message: {exc}"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    text = str(exc)
    if type(exc).__module__.startswith(("httpx", "httpcore")) and "://" in text:
        text = ""  # httpx quotes the whole URL, query included
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_PHASE_WORDS = {
    "startup": "starting",
    "initialize": "initializing",
    "list": "listing the tools of",
    "call": "calling",
    "close": "closing",
}


def translate(
    exc: BaseException,
    *,
    phase: str,
    server: str,
    tool_name: str | None = None,
    stderr: str | None = None,
    note: str | None = None,
    exit_code: int | None = None,
    http_status: tuple[int, str] | None = None,
    secrets: Iterable[str] = (),
    forced_revision: str | None = None,
) -> BaseException:
    """The exception to raise in place of `exc`: its root cause as an `MCPError` (cubepi errors as-is).

    `exit_code` (a stdio server's, once it has ended) is told when the connection was lost; `secrets` are
    redacted from what the server sent; `forced_revision` (what ``protocol=`` pins) is named when the
    server refused or garbled an answer, since a server of the other era does.
    """
    root = root_cause(exc)
    if isinstance(root, CubepiError):
        if isinstance(root, MCPError):
            root.stderr = root.stderr or stderr
            root.tool_name = root.tool_name or tool_name
        return root
    if not isinstance(root, Exception):  # KeyboardInterrupt, SystemExit, cancellation: untouched
        return root
    what = _PHASE_WORDS.get(phase, phase)
    if phase == "call" and tool_name:
        action = f"calling tool {tool_name!r} on {server}"
    elif tool_name:
        action = f"{what} {server} (for tool {tool_name!r})"
    else:
        action = f"{what} {server}"
    failure = redact(describe_failure(root, http_status), secrets)
    if exit_code is not None and is_lost(root):
        failure += (
            f" (exited with code {exit_code})" if exit_code >= 0 else f" (killed by signal {-exit_code})"
        )
    if forced_revision and _from_server(root):
        failure += (
            f"; the server may not speak protocol revision {forced_revision}, which "
            f"protocol={forced_revision!r} forces: protocol='auto' finds out which revision it speaks"
        )
    context = f" ({note})" if note else ""
    kind = RevisionRefused if sdk_code(root) == UNSUPPORTED_PROTOCOL_VERSION else MCPError
    error = kind(f"{action} failed{context}: {failure}", tool_name=tool_name, server=server, stderr=stderr)
    error.__cause__ = _cleaned(root, secrets)
    return error


def _from_server(exc: BaseException) -> bool:
    """A JSON-RPC error the server chose to send, or an answer of the wrong shape."""
    if sdk_code(exc) is not None:
        return not is_transport_error(exc)
    return "ValidationError" in type(exc).__name__


_URL_QUERY = re.compile(r"(https?://[^\s?#'\"<>]*)\?[^\s#'\"<>]*")


def _cleaned(exc: BaseException, secrets: Iterable[str]) -> BaseException:
    """`exc`, or a stand-in whose message shows URLs without their query string (where tokens go) and
    none of `secrets`: the raised error chains it, and a traceback prints it. An SDK error keeps the
    server's text in attributes too (``error.message``): it is replaced by a plain copy."""
    text = str(exc)
    cleaned = redact(_URL_QUERY.sub(r"\1?…", text), secrets)
    if cleaned == text:
        return exc
    if type(exc).__module__.startswith("mcp."):
        return RuntimeError(f"{type(exc).__name__}: {cleaned}")
    try:
        clone = copy.copy(exc)
        clone.args = (cleaned,)
    except Exception:  # an exception type that cannot be copied: keep the chain, drop this link
        return RuntimeError(cleaned)
    clone.__traceback__ = exc.__traceback__
    clone.__cause__ = None
    clone.__suppress_context__ = True
    return clone


def error_result(text: str, **fields: Any) -> mcp_types.CallToolResult:
    """The ``isError`` result a model reads in place of what failed on the server's side (a JSON-RPC error
    it sent, a task that failed or was cancelled): a failure the server reports is never raised."""
    from mcp import types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True, **fields)


def said(message: str | None) -> str:
    """``": message"``, or nothing when the server gave none."""
    return f": {message}" if message else ""


def reraise(exc: BaseException) -> Any:
    """Raise `exc` without "During handling of ... ExceptionGroup" noise, keeping its own cause."""
    raise exc from exc.__cause__
