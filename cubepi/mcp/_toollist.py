"""`MCPToolList`: the list a loader returns, and what its stateless calls share.

A loaded list is a plain ``list[AgentTool]`` (indexing, slicing, ``tools + my_tools`` all work) that also
owns what makes its stateless calls cheap: the protocol found at load (on a 2026-07-28 server every call
adopts its discover result: no handshake), one HTTP client (connection pool and TLS context) for an HTTP
server, and with ``prespawn=True`` one spare stdio server process. Every call still gets a session no
earlier call used.

```python
async with await load_mcp_tools_http("https://host/mcp") as tools:
    await tools[0].execute({...})
# or: tools = await load_mcp_tools_http(...); ...; await tools.aclose()
```

Closing is optional: an unclosed list is harmless. What it owns lives in background tasks of the event loop
that first used it; they close when the list and all its tools are garbage-collected, and when that loop
ends (``asyncio.run`` cancels them). After `aclose()`, calling one of the list's tools raises `UserError`.

`await tools.refresh()` lists the server's tools again and updates the list in place (`ToolChanges` says
what changed); a listing the server marked fresh (2026-07-28 ``ttlMs``) is reused until it expires.
"""

from __future__ import annotations

import contextlib
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ..errors import UserError
from ..tools import AgentTool, ensure_unique_names
from ._background import Closings, Home, current_home

if TYPE_CHECKING:
    import httpx2

    from ._prespawn import SparePool
    from ._session import Endpoint

__all__ = [
    "Listing",
    "MCPToolList",
    "SharedHttpClient",
    "ToolChanges",
    "ToolListEdit",
    "ToolListResources",
    "merge_changes",
]

T = TypeVar("T")


