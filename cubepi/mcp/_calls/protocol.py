"""The two protocol eras: what a load learns of a server (an immutable value), and how a session starts.

A server speaks the 2026-07-28 revision (stateless: ``server/discover`` once, then every request carries
its version, so a fresh session adopts the discover result and sends nothing more) or a handshake-era
revision (``initialize`` on every session). `Learned` is what a load found: the protocol, the HTTP
transport, and the tools whose calls need their definition. A list keeps it and replaces it whole; nothing
below a list writes to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import anyio

from ...errors import UserError
from .._errors import UNSUPPORTED_PROTOCOL_VERSION, is_connection_closed
from .._sdk import negotiate_auto

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp import types as mcp_types

    from .._errors import Attempt
    from .._transports.base import TransportName

__all__ = ["DISCOVER_LIMIT", "TASKS_EXTENSION", "Learned", "Protocol", "ProtocolSetting", "start"]

# "auto": ``server/discover``, else the handshake; "legacy": always the handshake; or a 2026-07-28+
# revision to pin (no probe).
ProtocolSetting: TypeAlias = Literal["auto", "legacy"] | str
# How long a server may take to answer ``server/discover`` before it counts as a handshake-era server that
# ignores unknown methods (one that answers with an error falls back at once).
DISCOVER_LIMIT = 2.0
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


def check_protocol(value: object) -> None:
    """Raise `UserError` unless `value` is a `ProtocolSetting` the installed SDK speaks."""
    if value in ("auto", "legacy"):
        return
    from .._sdk import modern_versions

    modern = modern_versions()
    if not isinstance(value, str) or (modern is not None and value not in modern):
        known = ", ".join(repr(v) for v in ("auto", "legacy", *(modern or ())))
        raise UserError(f"protocol must be one of {known}; got {value!r}")


@dataclass(frozen=True)
class Protocol:
    """The protocol a server speaks: a 2026-07-28 discover result, or a handshake-era version; and the
    server's ``instructions`` (of its discover or initialize result; None: it sent none)."""

    version: str
    discover: mcp_types.DiscoverResult | None = None
    instructions: str | None = field(default=None, compare=False)

    @property
    def stateless(self) -> bool:
        """True on the 2026-07-28 revision: a call is one request, with no handshake."""
        return self.discover is not None

    @property
    def offers_tasks(self) -> bool:
        """Whether the discover result lists the tasks extension (`_calls.tasks`)."""
        extensions = self.discover.capabilities.extensions if self.discover is not None else None
        return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


@dataclass(frozen=True)
class Learned:
    """What a list knows of its server: the protocol (None until a session has found it), the HTTP
    transport of an ``"auto"`` server (None until found), and the listed tools whose calls need their
    definition (`needs_definition`)."""

    protocol: Protocol | None = None
    transport: TransportName | None = None
    definitions: Mapping[str, mcp_types.Tool] = field(default_factory=dict, compare=False)

    @property
    def one_request(self) -> bool:
        """A call is one POST and its session ends without a word (2026-07-28 over Streamable HTTP)."""
        return self.transport == "streamable-http" and self.protocol is not None and self.protocol.stateless


def needs_definition(tool: mcp_types.Tool) -> bool:
    """Whether a call of `tool` needs its definition: it names parameters to mirror into ``Mcp-Param-*``
    headers (2026-07-28), or a handshake-era server runs it only as a task."""
    if getattr(getattr(tool, "execution", None), "task_support", None) == "required":
        return True
    try:
        from mcp.shared.inbound import x_mcp_header_map
    except ImportError:  # pragma: no cover - another SDK layout: learn every tool
        return True
    return bool(x_mcp_header_map(tool.input_schema))


async def start(
    client: ClientSession, setting: ProtocolSetting, known: Protocol | None, attempt: Attempt
) -> Protocol:
    """Make `client` ready as `setting` and what is `known` say; returns the protocol it speaks."""
    if setting == "legacy" or (setting == "auto" and known is not None and not known.stateless):
        result = await client.initialize()
        return Protocol(result.protocol_version, instructions=result.instructions)
    if setting != "auto":
        attempt.forced_revision = setting
        discover = known.discover if known is not None else None
        if discover is None:
            from mcp import types

            discover = types.DiscoverResult(
                supported_versions=[setting],
                capabilities=types.ServerCapabilities(),
                result_type="complete",
                ttl_ms=0,
                cache_scope="public",
            )
        client.adopt(discover)
        return Protocol(setting, discover, discover.instructions)
    if known is not None:
        client.adopt(known.discover)  # type: ignore[arg-type]
        return known
    await negotiate(client, attempt)
    return Protocol(client.protocol_version or "", client.discover_result, client.instructions)


async def negotiate(client: ClientSession, attempt: Attempt) -> None:
    """Find the server's protocol on a fresh session: ``server/discover``, else the handshake.

    The SDK's own policy (`negotiate_auto`), with two differences: a server that does not answer the
    probe within `DISCOVER_LIMIT` seconds gets ``initialize`` (a handshake-era server may ignore unknown
    methods), and a refused request (HTTP 401 / 403, a redirect) or a closed connection is no verdict on
    the era: it is raised.
    """
    from mcp.shared.exceptions import MCPError as SdkError
    from mcp_types.version import LATEST_MODERN_VERSION

    try:
        with anyio.fail_after(DISCOVER_LIMIT):
            raw = await client.send_discover(LATEST_MODERN_VERSION)
    except (SdkError, TimeoutError) as exc:
        status = attempt.http_status or 0
        if isinstance(exc, SdkError) and (
            is_connection_closed(exc) or status in (401, 403) or 300 <= status < 400
        ):
            raise
        if isinstance(exc, SdkError) and exc.code == UNSUPPORTED_PROTOCOL_VERSION:
            await negotiate_auto(client)
            return
        attempt.http_status = None  # the probe's refusal says nothing of the handshake
        try:
            await client.initialize()
        except SdkError as handshake:
            if handshake.code != UNSUPPORTED_PROTOCOL_VERSION:
                raise
            await negotiate_auto(client)  # a slow starter that took the probe after all: probe again
        return
    _adopt_or_handshake(client, raw)
    if client.discover_result is None:
        await client.initialize()


def _adopt_or_handshake(client: ClientSession, raw: Any) -> None:
    """Adopt a discover answer that names a 2026-07-28+ revision; leave anything else to the handshake."""
    from mcp import types
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
    from pydantic import ValidationError

    try:
        result = types.DiscoverResult.model_validate(raw)
    except ValidationError:
        return
    if any(version in result.supported_versions for version in MODERN_PROTOCOL_VERSIONS):
        client.adopt(result)
