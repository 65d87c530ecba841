"""`Shared`: what the calls of one tool list share in one process.

Its keeper in each event loop (`_calls.ownership`: sessions still closing, the spare stdio server of
``prespawn=True`` and its warm-up, the HTTP client and its idle connections), its transport (a stdio
server's launch parameters found once), its concurrency limiters and the calls waiting on tasks. Every
call still gets a session no earlier call used. It ends with the list's `aclose()`, its garbage
collection, or its loop's end.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
import weakref
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from ...errors import UserError
from .._errors import is_transport_error
from .._transports.choice import transport_for
from .ownership import Keeper, Lease

if TYPE_CHECKING:
    from .._configs import ServerConfig
    from .._transports.base import Transport
    from .session import Session
    from .tasks import TaskWatch

__all__ = ["WARM_UP_TOOL", "Shared", "warm_up"]


class Shared:
    """What the calls of one list share in one process (see the module docstring).

    Pickled, it travels as what it is, not what it holds: where it lands it is made again, empty, once
    per process (every tool of the list unpickled there shares it), and keeps only whether it was closed.
    """

    def __init__(self, describe: str, *, token: str | None = None) -> None:
        self.describe = describe
        self.token = token or uuid.uuid4().hex
        self.closed = False
        self._keepers: dict[asyncio.AbstractEventLoop, Keeper] = {}
        self._finalizer = weakref.finalize(self, _stop_keepers, self._keepers)
        self._transport: Transport | None = None
        self._watch: TaskWatch | None = None
        self._limiters: weakref.WeakKeyDictionary[Any, anyio.CapacityLimiter] = weakref.WeakKeyDictionary()
        _IN_THIS_PROCESS[self.token] = self

    def __reduce__(self) -> tuple[Any, ...]:
        return _shared_here, (self.token, self.describe, self.closed)

    def check_open(self) -> None:
        if self.closed:
            raise UserError(
                f"the tool list of {self.describe} was closed (aclose); load the tools again to call them"
            )

    async def keeper(self) -> Keeper | None:
        """The list's keeper in the running asyncio loop, started on first use (None under another
        backend: the call then owns its session itself)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        keeper = self._keepers.get(loop)
        if keeper is None or keeper.finished:
            for old in [old for old in self._keepers if old.is_closed()]:
                del self._keepers[old]
            keeper = self._keepers[loop] = Keeper()
            keeper.launch(loop)
        if keeper.group is None:
            await keeper.ready.wait()
        return keeper if keeper.group is not None else None

    async def aclose(self) -> None:
        """Stop the calls waiting on tasks, then every keeper; wait (shielded) for this loop's."""
        if self.closed:
            return
        self.closed = True
        self._finalizer.detach()
        with anyio.CancelScope(shield=True):
            if self._watch is not None:
                await self._watch.cancel_all()
            try:
                current = asyncio.get_running_loop()
            except RuntimeError:
                current = None
            for loop, keeper in list(self._keepers.items()):
                if loop is current:
                    await keeper.aclose()
                elif not loop.is_closed():
                    loop.call_soon_threadsafe(keeper.stop)

    # -- what calls reuse ----------------------------------------------------------------------------------

    def transport(self, server: ServerConfig) -> Transport:
        """The list's transport in this process (`_transports.choice`): what it found once (a stdio
        server's launch parameters) is found again where the list lands, never carried there."""
        if self._transport is None:
            self._transport = transport_for(server)
        return self._transport

    def task_watch(self, timeouts: Any, elicits: bool) -> TaskWatch:
        """The list's calls waiting on tasks (one watch per list and process: `aclose()` stops them)."""
        if self._watch is None:
            from .tasks import TaskWatch

            self._watch = TaskWatch(timeouts, elicits, self.describe)
        return self._watch

    def limiter(self, size: int) -> anyio.CapacityLimiter:
        """The concurrency limiter of the running event loop: a list's calls in one loop share it."""
        loop = anyio.lowlevel.current_token().native_token
        found = self._limiters.get(loop)
        if found is None:
            found = self._limiters[loop] = anyio.CapacityLimiter(size)
        return found

    # -- the spare stdio server (prespawn=True) ------------------------------------------------------------

    def take_spare(self, keeper: Keeper | None) -> Lease[Session] | None:
        """The waiting spare of this loop, for one call (it may still be starting)."""
        if keeper is None:
            return None
        spare, keeper.spare = keeper.spare, None
        return spare

    async def home(self) -> Keeper | None:
        """The list is loading in this loop: its keeper here outlives the list's calls (`Keeper.lasting`)."""
        keeper = await self.keeper()
        if keeper is not None:
            keeper.home = True
        return keeper

    def spare_after(self, keeper: Keeper, opening: Callable[[Keeper], Any]) -> None:
        """Start the next spare, in a loop that outlives its calls (`Keeper.lasting`: a loop that ends
        would only kill it)."""
        started = keeper.spare is None and keeper.group is not None and not self.closed
        if started and keeper.lasting:
            keeper.spare = keeper.own(Lease(_Warmed(opening(keeper))))
            self.spawned += 1

    spawned = 0  # spares started (for tests)

    async def settled(self) -> None:
        """Wait until this loop's servers whose calls returned have shut down (for tests and benchmarks;
        `aclose()` waits for them too)."""
        keeper = self._keepers.get(asyncio.get_running_loop())
        if keeper is not None:
            await keeper.settled()

    async def wait_spare(self) -> bool:
        """Wait until this loop's spare has started; True if one is ready (for tests and benchmarks)."""
        keeper = await self.keeper()
        spare = keeper.spare if keeper is not None else None
        if spare is None:
            return False
        await spare.ready.wait()
        return spare.session is not None