@dataclass(frozen=True)
class ToolChanges:
    """What a refresh changed in a tool list: the names of the tools added, removed, and those whose
    definition changed (replaced by new tools). True when anything changed."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def merge_changes(changes: Iterable[ToolChanges]) -> ToolChanges:
    """The changes of several lists as one."""
    found = list(changes)
    return ToolChanges(
        added=tuple(name for item in found for name in item.added),
        removed=tuple(name for item in found for name in item.removed),
        changed=tuple(name for item in found for name in item.changed),
    )


@dataclass
class Listing:
    """One listing of a server's tools, built with a list's policies.

    `definitions` maps each tool's name (as in the list, prefix included) to its definition as the server
    listed it; `fresh_until` (`time.monotonic()` seconds) is when the server's cache hints say the listing
    goes stale (None: stale at once, the handshake era or no ``ttlMs``).
    """

    tools: list[AgentTool]
    definitions: dict[str, Mapping[str, Any]]
    fresh_until: float | None = None


# Lists a list's server again (its `Listing`, built with the list's policies).
Relister = Callable[[], Awaitable[Listing]]


@dataclass
class ToolListEdit:
    """What a refresh did to a list, to do to any list holding the same tools: tools to drop (None) or
    replace, by identity, and tools to append."""

    replaced: dict[int, AgentTool | None] = field(default_factory=dict)
    added: list[AgentTool] = field(default_factory=list)

    def apply(self, tools: Iterable[AgentTool]) -> list[AgentTool]:
        kept = [self.replaced.get(id(tool), tool) for tool in tools]
        return [tool for tool in kept if tool is not None] + self.added

    def merge(self, other: ToolListEdit) -> None:
        self.replaced.update(other.replaced)
        self.added.extend(other.added)


class MCPToolList(list[AgentTool]):
    """The tools of one MCP server, as a list; `aclose()` (or ``async with``) releases what they share.

    Slicing or concatenating gives a plain list whose tools keep working; they share the same resources,
    which are closed by `aclose()` on this list or when nothing refers to them any more.
    """

    def __init__(
        self, tools: Iterable[AgentTool] = (), *, resources: ToolListResources | None = None
    ) -> None:
        super().__init__(tools)
        self._resources = resources
        self._relist: Relister | None = None
        self._definitions: dict[str, Mapping[str, Any]] = {}
        self._own: dict[str, AgentTool] = {}  # the tools this list built, by name
        self._fresh_until: float | None = None

    @classmethod
    def from_listing(
        cls, listing: Listing, relist: Relister, *, resources: ToolListResources | None = None
    ) -> MCPToolList:
        """The list of a loader: `listing`'s tools, refreshed by calling `relist`."""
        tools = cls(listing.tools, resources=resources)
        tools._relist = relist
        tools._absorb(listing)
        return tools

    async def refresh(self, *, force: bool = False) -> ToolChanges:
        """List the server's tools again and update this list in place; returns what changed.

        Tools the server added are appended, tools it removed are dropped, and a tool whose definition
        changed is replaced by a new tool; the others stay the same objects. The loader's policies apply
        as at load (a name in `include` / `exclude` that the server no longer offers is ignored). While
        the server's cache hints say the last listing is fresh (a 2026-07-28 server's ``ttlMs``), nothing
        is sent and nothing changes; ``force=True`` always asks.
        """
        changes, _ = await self._refreshed(force)
        return changes

    async def _refreshed(self, force: bool) -> tuple[ToolChanges, ToolListEdit]:
        """`refresh`, and the edit it made (for lists that hold these tools too)."""
        if self._relist is None:
            raise UserError("this list was not loaded from an MCP server; there is nothing to refresh")
        if self._resources is not None:
            self._resources.check_open()
        if not force and self._fresh_until is not None and time.monotonic() < self._fresh_until:
            return ToolChanges(), ToolListEdit()
        listing = await self._relist()
        old, new = self._definitions, listing.definitions
        built = {tool.name: tool for tool in listing.tools}
        changes = ToolChanges(
            added=tuple(name for name in new if name not in old),
            removed=tuple(name for name in old if name not in new),
            changed=tuple(name for name in new if name in old and new[name] != old[name]),
        )
        edit = ToolListEdit(
            replaced={id(self._own[name]): None for name in changes.removed}
            | {id(self._own[name]): built[name] for name in changes.changed},
            added=[built[name] for name in changes.added],
        )
        updated = edit.apply(self)
        ensure_unique_names(updated)
        self[:] = updated
        kept = {name: self._own[name] for name in new if name in old and name not in changes.changed}
        self._absorb(listing, {**built, **kept})
        return changes, edit

    def _absorb(self, listing: Listing, own: Mapping[str, AgentTool] | None = None) -> None:
        """Remember `listing` as the last one; `own`: the list's tools by name (default: the listing's)."""
        self._own = dict(own) if own is not None else {tool.name: tool for tool in listing.tools}
        self._definitions = dict(listing.definitions)
        self._fresh_until = listing.fresh_until

    @property
    def closed(self) -> bool:
        """True once `aclose()` ran (tools loaded from a live connection: never, the connection decides)."""
        return self._resources is not None and self._resources.closed

    async def aclose(self) -> None:
        """Close the shared HTTP client and reap spare server processes; later calls raise `UserError`.

        Idempotent. Tools loaded from a live connection do not own it: closing their list does nothing.
        """
        if self._resources is not None:
            await self._resources.aclose()

    async def __aenter__(self) -> MCPToolList:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        state = ", closed" if self.closed else ""
        return f"MCPToolList({list.__repr__(self)}{state})"

    def __getstate__(self) -> dict[str, Any]:
        """The list travels with its tools, its server, policies and last listing; a listing's freshness
        is a time of this process's clock, so the copy asks again at its first refresh."""
        return {**self.__dict__, "_fresh_until": None}


