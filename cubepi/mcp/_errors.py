"""From what the SDK and its task groups raise to one readable `MCPError`.

The SDK runs every transport in anyio task groups, so a dead server surfaces as nested exception groups
("unhandled errors in a TaskGroup"). `root_cause` digs out the exception that started it; `translate`
turns it into an `MCPError` naming the phase, the tool and the server, chained to that root cause.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

import anyio

from ..errors import CubepiError, MCPError
from ._limits import ResponseTooLarge, sse_limit_hit
from ._redact import redact

__all__ = ["describe_failure", "is_cancellation", "leaves", "root_cause", "translate"]

# Errors the SDK itself synthesises for transport events (not errors a server chose to send).
_CONNECTION_CLOSED = -32000
_SYNTHESISED = {
    (-32000, "Connection closed"),
    (-32600, "Session terminated"),  # an HTTP 404 once a session exists
    (-32603, "Server returned an error response"),  # any other HTTP error status
    (-32601, "Not Found"),  # an HTTP 404 before a session exists
    (-32600, "server answered a request with 202 Accepted"),
}


def leaves(exc: BaseException) -> list[BaseException]:
    """The non-group exceptions inside `exc` (itself when it is not a group), depth first."""
    subs = getattr(exc, "exceptions", None)
    if isinstance(subs, tuple) and subs and all(isinstance(sub, BaseException) for sub in subs):
        found: list[BaseException] = []
        for sub in subs:
            found.extend(leaves(sub))
        return found
    return [exc]


def is_cancellation(exc: BaseException) -> bool:
    """True when `exc` is (a group made only of) the backend's cancellation exception."""
    cancelled = anyio.get_cancelled_exc_class()
    return all(isinstance(leaf, cancelled) for leaf in leaves(exc))


def root_cause(exc: BaseException) -> BaseException:
    """The first leaf that is not a cancellation (cubepi's own errors first): what actually went wrong."""
    found = leaves(exc)
    cancelled = anyio.get_cancelled_exc_class()
    for leaf in found:
        if isinstance(leaf, CubepiError):
            return leaf
    for leaf in found:
        if not isinstance(leaf, cancelled):
            return leaf
    return found[0]


def sdk_error_code(exc: BaseException) -> int | None:
    """The JSON-RPC code of an SDK `MCPError` (not cubepi's own), else None."""
    error = getattr(exc, "error", None)
    code = getattr(error, "code", None)
    return code if isinstance(code, int) and type(exc).__module__.startswith("mcp.") else None


def is_transport_mcp_error(exc: BaseException) -> bool:
    """An SDK `MCPError` the SDK made up for a transport event (connection gone, HTTP error status, a
    redirect it did not follow)."""
    code = sdk_error_code(exc)
    message = getattr(exc, "message", str(exc))
    return code is not None and (
        (code, message) in _SYNTHESISED
        or (code == -32600 and message.startswith("Redirect to "))
        or (code == _CONNECTION_CLOSED and message.startswith("SSE stream "))
    )


def is_connection_closed(exc: BaseException) -> bool:
    """The SDK's own "Connection closed" (not a server's error that happens to share its code)."""
    return sdk_error_code(exc) == _CONNECTION_CLOSED and getattr(exc, "message", None) == "Connection closed"


