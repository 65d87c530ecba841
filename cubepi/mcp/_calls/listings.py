"""A session's listings: every page of a paginated list (tools, resources, templates, prompts), within the
list timeout, and the usable tools of a ``tools/list``."""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import MCPError
from .._transports.http import recording
from .limits import timeout_error

if TYPE_CHECKING:
    from mcp import types as mcp_types

    from .session import Session

__all__ = ["list_pages", "list_tools"]

logger = logging.getLogger("cubepi.mcp")


async def list_tools(session: Session) -> tuple[list[mcp_types.Tool], int | None]:
    """Every tool the server lists (`list_pages`), and the shortest ``ttlMs`` of its pages (2026-07-28;
    None: none given). A tool without a name, or with the name of an earlier one, is skipped with a
    warning."""
    ttl: int | None = None

    def keep_ttl(page: mcp_types.ListToolsResult) -> None:
        nonlocal ttl
        if session.protocol.stateless:
            given = page.ttl_ms if "ttl_ms" in page.model_fields_set else 0
            ttl = given if ttl is None else min(ttl, given)

    tools = await list_pages(session, "list_tools", "tools", on_page=keep_ttl)
    return _usable(tools, session.server), ttl


async def list_pages(
    session: Session, method: str, field: str, *, on_page: Callable[[Any], None] | None = None
) -> list[Any]:
    """Every item of a paginated listing (the client's `method`, the pages' `field`), following
    ``nextCursor`` to the end within the list timeout; a repeated cursor is an error."""
    from mcp import types

    timeouts, server = session.timeouts, session.server
    items: list[Any] = []
    seen: set[str] = set()
    cursor: str | None = None
    session.attempt.phase = "list"
    limit = timeouts.list
    deadline = session.deadline(math.inf if limit is None else limit, math.inf)
    with deadline.scope, recording(session.attempt, session.headers, session.auth):
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            request = functools.partial(getattr(session.client, method), params=params)
            page = await (deadline.run(request) if deadline.watching else request())
            items.extend(getattr(page, field))
            if on_page is not None:
                on_page(page)
            cursor = page.next_cursor
            if not cursor:
                return items
            if cursor in seen:
                noun = field.replace("_", " ")
                raise MCPError(
                    f"listing the {noun} of {server} failed: the server repeated the pagination cursor "
                    f"{cursor[:40]!r} after {len(items)} {noun}",
                    server=server,
                )
            seen.add(cursor)
    missed = deadline.missed_start()
    if missed is not None:
        raise timeout_error(timeouts, server, "startup", missed)
    assert limit is not None
    raise timeout_error(timeouts, server, "list", limit)


def _usable(tools: list[mcp_types.Tool], server: str) -> list[mcp_types.Tool]:
    usable: list[mcp_types.Tool] = []
    names: set[str] = set()
    for tool in tools:
        if not tool.name:
            logger.warning("skipping a tool without a name listed by %s", server)
        elif tool.name in names:
            logger.warning(
                "skipping a second tool named %r listed by %s (keeping the first)", tool.name, server
            )
        else:
            names.add(tool.name)
            usable.append(tool)
    return usable