class ToolListResources:
    """What the stateless calls of one loaded list share; the `Endpoint` of its tools points here.

    Pickled, it travels as what it is, not what it holds: in the process where it lands it is made again
    empty (its HTTP client, its spare server pool made there on first use), once per process: every tool
    of the list unpickled there shares it, however many times they were pickled.
    """

    def __init__(self, describe: str, *, share_http: bool = True, token: str | None = None) -> None:
        self.http = SharedHttpClient() if share_http else None
        self.spares: SparePool | None = None
        self.closings = Closings()  # sessions still closing after their call ran out of time
        self.closed = False
        self._describe = describe
        # Run first when the list closes, while its HTTP client still works (the tasks its calls wait on).
        self.closing: list[Callable[[], Awaitable[None]]] = []
        self.token = token or uuid.uuid4().hex
        self.prespawn = False
        _IN_THIS_PROCESS[self.token] = self

    def __reduce__(self) -> tuple[Any, ...]:
        shared = (self.token, self._describe, self.http is not None, self.prespawn, self.closed)
        return _resources_here, shared

    def adopt(self, endpoint: Endpoint, *, armed: bool = True) -> None:
        """Make the spare pool of a list that prespawns, for `endpoint`; `armed`: it may start spares
        (not while the list is being loaded)."""
        if self.prespawn and self.spares is None:
            from ._prespawn import SparePool

            self.spares = SparePool(endpoint)
            self.spares.armed = armed

    def check_open(self) -> None:
        if self.closed:
            raise UserError(
                f"the tool list of {self._describe} was closed (aclose); load the tools again to call them"
            )

    @contextlib.asynccontextmanager
    async def http_client(self, make: Callable[[], httpx2.AsyncClient]) -> AsyncIterator[httpx2.AsyncClient]:
        """The client a session to an HTTP server uses: the shared one when this loop is its home."""
        self.check_open()
        if self.http is None:
            async with make() as client:
                yield client
        else:
            async with self.http.lease(make) as client:
                yield client

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        for hook in self.closing:
            await hook()
        if self.http is not None:
            await self.http.aclose()
        if self.spares is not None:
            await self.spares.aclose()
        await self.closings.wait()


_IN_THIS_PROCESS: weakref.WeakValueDictionary[str, ToolListResources] = weakref.WeakValueDictionary()


def _resources_here(
    token: str, describe: str, share_http: bool, prespawn: bool, closed: bool
) -> ToolListResources:
    """The resources of a pickled list in this process: the ones already here, or new empty ones."""
    found = _IN_THIS_PROCESS.get(token)
    if found is None:
        found = ToolListResources(describe, share_http=share_http, token=token)
        found.prespawn = prespawn
        found.closed = closed
    return found


# How long a list's idle connections stay open after its last call, for the next call to reuse.
IDLE_GRACE = 1.0


@dataclass
class _Kept:
    """A client and the keeper task that closes its idle connections `IDLE_GRACE` after the last call,
    and the client itself when told to, or when its loop ends."""

    client: httpx2.AsyncClient
    home: Home
    stop: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    wake: anyio.Event = field(default_factory=anyio.Event)  # the last call ended, or stop
    # No call starts while idle sockets close; a free gate is passed without a trip through the loop.
    gate: anyio.Lock = field(default_factory=lambda: anyio.Lock(fast_acquire=True))
    leases: int = 0
    released_at: float = 0.0
    finished: bool = False

    def halt(self) -> None:
        self.stop.set()
        self.wake.set()

    def release(self) -> None:
        self.leases -= 1
        if self.leases == 0:
            self.released_at = anyio.current_time()
            self.wake.set()

    async def keep(self) -> None:
        try:
            while not self.stop.is_set():
                await self.wake.wait()
                self.wake = anyio.Event()
                await self._close_when_idle()
        finally:
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(Exception):  # sockets already gone
                    await self.client.aclose()
            self.finished = True
            self.done.set()

    async def _close_when_idle(self) -> None:
        while not self.stop.is_set() and self.leases == 0:
            wait = self.released_at + IDLE_GRACE - anyio.current_time()
            if wait <= 0:
                async with self.gate:
                    if self.leases == 0:
                        await _close_idle_connections(self.client)
                return
            with anyio.move_on_after(wait):
                await self.stop.wait()


