"""The loaders: list a server's tools (one short session) and return one `AgentTool` per tool.

A loaded list lists its server again on `refresh()` with the same policies, through the same runner
(stateless sessions, or the live connection), and keeps the listing's cache hints (``ttlMs``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import UserError
from .._calls.elicitation import with_defaults
from .._calls.limits import (
    DEFAULT_MAX_DURATION,
    DEFAULT_MAX_RESPONSE_BYTES,
    SAME_AS_SERVER,
    SAME_AS_TIMEOUT,
    Timeouts,
    check_response_bytes,
)
from .._calls.protocol import ProtocolSetting
from .._calls.runner import Stateless
from .._calls.server_logs import server_logs
from .._calls.server_requests import server_requests
from .._configs import Headers, HttpTransport, StderrCallback
from .._connection import MCPConnection
from .._lockfile import DriftPolicy, LockSource, pin
from .._servers import HttpServer, StdioServer
from .building import Lister
from .options import LoadOptions
from .policies import DEFAULT_MAX_CONCURRENCY, ApprovalSetting, Policies, ResultRenderer, RetrySetting
from .toollist import MCPToolList

if TYPE_CHECKING:
    import httpx2
    from mcp.client.session import ElicitationFnT, ListRootsFnT, SamplingFnT
    from mcp.types import LoggingLevel

logger = logging.getLogger("cubepi.mcp")

__all__ = ["load_mcp_tools", "load_mcp_tools_http", "load_mcp_tools_stdio"]


async def load_mcp_tools(
    server: StdioServer | HttpServer | MCPConnection,
    *,
    timeout: float | None = 30.0,
    startup_timeout: float | None = SAME_AS_TIMEOUT,
    max_duration: float | None = DEFAULT_MAX_DURATION,
    max_response_bytes: int | None = SAME_AS_SERVER,
    prespawn: bool = False,
    prefix: str | None = None,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    retries: RetrySetting = 0,
    max_output_chars: int | None = None,
    result_renderer: ResultRenderer | None = None,
    needs_approval: ApprovalSetting = False,
    max_concurrency: int | None = DEFAULT_MAX_CONCURRENCY,
    hidden_arguments: Mapping[str, Any] | None = None,
    elicitation_callback: ElicitationFnT | None = None,
    sampling_callback: SamplingFnT | None = None,
    list_roots_callback: ListRootsFnT | None = None,
    log_level: LoggingLevel | None = None,
    tasks: bool = True,
    resources: bool = False,
    prompts: bool = False,
    page_results: bool | int = False,
    lock: LockSource | None = None,
    on_drift: DriftPolicy = "refuse",
) -> MCPToolList:
    """Connect to `server`, list its tools (following pagination), disconnect; one `AgentTool` per tool.

    Each tool's `execute` opens a fresh session (a new process for stdio), calls, and closes it. Limits, in
    seconds (None: no limit), raise `MCPTimeoutError` naming the phase when exceeded:

    - `timeout` (default 30): every phase: starting the server / connecting plus ``initialize`` or
      ``server/discover``, listing the tools, and a call that hears nothing from the server (each
      progress notification pushes the call's deadline back by `timeout`);
    - `startup_timeout` (default: `timeout`): start-up alone, for servers slow to start (a cold
      ``npx -y`` or ``uvx`` start downloads packages first);
    - `max_duration` (default 600, ten minutes): the hard bound of a call, progress or not.

    `max_response_bytes` (default: the server config's, 64 MiB; None: no limit) bounds one message the
    server sends (a stdio line, an HTTP body, an event of a Streamable HTTP stream): a larger one fails
    the call or the listing with an `MCPError` naming the limit, before it fills the caller's memory.

    The server's protocol is found once, here: ``server/discover`` (the 2026-07-28 revision), else the
    ``initialize`` handshake. On a 2026-07-28 server every call adopts the discover result (a call is one
    request); a handshake-era server gets a fresh initialized session per call. A call that times out or
    is cancelled tells the server so. For an ``"auto"`` HTTP server, the transport found while loading is
    the one the tools use.

    The list's calls share one HTTP client; ``prespawn=True`` (stdio) keeps one spare server started and
    initialized for the next call. `aclose()` (or ``async with``) releases both, and waits for sessions
    still closing; closing is optional (see `MCPToolList`).

    `server` may also be a live connection (``async with server.connect() as conn:``): the tools then call
    over it, never close it, and raise `UserError` once its block has ended.

    Policies (see docs/policies.md): `prefix` (``"web"`` names tools ``web__fetch``; the server still gets
    ``fetch``), `include` / `exclude` (the server's tool names), `retries` (transport failures only, never
    ``isError``; an int applies to tools annotated ``readOnlyHint`` or ``idempotentHint``, a dict
    ``{name: count}`` to the tools it names, a function ``(name, annotations) -> count`` to each tool; a
    retried call can run twice on the server), `max_output_chars` (text cut, with a marker saying how much),
    `result_renderer` (the raw ``CallToolResult`` -> an `AgentToolResult`, content blocks or a str),
    `needs_approval` (True, a predicate on the arguments, or ``"destructive"``: tools not annotated
    read-only or non-destructive) and `max_concurrency` (stateless calls of this list in flight at once,
    default 8; None: no limit) and `hidden_arguments` (``{"user_id": value or function of the call
    context}``: parameters the application sets on every call, out of the model's schema; see
    docs/many-users.md).

    Tools the MCP Apps extension marks app-only (``_meta.ui.visibility`` without ``"model"``) are not in
    the list (what a model is offered) but in `MCPToolList.app_tools`, callable by the application.

    `elicitation_callback` (the SDK's signature) answers a server that asks for input in the middle of a
    call: on a 2026-07-28 server inside the one stateless call (its input-required rounds), on a
    handshake-era server inside the call's session. Without it, such a call comes back as an ``is_error``
    result saying so. `sampling_callback` (the server asks the client's model for a completion) and
    `list_roots_callback` (the server asks for the client's roots) answer the same way, in both eras
    (see docs/many-servers.md).

    `log_level` (``"debug"`` ... ``"emergency"``) asks the server for its log messages at that level or
    above, during the listing and every call, and passes them to the ``cubepi.mcp.server`` logger (a
    2026-07-28 server sends logs only to requests that ask; a handshake-era server may send them anyway).

    `tasks` (default True): on a 2026-07-28 server that offers the tasks extension
    (``io.modelcontextprotocol/tasks``), every call consents to run as a task; `execute` then waits for
    the task (polling it, answering its input, cancelling it when the call ends early) and returns its
    result (see docs/long-running-calls.md). False: calls never consent.

    ``resources=True`` adds tools for the model to read the server's resources (``read_resource``,
    ``list_resources``, one typed tool per resource template) and ``prompts=True`` to get its prompts
    (``list_prompts``, ``get_prompt``); see docs/resources-prompts-instructions.md.

    ``page_results=True`` (or a bound in characters; True: 1,000,000) keeps the text `max_output_chars`
    cuts, per list and oldest dropped first, and adds a ``read_more`` tool: a cut result ends with the
    reference and offset to read on from (see docs/policies.md).
    `lock` (a lockfile written by ``cubepi lock``, see docs/pinning.md) pins the tool definitions: a tool
    that changed since, or is new, is left out (``on_drift="refuse"``, the default), kept with a
    `DriftWarning` (``"warn"``), or kept needing approval on every call (``"approve"``); removed tools are
    warned of. The list's `drift` says what differed (a `ToolChanges`).
    """
    return await load(server, LoadOptions.of(locals()))


async def load(server: StdioServer | HttpServer | MCPConnection, options: LoadOptions) -> MCPToolList:
    """What `load_mcp_tools` does, with its options as one value."""
    policies, timeouts = options.policies(), options.timeouts()
    if isinstance(server, MCPConnection):
        return await _load_over(server, options, policies, timeouts)
    if not isinstance(server, (StdioServer, HttpServer)):
        raise UserError(
            "load_mcp_tools takes a StdioServer or an HttpServer (or a connection from server.connect()), "
            f"got {type(server).__name__}"
        )
    if options.prespawn and server.kind != "stdio":
        raise UserError("prespawn=True applies to stdio servers (an HTTP server has no process to start)")
    if options.max_response_bytes is not SAME_AS_SERVER:
        limit = check_response_bytes(options.max_response_bytes)
        server = dataclasses.replace(server, max_response_bytes=limit)
    server.check_travelled()
    runner = Stateless(
        server,
        timeouts,
        callbacks=_callbacks(options, server.describe()),
        tasks=options.tasks,
        prespawn=options.prespawn,
        max_concurrency=policies.max_concurrency,
    )
    pinned = pin(options.lock, options.on_drift, server) if options.lock is not None else None
    lister = Lister(runner, policies, options.resources, options.prompts, pinned)
    try:
        await runner.shared.home()
        listing = await lister.list(strict=True)  # with prespawn=True, the listing's end starts the spare
    except BaseException:
        await runner.shared.aclose()
        raise
    tools = MCPToolList.from_listing(listing, lister.relist, shared=runner.shared)
    tools.drift = pinned.drift if pinned is not None else None
    return tools


async def _load_over(
    connection: MCPConnection, options: LoadOptions, policies: Policies, timeouts: Timeouts
) -> MCPToolList:
    """A list whose calls go over a live connection (its callbacks and limits are the connection's)."""
    callbacks = (options.elicitation_callback, options.sampling_callback, options.list_roots_callback)
    if any(x is not None for x in (*callbacks, options.log_level)):
        raise UserError(
            "a connection's callbacks and log level go to server.connect(elicitation_callback=..., "
            "sampling_callback=..., list_roots_callback=..., log_level=...)"
        )
    if options.prespawn:
        raise UserError("prespawn=True applies to stateless stdio tools, not to a live connection")
    if options.max_response_bytes is not SAME_AS_SERVER:
        raise UserError("a connection's max_response_bytes goes to its server config")
    # On a connection, calls multiplex over one session: only an explicit max_concurrency limits them.
    limit = None if options.max_concurrency is DEFAULT_MAX_CONCURRENCY else policies.max_concurrency
    pinned = pin(options.lock, options.on_drift, connection.server) if options.lock is not None else None
    lister = Lister(connection.runner(timeouts, limit), policies, options.resources, options.prompts, pinned)
    loaded = await connection.load(lister)
    loaded.drift = pinned.drift if pinned is not None else None
    return loaded


def _callbacks(options: LoadOptions, server: str) -> dict[str, Any]:
    """The session keywords of what a server may ask or say mid-call (elicitation, sampling, roots, logs)."""
    callbacks: dict[str, Any] = {}
    if options.elicitation_callback is not None:
        if not callable(options.elicitation_callback):
            raise UserError("elicitation_callback must be an async function (context, params) -> result")
        callbacks["elicitation_callback"] = with_defaults(options.elicitation_callback)
    callbacks.update(
        server_requests(
            sampling_callback=options.sampling_callback, list_roots_callback=options.list_roots_callback
        )
    )
    if options.log_level is not None:
        callbacks.update(log_level=options.log_level, logging_callback=server_logs(server))
    return callbacks


async def load_mcp_tools_stdio(
    command: str,
    args: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    inherit_env: bool = False,
    on_stderr: StderrCallback | None = None,
    protocol: ProtocolSetting = "auto",
    timeout: float | None = 30.0,
    startup_timeout: float | None = SAME_AS_TIMEOUT,
    max_duration: float | None = DEFAULT_MAX_DURATION,
    max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
    prespawn: bool = False,
    prefix: str | None = None,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    retries: RetrySetting = 0,
    max_output_chars: int | None = None,
    result_renderer: ResultRenderer | None = None,
    needs_approval: ApprovalSetting = False,
    max_concurrency: int | None = DEFAULT_MAX_CONCURRENCY,
    hidden_arguments: Mapping[str, Any] | None = None,
    elicitation_callback: ElicitationFnT | None = None,
    sampling_callback: SamplingFnT | None = None,
    list_roots_callback: ListRootsFnT | None = None,
    log_level: LoggingLevel | None = None,
    tasks: bool = True,
    resources: bool = False,
    prompts: bool = False,
    page_results: bool | int = False,
    lock: LockSource | None = None,
    on_drift: DriftPolicy = "refuse",
) -> MCPToolList:
    """Load the tools of a stdio MCP server started as ``command args...``.

    The server gets the MCP SDK's safe default environment (``PATH``, ``HOME``, ...), the parent's proxy,
    CA-bundle, locale and ``TMPDIR`` variables (`cubepi.mcp.ENV_PASSTHROUGH`), then `env`; never the whole
    parent environment unless ``inherit_env=True``. `command` is looked up on that ``PATH`` as a shell
    would (``npx.cmd`` on Windows). What the server prints on stderr is kept for error messages (the last
    16 KiB); `on_stderr` also gets it line by line (called in the event loop; exceptions are logged).
    ``prespawn=True`` keeps one spare server process started and initialized, so a call does not wait
    for the server to start (each call still gets a process no earlier call used). Policies as for
    `load_mcp_tools`.
    """
    options = LoadOptions.of({**locals(), "max_response_bytes": SAME_AS_SERVER})  # the server's, below
    return await load(
        StdioServer(
            command,
            tuple(args or ()),
            env=env,
            cwd=cwd,
            inherit_env=inherit_env,
            on_stderr=on_stderr,
            protocol=protocol,
            max_response_bytes=max_response_bytes,
        ),
        options,
    )


async def load_mcp_tools_http(
    server_url: str,
    *,
    headers: Headers | None = None,
    auth: httpx2.Auth | None = None,
    transport: HttpTransport = "auto",
    protocol: ProtocolSetting = "auto",
    timeout: float | None = 30.0,
    startup_timeout: float | None = SAME_AS_TIMEOUT,
    max_duration: float | None = DEFAULT_MAX_DURATION,
    max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
    prefix: str | None = None,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    retries: RetrySetting = 0,
    max_output_chars: int | None = None,
    result_renderer: ResultRenderer | None = None,
    needs_approval: ApprovalSetting = False,
    max_concurrency: int | None = DEFAULT_MAX_CONCURRENCY,
    hidden_arguments: Mapping[str, Any] | None = None,
    elicitation_callback: ElicitationFnT | None = None,
    sampling_callback: SamplingFnT | None = None,
    list_roots_callback: ListRootsFnT | None = None,
    log_level: LoggingLevel | None = None,
    tasks: bool = True,
    resources: bool = False,
    prompts: bool = False,
    page_results: bool | int = False,
    lock: LockSource | None = None,
    on_drift: DriftPolicy = "refuse",
) -> MCPToolList:
    """Load the tools of an MCP server over HTTP: ``"streamable-http"``, ``"sse"`` or ``"auto"``.

    ``"auto"`` tries Streamable HTTP and falls back to SSE when its first POST gets a 4xx. `headers`
    (for example ``{"Authorization": "Bearer ..."}``) and `auth` (any `httpx2.Auth`) go on every request;
    `headers` may be a callable (sync or async) returning fresh headers, called once per connection.
    Timeouts and policies as for `load_mcp_tools`.
    """
    options = LoadOptions.of({**locals(), "max_response_bytes": SAME_AS_SERVER})  # the server's, below
    return await load(
        HttpServer(
            server_url,
            headers=headers,
            auth=auth,
            transport=transport,
            protocol=protocol,
            max_response_bytes=max_response_bytes,
        ),
        options,
    )
