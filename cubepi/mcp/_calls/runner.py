"""The runner of a loaded list, `Stateless`: how its calls reach the server.

Every call gets a session no earlier call used. Its `request` is chosen when it learns the server
(`learn`): on a 2026-07-28 server over Streamable HTTP a call is one POST made from the caller's own task
(`_one_request`); every other session, whose end matters (a stdio process, a handshake session, SSE, a
server not known yet), is leased (`_leased`): opened and closed by an owner task (`_calls.ownership`),
borrowed by the call. A connection's runner (`_connection`) works over its one live session instead.
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio

from ..._calling import lent_elicitation
from ...errors import MCPTimeoutError
from .._context import current_call_context
from .._errors import Attempt, RevisionRefused, is_lost, leaves, mcp_errors
from .._sdk import ensure_sdk
from .elicitation import with_defaults
from .limits import CLOSE_MARGIN, Timeouts
from .ownership import Keeper, Lease
from .protocol import TASKS_EXTENSION, Learned
from .session import Opening, Session
from .shared_state import Shared

if TYPE_CHECKING:
    from mcp import types as mcp_types

    from .._configs import ServerConfig

__all__ = ["Runner", "Stateless", "Work"]

Work: TypeAlias = Callable[..., Awaitable[Any]]  # (session, *args) -> outcome


class Runner:
    """How the tools of one list reach their server (`Stateless`, or a connection's)."""

    async def request(self, work: Work, *args: Any, tool_name: str | None = None) -> Any:
        """`await work(session, *args)` on a session to the server; one readable `MCPError` on failure."""
        raise NotImplementedError

    def limiter(self) -> anyio.CapacityLimiter | None:
        """The concurrency limit of the list's calls in this event loop (None: none)."""
        return None

    def remember(self, definitions: Mapping[str, mcp_types.Tool]) -> None:
        """The listed tools whose calls need their definition (`_calls.protocol.needs_definition`)."""

    def describe(self) -> str:
        raise NotImplementedError

    def instructions(self) -> str | None:
        """The server's ``instructions``, as the load found them (None: none sent, or not known)."""
        return None


class Stateless(Runner):
    """The runner of a loaded list: every call gets a session no earlier call used (see the module
    docstring). It owns `learned` and replaces it whole when a session finds more (`learn`)."""

    def __init__(
        self,
        server: ServerConfig,
        timeouts: Timeouts,
        *,
        callbacks: Mapping[str, Any] | None = None,
        tasks: bool = True,
        prespawn: bool = False,
        max_concurrency: int | None = None,
        learned: Learned | None = None,
        owned: bool = True,
    ) -> None:
        self.server = server
        self.timeouts = timeouts
        self.callbacks = dict(callbacks or {})
        self.tasks = tasks
        self.prespawn = prespawn
        self.max_concurrency = max_concurrency
        self.owned = owned  # a list's runner: aclose() waits for sessions still closing (a limit is a bound)
        self.shared = Shared(server.describe())
        self.learned = Learned()
        self.request = self._leased  # type: ignore[method-assign]
        self.adopt(learned or Learned())

    def describe(self) -> str:
        return self.server.describe()

    def instructions(self) -> str | None:
        protocol = self.learned.protocol
        return protocol.instructions if protocol is not None else None

    # -- what the runner knows -------------------------------------------------------------------------------

    def adopt(self, learned: Learned) -> None:
        """Replace what is known of the server, and choose the path of a call for it."""
        self.learned = learned
        self._last: Opening | None = None
        kwargs = dict(self.callbacks)
        protocol = learned.protocol
        if self.tasks and protocol is not None and protocol.offers_tasks:
            kwargs["extensions"] = {TASKS_EXTENSION: {}}
        self._kwargs = kwargs
        self.request = self._one_request if learned.one_request else self._leased  # type: ignore[method-assign]

    def learn(self, session: Session) -> None:
        """What a session found (the protocol, an ``"auto"`` server's transport), kept for later calls."""
        learned = self.learned
        if session.protocol != learned.protocol or session.transport != learned.transport:
            self.adopt(dataclasses.replace(learned, protocol=session.protocol, transport=session.transport))

    def forget_protocol(self) -> None:
        self.adopt(dataclasses.replace(self.learned, protocol=None))

    def remember(self, definitions: Mapping[str, mcp_types.Tool]) -> None:
        self.adopt(dataclasses.replace(self.learned, definitions=dict(definitions)))

    def opening(self, keeper: Keeper | None, *, learn: bool = True) -> Opening:
        """What a session opened now takes (the SDK is imported here first: `_sdk.ensure_sdk`). The last
        one made for a keeper is reused while nothing changes (it is on every call)."""
        cached = self._last
        lent = lent_elicitation()
        lent = None if lent is None or "elicitation_callback" in self._kwargs else lent
        transport = self.shared.transport(self.server)
        call = current_call_context() if transport.takes_call_context else None
        call = call if call is not None and call.reaches_transport else None
        if (
            cached is not None
            and cached.keeper is keeper
            and lent is None
            and call is None
            and (cached.learn is not None) == learn
        ):
            return cached
        ensure_sdk()
        self.server.check_travelled()
        kwargs = (
            self._kwargs if lent is None else {**self._kwargs, "elicitation_callback": with_defaults(lent)}
        )
        shared, server = self.shared, self.server
        tasks = (
            shared.task_watch(self.timeouts, "elicitation_callback" in self.callbacks) if self.tasks else None
        )
        opening = Opening(
            server,
            self.timeouts,
            self.learned,
            kwargs,
            transport,
            keeper=keeper,
            tasks=tasks,
            learn=_learner(self) if learn else None,
            call=call,
        )
        if lent is None and call is None:  # an opening for one user's call is never reused
            self._last = opening
        return opening

    def spare_opening(self, keeper: Keeper) -> Opening:
        """How a spare opens: with what the list knows now, and no way back to the list (which a spare
        would keep alive)."""
        return self.opening(keeper, learn=False)

    def limiter(self) -> anyio.CapacityLimiter | None:
        return None if self.max_concurrency is None else self.shared.limiter(self.max_concurrency)

    # -- the two paths of a request --------------------------------------------------------------------------

    async def _one_request(self, work: Work, *args: Any, tool_name: str | None = None) -> Any:
        """A 2026-07-28 request over Streamable HTTP: the session adopts the discover result and sends
        nothing but `work`'s request, from the caller's task; its end tells the server nothing (a
        cancelled caller aborts the request, which does)."""
        shared = self.shared
        shared.check_open()
        attempt = Attempt(tool_name=tool_name)
        try:
            async with mcp_errors(attempt, self.describe()):
                keeper = await shared.keeper()
                async with self.opening(keeper, learn=False).one_request(attempt) as session:
                    return await work(session, *args)
        except RevisionRefused:
            if not self._forgets_protocol():
                raise
        return await self._leased(work, *args, tool_name=tool_name, again=True)

    async def _leased(self, work: Work, *args: Any, tool_name: str | None = None, again: bool = False) -> Any:
        """A request on a leased session (see `_calls.ownership`): a limit that runs out raises at once while
        the list's keeper goes on closing the session; so does a stdio call once its answer is in, where the
        keeper lets it (`Keeper.detaches`); anything else returns once the session has closed.
        `again`: the request was refused once already, so a second refusal is raised, not retried."""
        shared = self.shared
        shared.check_open()
        keeper = await shared.keeper()
        if keeper is not None and not again:
            keeper.calls += 1
        spare = await self._spare(keeper) if self.prespawn else None
        lease = spare or self.opening(keeper).leased(tool_name)
        lease.attempt.tool_name = tool_name
        bounded = keeper is not None and self.owned
        try:
            async with mcp_errors(
                lease.attempt, self.describe(), explain=lambda exc: self._failure(exc, lease, bounded=bounded)
            ):
                if keeper is not None:
                    if spare is None:
                        keeper.own(lease)
                    wait = spare is None and not (self.owned and keeper.detaches(lease))
                    return await lease.borrow(work, *args, wait=wait)
                async with anyio.create_task_group() as group:
                    group.start_soon(lease.own)
                    return await lease.borrow(work, *args)
        except RevisionRefused:
            if again or not self._forgets_protocol():
                raise
        finally:
            if keeper is not None and self.prespawn:
                shared.spare_after(keeper, self.spare_opening)
        return await self._leased(work, *args, tool_name=tool_name, again=True)

    async def _failure(
        self, exc: BaseException, lease: Lease[Session], *, bounded: bool
    ) -> tuple[BaseException, bool]:
        """What to report for `exc`, once the session has closed, and whether it has: a limit that ran out
        is a bound (the keeper goes on closing), and a lost connection is reported by what broke it, in
        the phase it broke in."""
        phase = lease.attempt.phase  # the owner goes on to close: the phase the request failed in
        if isinstance(exc, MCPTimeoutError) or isinstance(lease.failure, MCPTimeoutError):
            await lease.settle(CLOSE_MARGIN if bounded else math.inf)
        else:
            await lease.settle()
            closing = lease.failure
            if closing is not None and closing is not exc and all(map(is_lost, leaves(exc))):
                return closing, lease.closed.is_set()
        lease.attempt.phase = phase
        return exc, lease.closed.is_set()

    def _forgets_protocol(self) -> bool:
        """After a refused revision: the protocol found at load is forgotten (the server's changed), so
        that the request is sent once more on a session that finds it again; False where nothing was
        found to forget, or `protocol=` pins it."""
        if self.learned.protocol is None or self.server.protocol != "auto":
            return False
        self.forget_protocol()
        return True

    async def _spare(self, keeper: Keeper | None) -> Lease[Session] | None:
        """The waiting spare, for this call, once it has started; None when there is none, or it failed
        to start (a fresh session then reports why, or works). A spare was opened with the list's
        callbacks: a call lent other ones opens its own session."""
        lent = "elicitation_callback" not in self._kwargs and lent_elicitation() is not None
        lease = None if lent else self.shared.take_spare(keeper)
        if lease is None:
            return None
        try:
            await lease.ready.wait()
        except BaseException:
            lease.interrupt()
            raise
        return lease if lease.session is not None else None

    # -- travelling ------------------------------------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["request"], state["_last"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.adopt(self.learned)


def _learner(runner: Stateless) -> Callable[[Session], None]:
    """`runner.learn`, held weakly: a session still closing after its call returned (its server
    exiting) keeps no list alive, so that dropping the list ends it."""
    ref = weakref.ref(runner)

    def learn(session: Session) -> None:
        found = ref()
        if found is not None:
            found.learn(session)

    return learn