class SharedHttpClient:
    """One httpx2 client shared by a list's calls in its home loop; elsewhere a client per call.

    Sharing saves the client itself (its TLS context costs tens of milliseconds to build) and the
    connections of its pool: a call that follows another within `IDLE_GRACE` seconds reuses its warm
    connection (on a 2026-07-28 server, one POST and no connect). Once no call has run for `IDLE_GRACE`,
    the pool's idle connections are closed: an idle list keeps no socket open.

    httpx2 clients (their pooled connections) belong to one event loop. The first call made in an asyncio
    loop makes it the home: the client is created there and kept by a task of that loop. Calls made from
    another loop (``execute_sync`` runs one per call) get a client of their own, closed with the call.
    When the home loop has ended, the next call makes its own loop the new home.
    """

    def __init__(self) -> None:
        self._kept: _Kept | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self.created = 0  # clients made for sharing (for tests)
        self.closed = False

    def _current(self, make: Callable[[], httpx2.AsyncClient]) -> _Kept | None:
        kept = self._kept
        if kept is not None and (kept.finished or not kept.home.is_alive()):
            self._kept = kept = None
        if kept is None and not self.closed:
            home = current_home()
            if home is not None:
                kept = self._kept = _Kept(make(), home)
                self.created += 1
                home.spawn(kept.keep(), name="cubepi-mcp-http-client")
                if self._finalizer is not None:
                    self._finalizer.detach()
                self._finalizer = weakref.finalize(self, home.call_soon, kept.halt)
        return kept

    @contextlib.asynccontextmanager
    async def lease(self, make: Callable[[], httpx2.AsyncClient]) -> AsyncIterator[httpx2.AsyncClient]:
        kept = self._current(make)
        if kept is not None and kept.home.is_current():
            async with kept.gate:
                kept.leases += 1
            try:
                yield kept.client
            finally:
                kept.release()
            return
        async with make() as client:
            yield client

    async def aclose(self) -> None:
        self.closed = True
        kept, self._kept = self._kept, None
        if self._finalizer is not None:
            self._finalizer.detach()
        if kept is None or kept.finished:
            return
        if kept.home.is_current():
            kept.halt()
            await kept.done.wait()
        else:
            kept.home.call_soon(kept.halt)


async def _close_idle_connections(client: httpx2.AsyncClient) -> None:
    """Close the connections of `client`'s pool that no request uses (httpcore2's pool drops them)."""
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    for connection in list(getattr(pool, "connections", ())):
        with contextlib.suppress(Exception):
            if connection.is_idle():
                await connection.aclose()


def prepare_resources(endpoint: Endpoint, *, prespawn: bool) -> ToolListResources:
    """The resources of a list about to be loaded from `endpoint`, attached to it (`prespawn`: stdio only)."""
    kind = endpoint.server.kind
    if not isinstance(prespawn, bool):
        raise UserError(f"prespawn must be True or False, got {prespawn!r}")
    if prespawn and kind != "stdio":
        raise UserError("prespawn=True applies to stdio servers (an HTTP server has no process to start)")
    resources = ToolListResources(endpoint.describe(), share_http=kind == "http")
    resources.prespawn = prespawn
    resources.adopt(endpoint, armed=False)
    endpoint.resources = resources
    return resources


async def guard(resources: ToolListResources, loading: Awaitable[T]) -> T:
    """Await `loading`; if it fails, close `resources` before the error propagates; else start spares.

    The first spare starts once the tools are listed, so that loading takes the server's time only.
    """
    try:
        result = await loading
    except BaseException:
        with anyio.CancelScope(shield=True):
            await resources.aclose()
        raise
    if resources.spares is not None:
        resources.spares.armed = True
        resources.spares.start()
    return result