class _Warmed:
    """Opens a spare session and warms it up (`warm_up`) before it is ready."""

    def __init__(self, opening: Any) -> None:
        self.opening = opening

    @contextlib.asynccontextmanager
    async def __call__(self, lease: Lease[Session]) -> AsyncIterator[Session]:
        async with self.opening.session(lease.attempt, lease.opening) as session:
            await warm_up(session)
            yield session


# The name a spare session's warm-up asks for (see `warm_up`); no listed tool has it.
WARM_UP_TOOL = "cubepi-warm-up"


async def warm_up(session: Session) -> None:
    """Run the server's code paths of a listing and of a call once, so that the call that takes this spare
    does not pay for them; also checks the server still answers.

    A new server's first requests run cold code (a node server's first ``tools/call`` takes several times
    as long as later ones). This lists the tools (one page), then asks for a tool none of them is named
    (`WARM_UP_TOOL`, numbered past any listed name): the server answers that no such tool exists, having
    run its request parsing and call dispatch, and no tool has run. A transport failure raises.
    """
    from mcp import types
    from mcp.shared.exceptions import MCPError as SdkError

    session.attempt.phase = "list"
    limit = session.timeouts.list
    with anyio.fail_after(None if limit is None else limit + (session.starting or 0)):
        listed = await session.client.list_tools()
        session.starting = None
        names = {tool.name for tool in listed.tools}
        probe = next(name for n in itertools.count() if (name := f"{WARM_UP_TOOL}-{n}") not in names)
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=probe, arguments={}))
        try:
            await session.client.send_request(request, types.CallToolResult)
        except SdkError as exc:  # "no such tool": what was asked for
            if is_transport_error(exc):
                raise


_IN_THIS_PROCESS: weakref.WeakValueDictionary[str, Shared] = weakref.WeakValueDictionary()


def _shared_here(token: str, describe: str, closed: bool) -> Shared:
    """The `Shared` of a pickled list in this process: the one already here, or a new empty one."""
    found = _IN_THIS_PROCESS.get(token)
    if found is None:
        found = Shared(describe, token=token)
        found.closed = closed
    return found


def _stop_keepers(keepers: dict[asyncio.AbstractEventLoop, Keeper]) -> None:
    """The list was garbage-collected: tell its keepers to stop (from any thread)."""
    for loop, keeper in list(keepers.items()):
        with contextlib.suppress(RuntimeError):  # a loop closed meanwhile
            if not loop.is_closed():
                loop.call_soon_threadsafe(keeper.stop)
