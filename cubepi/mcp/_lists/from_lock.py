"""`load_mcp_tools_from_lock`: a tool list built from a lockfile alone, with no listing at start-up."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from ...errors import UserError
from .._calls.limits import DEFAULT_MAX_DURATION, SAME_AS_TIMEOUT
from .._calls.runner import Stateless
from .._lockfile import LockedServer, LockSource, learned_of, locked_settings, read_lock
from .._servers import HttpServer, Server, StdioServer
from .building import Lister
from .from_config import _ConfigToolList
from .options import LoadOptions
from .policies import DEFAULT_MAX_CONCURRENCY, ApprovalSetting, ResultRenderer, RetrySetting
from .toollist import MCPToolList

__all__ = ["load_mcp_tools_from_lock", "locked_server"]


def locked_server(entry: LockedServer) -> Server:
    """The server config a lockfile entry describes, its ``${NAME}`` references read from the environment."""
    kind, settings = locked_settings(entry)
    try:
        return HttpServer(**settings) if kind == "http" else StdioServer(**settings)
    except TypeError as exc:
        raise UserError(f"server {entry.name!r} of the lockfile has a malformed config ({exc})") from exc


async def load_mcp_tools_from_lock(
    lock: LockSource,
    *,
    timeout: float | None = 30.0,
    startup_timeout: float | None = SAME_AS_TIMEOUT,
    max_duration: float | None = DEFAULT_MAX_DURATION,
    prefix: str | None = None,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    retries: RetrySetting = 0,
    max_output_chars: int | None = None,
    result_renderer: ResultRenderer | None = None,
    needs_approval: ApprovalSetting = False,
    max_concurrency: int | None = DEFAULT_MAX_CONCURRENCY,
    tasks: bool = True,
) -> MCPToolList:
    """The tools pinned in a lockfile (written by ``cubepi lock``), built from it alone: nothing is sent
    to a server until a tool is called, and the first call sends what any call sends (the protocol and
    transport found when the lockfile was written are adopted, as a load would have learned them).

    ``${NAME}`` references of the lockfile (env and header values) are read from the environment now.
    With several servers, each server's tools are named ``<server>__<tool>`` (a `prefix` is then not
    allowed). Policies mean what they mean for `load_mcp_tools`; `refresh()` lists the servers again.
    """
    options = LoadOptions.of(locals())
    entries = read_lock(lock)
    if len(entries) > 1 and prefix is not None:
        raise UserError("a lockfile of several servers names tools <server>__<tool>; drop prefix=")
    timeouts = options.timeouts()
    lists: dict[str, MCPToolList] = {}
    for entry in entries:
        named = dataclasses.replace(options, prefix=entry.name) if len(entries) > 1 else options
        policies = named.policies()
        server = locked_server(entry)
        runner = Stateless(
            server, timeouts, tasks=tasks, max_concurrency=policies.max_concurrency, learned=learned_of(entry)
        )
        lister = Lister(runner, policies)
        definitions: list[Any] = [item["definition"] for item in entry.tools.values()]
        listing = lister.build(definitions, strict=len(entries) == 1)
        lists[entry.name] = MCPToolList.from_listing(listing, lister.relist, shared=runner.shared)
    return next(iter(lists.values())) if len(lists) == 1 else _ConfigToolList(lists)
