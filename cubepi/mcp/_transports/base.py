"""What the layers above a transport know of it: the interfaces the transports implement.

Nothing here imports a transport, so the calls and the errors can name what they use of one (a stdio
server's process) without importing the transport that makes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["ServerProcess"]


class ServerProcess(Protocol):
    """A stdio server's process as a call sees it (`stdio.StdioProcess`): whether it has written to
    stdout yet (`heard`, and `on_output` told when it first does), its exit code, what it printed on
    stderr, and the kill of its process group when the loop ends."""

    heard: bool
    on_output: Callable[[], None] | None

    @property
    def returncode(self) -> int | None: ...

    async def stderr_tail(self, *, settled: bool = True) -> str: ...

    def kill_group(self) -> None: ...
