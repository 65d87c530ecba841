"""An MCPServer whose tool list changes: tools that add, remove and redefine other tools.

Run: ``python changing.py`` (stdio) or ``python changing.py http`` (Streamable HTTP on ``PORT``, at ``/mcp``).

- ``add_tool(name, description)`` adds a tool ``name`` (it echoes its ``text``), or redefines it when it
  exists; ``remove_tool(name)`` removes it. Both then say the list changed:
  ``notifications/tools/list_changed`` on the call's own stream (handshake era) and a ``ToolsListChanged``
  event for ``subscriptions/listen`` streams (2026-07-28).
- The added tools are kept in the JSON file ``STATE`` (when set), so that a fresh stdio process (a stateless
  call) sees the tools an earlier one added.
- ``TTL_MS`` (and ``SCOPE``, default ``private``) set the cache hints of ``tools/list`` results (2026-07-28).
- Faults, on demand (their tools exist when ``FAULTS`` is set): ``drop_listen(hidden, then)`` adds the
  tool ``hidden`` (when given) without saying so, then ends every open ``subscriptions/listen`` stream with
  an error (an abrupt drop), and the next ``then`` streams too, right after acknowledging them;
  ``listens()`` counts the listen streams acknowledged; ``fail_listing(times)`` makes the next ``times``
  ``tools/list`` requests fail. ``NO_LISTEN`` set: no ``subscriptions/listen`` (so no ``tools.listChanged``
  on 2026-07-28); ``HOLD_LISTEN`` set: listen streams are acknowledged only once ``release_listen()`` ran.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

STATE = Path(os.environ["STATE"]) if os.environ.get("STATE") else None
TTL_MS = os.environ.get("TTL_MS")
hints = (
    {"tools/list": CacheHint(ttl_ms=int(TTL_MS), scope=os.environ.get("SCOPE", "private"))}  # type: ignore[arg-type]
    if TTL_MS
    else None
)

server = MCPServer(
    "changing",
    log_level="WARNING",
    cache_hints=hints,
    subscriptions=False if os.environ.get("NO_LISTEN") else None,
)


class Faults:
    """The faults asked for: listen streams to drop (the open ones, then new ones), listings to fail."""

    def __init__(self) -> None:
        self.drop = anyio.Event()  # set: the open listen streams end abruptly
        self.drop_next = 0
        self.fail_listing = 0
        self.listens = 0
        self.released = anyio.Event()
        if not os.environ.get("HOLD_LISTEN"):
            self.released.set()


faults = Faults()


class _Acknowledging:
    """A listen handler's session that sets `acknowledged` once the handler has acknowledged its stream."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.acknowledged = anyio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    async def send_notification(self, notification: Any, *args: Any, **kwargs: Any) -> None:
        await self._session.send_notification(notification, *args, **kwargs)
        if isinstance(notification, types.SubscriptionsAcknowledgedNotification):
            self.acknowledged.set()


async def _faulty(ctx: Any, call_next: Any) -> Any:
    """Serve `subscriptions/listen` and `tools/list` with the faults asked for."""
    if ctx.method == "tools/list" and faults.fail_listing:
        faults.fail_listing -= 1
        raise MCPError(types.INTERNAL_ERROR, "the listing is broken")
    if ctx.method != "subscriptions/listen":
        return await call_next(ctx)
    await faults.released.wait()
    drop = faults.drop
    if faults.drop_next:
        faults.drop_next -= 1
        drop.set()
    session = _Acknowledging(ctx.session)
    result, dropped = None, False
    async with anyio.create_task_group() as group:

        async def serve() -> None:
            nonlocal result
            result = await call_next(dataclasses.replace(ctx, session=session))
            group.cancel_scope.cancel()

        group.start_soon(serve)
        await session.acknowledged.wait()
        faults.listens += 1
        await drop.wait()
        dropped = True
        group.cancel_scope.cancel()
    if dropped:
        raise MCPError(types.INTERNAL_ERROR, "the listen stream dropped")
    return result


server.middleware.append(_faulty)


def _added() -> dict[str, str]:
    if STATE is None or not STATE.exists():
        return {}
    return dict(json.loads(STATE.read_text()))


def _save(added: dict[str, str]) -> None:
    if STATE is not None:
        STATE.write_text(json.dumps(added))


def _install(name: str, description: str) -> None:
    def echo(text: str = "") -> str:
        return f"{name}: {text}"

    server.add_tool(echo, name=name, description=description)


async def _changed(ctx: Context[Any, Any]) -> None:
    await ctx.session.send_notification(
        types.ToolListChangedNotification(), related_request_id=ctx.request_id
    )
    await ctx.notify_tools_changed()


@server.tool()
def stable(text: str) -> str:
    """A tool that never changes."""
    return text


@server.tool()
async def add_tool(name: str, description: str, ctx: Context[Any, Any]) -> str:
    """Add (or redefine) a tool that echoes its text, and say the list changed."""
    added = _added()
    if name in {tool.name for tool in await server.list_tools()}:
        server.remove_tool(name)
    _install(name, description)
    added[name] = description
    _save(added)
    await _changed(ctx)
    return f"added {name}"


@server.tool()
async def remove_tool(name: str, ctx: Context[Any, Any]) -> str:
    """Remove a tool added by add_tool, and say the list changed."""
    added = _added()
    server.remove_tool(name)
    added.pop(name, None)
    _save(added)
    await _changed(ctx)
    return f"removed {name}"


if os.environ.get("FAULTS"):  # the fault tools, only when asked for (they would change the list)

    @server.tool()
    async def drop_listen(hidden: str = "", then: int = 0) -> str:
        """Add `hidden` (if given) unannounced; drop the open listen streams, and the next `then`."""
        if hidden:
            added = _added()
            _install(hidden, "hidden")
            added[hidden] = "hidden"
            _save(added)
        faults.drop_next = then
        faults.drop.set()
        faults.drop = anyio.Event()
        return "dropped"

    @server.tool()
    def listens() -> int:
        """How many listen streams were acknowledged."""
        return faults.listens

    @server.tool()
    def fail_listing(times: int = 1) -> str:
        """Make the next `times` tools/list requests fail."""
        faults.fail_listing = times
        return "failing"

    @server.tool()
    def release_listen() -> str:
        """Acknowledge the listen streams held (HOLD_LISTEN)."""
        faults.released.set()
        return "released"


for _name, _description in _added().items():
    _install(_name, _description)


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        server.run(transport="streamable-http", port=int(os.environ["PORT"]))
    else:
        server.run()