def _http_status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def describe_failure(exc: BaseException, http_status: tuple[int, str] | None = None) -> str:
    """A short, secret-free account of a transport failure (no URLs: they may carry query tokens).

    `http_status` is the HTTP status and reason the server answered, when the SDK turned it into a
    JSON-RPC error.
    """
    too_large = exc if isinstance(exc, ResponseTooLarge) else None
    if too_large is None and is_transport_mcp_error(exc):
        too_large = sse_limit_hit(str(getattr(exc, "message", "")))
    if too_large is not None:
        return str(too_large)
    status = _http_status(exc)
    reason = getattr(getattr(exc, "response", None), "reason_phrase", "") or ""
    if status is None and http_status and is_transport_mcp_error(exc) and not is_connection_closed(exc):
        status, reason = http_status
    if status is not None:
        hint = ""
        if status in (401, 403):
            hint = " (check the headers / auth)"
        elif status == 404:
            hint = " (no MCP endpoint there, or the session expired)"
        elif 300 <= status < 400:
            hint = (
                " (a redirect to another origin is not followed: use the URL it names, if it is the server)"
            )
        return f"the server answered HTTP {status} {reason}".rstrip() + hint
    if is_transport_mcp_error(exc):
        if is_connection_closed(exc):
            return "the server closed the connection"
        if sdk_error_code(exc) == _CONNECTION_CLOSED:
            return f"the server's response broke off: {exc}"
        return f"the server answered with an HTTP error ({exc})"
    code = sdk_error_code(exc)
    if code is not None:
        return f"the server returned JSON-RPC error {code}: {exc}"
    if type(exc).__module__.startswith("mcp.") and "ValidationError" in type(exc).__name__:
        return f"the server sent a malformed message: {exc}"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    module = type(exc).__module__
    if module.startswith(("httpx", "httpcore")):  # httpx2, httpcore2 too
        text = str(exc)
        return f"{type(exc).__name__}" + (f": {text}" if text and "://" not in text else "")
    text = str(exc)
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

    `exit_code` (a stdio server's, once it has ended) is told when the connection was lost. `secrets`
    (what the user gave: header values, tokens, env values) are redacted from what the server sent.
    `forced_revision` (the revision ``protocol=`` pins) is named when the server refused or garbled an
    answer, since a server of the other era does.
    """
    root = root_cause(exc)
    if isinstance(root, CubepiError):
        if isinstance(root, MCPError):
            if root.stderr is None and stderr:
                root.stderr = stderr
            if root.tool_name is None:
                root.tool_name = tool_name
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
    context = f" ({note})" if note else ""
    failure = redact(describe_failure(root, http_status), secrets)
    if exit_code is not None and _is_connection_lost(root):
        ended = f"exited with code {exit_code}" if exit_code >= 0 else f"killed by signal {-exit_code}"
        failure += f" ({ended})"
    if forced_revision and _from_server(root):
        failure += (
            f"; the server may not speak protocol revision {forced_revision}, which "
            f"protocol={forced_revision!r} forces: protocol='auto' finds out which revision it speaks"
        )
    error = MCPError(
        f"{action} failed{context}: {failure}",
        tool_name=tool_name,
        server=server,
        stderr=stderr,
    )
    error.__cause__ = _cleaned(root, secrets)
    return error


def _from_server(exc: BaseException) -> bool:
    """A JSON-RPC error the server chose to send, or an answer of the wrong shape."""
    from pydantic import ValidationError

    if sdk_error_code(exc) is not None:
        return not is_transport_mcp_error(exc)
    return isinstance(exc, ValidationError) or "ValidationError" in type(exc).__name__


def _is_connection_lost(exc: BaseException) -> bool:
    if is_transport_mcp_error(exc) and sdk_error_code(exc) == _CONNECTION_CLOSED:
        return True
    return isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream))


_URL_QUERY = re.compile(r"(https?://[^\s?#'\"<>]*)\?[^\s#'\"<>]*")


def _cleaned(exc: BaseException, secrets: Iterable[str]) -> BaseException:
    """`exc`, or a stand-in whose message shows URLs without their query string (where tokens go) and
    none of `secrets`.

    httpx puts the full request URL in its messages, and a server's text (a JSON-RPC error message) may
    quote a secret; the error cubepi raises chains this exception, and a traceback prints it. An SDK error
    keeps the server's text in attributes too (``error.message``): it is replaced by a plain copy.
    """
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


def reraise(exc: BaseException) -> Any:
    """Raise `exc` without "During handling of ... ExceptionGroup" noise, keeping its own cause."""
    raise exc from exc.__cause__
