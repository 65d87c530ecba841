"""Lockfiles: the tool definitions a server offered, pinned, so a later load can tell what changed.

A lockfile is JSON (sorted keys, two-space indent, a trailing newline, so a diff in review shows what
changed). Per server: its config without secrets (an env or header value is written as a ``${NAME}``
reference, read from the environment when a list is built from the lockfile), the protocol found, and
per tool its definition (name, title, description, input and output schema, annotations, execution) and
the sha256 of that definition's canonical JSON.

A loader given ``lock=`` compares what the server lists with the pinned definitions (`PinnedLister`):
with ``on_drift="refuse"`` a changed or new tool is left out, ``"warn"`` keeps it with a `DriftWarning`,
``"approve"`` keeps it with approval required on every call. Removed tools are reported.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias
from urllib.parse import urlsplit, urlunsplit

from ..errors import UserError
from ._calls.limits import DEFAULT_MAX_DURATION, SAME_AS_TIMEOUT, Timeouts
from ._calls.listings import list_tools
from ._calls.protocol import Learned, Protocol
from ._calls.runner import Stateless
from ._configs import ServerConfig, StdioConfig
from ._lists.tool import tool_spec
from ._lists.toollist import ToolChanges

if TYPE_CHECKING:
    from ..tools import AgentTool

__all__ = [
    "FORMAT",
    "PINNED_KEYS",
    "DriftPolicy",
    "DriftWarning",
    "LockSource",
    "LockedServer",
    "Pin",
    "compare",
    "definition",
    "definition_hash",
    "dumps",
    "lock_servers",
    "locked_settings",
    "matching",
    "pin",
    "read_lock",
]

FORMAT = 1
PINNED_KEYS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations", "execution")
DriftPolicy: TypeAlias = Literal["refuse", "warn", "approve"]
DRIFT_POLICIES = ("refuse", "warn", "approve")
LockSource: TypeAlias = "str | os.PathLike[str] | Mapping[str, Any]"
_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


class DriftWarning(UserWarning):
    """A server's tools differ from those pinned in a lockfile."""


def definition(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned part of a tool definition (what the model sees and what changes a call)."""
    return {key: spec[key] for key in PINNED_KEYS if spec.get(key) is not None}


def definition_hash(pinned: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a pinned definition (sorted keys, no spaces, UTF-8)."""
    text = json.dumps(pinned, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# -- writing --------------------------------------------------------------------------------------------


def _reference(name: str) -> str:
    return "${" + re.sub(r"[^A-Za-z0-9_]", "_", name).upper() + "}"


def _url_without_secrets(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def server_config(server: ServerConfig) -> dict[str, Any]:
    """`server` as lockfile JSON: what it is, with every secret value replaced by a ``${NAME}``."""
    if isinstance(server, StdioConfig):
        config: dict[str, Any] = {"type": "stdio", "command": server.command, "args": list(server.args)}
        if server.env:
            config["env"] = {name: "${" + name + "}" for name in sorted(server.env)}
        if server.cwd is not None:
            config["cwd"] = os.fspath(server.cwd)
        if server.inherit_env:
            config["inherit_env"] = True
    else:
        config = {"type": "http", "url": _url_without_secrets(server.url), "transport": server.transport}
        if isinstance(server.headers, Mapping) and server.headers:
            config["headers"] = {name: _reference(name) for name in sorted(server.headers)}
    if server.protocol != "auto":
        config["protocol"] = server.protocol
    return config


def _protocol_json(learned: Learned) -> dict[str, Any] | None:
    protocol = learned.protocol
    if protocol is None:
        return None
    found: dict[str, Any] = {"version": protocol.version}
    if protocol.discover is not None:
        found["discover"] = protocol.discover.model_dump(mode="json", by_alias=True, exclude_none=True)
    if learned.transport is not None:
        found["transport"] = learned.transport
    return found


def server_entry(name: str, server: ServerConfig, learned: Learned, listed: Iterable[Any]) -> dict[str, Any]:
    """One server of a lockfile: its config, the protocol found, and its tools sorted by name."""
    tools = []
    for spec in sorted((tool_spec(item) for item in listed), key=lambda spec: str(spec["name"])):
        pinned = definition(spec)
        tools.append({"definition": pinned, "sha256": definition_hash(pinned)})
    return {
        "name": name,
        "config": server_config(server),
        "protocol": _protocol_json(learned),
        "tools": tools,
    }


async def lock_servers(
    servers: Sequence[tuple[str, ServerConfig]], *, timeout: float | None = 30.0
) -> dict[str, Any]:
    """List each server once (one session each) and return the lockfile's JSON."""
    entries = []
    for name, server in servers:
        runner = Stateless(server, Timeouts.from_options(timeout, SAME_AS_TIMEOUT, DEFAULT_MAX_DURATION))
        try:
            listed, _ = await runner.request(list_tools)
        finally:
            await runner.shared.aclose()
        entries.append(server_entry(name, server, runner.learned, listed))
    return {"cubepi_lock": FORMAT, "servers": entries}


def dumps(lock: Mapping[str, Any]) -> str:
    """The lockfile's text: sorted keys, two-space indent, a trailing newline."""
    return json.dumps(lock, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# -- reading --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LockedServer:
    """One server of a lockfile: its name, config JSON, protocol JSON and pinned tools by name."""

    name: str
    config: Mapping[str, Any]
    protocol: Mapping[str, Any] | None
    tools: Mapping[str, Mapping[str, Any]]  # name -> {"definition": ..., "sha256": ...}

    def key(self) -> tuple[str, ...]:
        return _config_key(self.config)


def _config_key(config: Mapping[str, Any]) -> tuple[str, ...]:
    if config.get("type") == "http":
        return ("http", str(config.get("url")))
    return ("stdio", str(config.get("command")), *map(str, config.get("args") or ()))


def read_lock(source: LockSource) -> list[LockedServer]:
    """The servers of a lockfile (a path, or its parsed JSON); `UserError` if it is not one."""
    if isinstance(source, Mapping):
        data: Any = source
        where = "the lockfile"
    else:
        where = f"lockfile {os.fspath(source)!r}"
        try:
            data = json.loads(Path(source).read_text(encoding="utf-8"))
        except OSError as exc:
            raise UserError(f"cannot read {where}: {exc.strerror or exc}") from exc
        except ValueError as exc:
            raise UserError(f"{where} is not JSON: {exc}") from exc
    if not isinstance(data, Mapping) or data.get("cubepi_lock") != FORMAT:
        raise UserError(f"{where} is not a cubepi lockfile (format {FORMAT})")
    servers = data.get("servers")
    if not isinstance(servers, list):
        raise UserError(f"{where} has no list of servers")
    found = []
    for entry in servers:
        try:
            tools = {str(item["definition"]["name"]): item for item in entry["tools"]}
            found.append(LockedServer(str(entry["name"]), entry["config"], entry.get("protocol"), tools))
        except (KeyError, TypeError) as exc:
            raise UserError(f"{where} has a malformed server entry ({type(exc).__name__}: {exc})") from exc
    return found


def matching(locked: Sequence[LockedServer], server: ServerConfig) -> LockedServer:
    """The entry of `locked` for `server` (same command and arguments, or same URL); the only one if
    there is one."""
    key = _config_key(server_config(server))
    for entry in locked:
        if entry.key() == key:
            return entry
    if len(locked) == 1:
        return locked[0]
    raise UserError(f"the lockfile pins no server like {server.describe()}")


def _expand(value: str, what: str) -> str:
    match = _REFERENCE.fullmatch(value)
    if match is None:
        return value
    found = os.environ.get(match[1])
    if found is None:
        raise UserError(f"{what} is {value} in the lockfile, and the environment has no {match[1]}")
    return found


def locked_settings(entry: LockedServer) -> tuple[Literal["stdio", "http"], dict[str, Any]]:
    """The kind and settings of the server config a lockfile entry describes, its ``${NAME}`` references
    read from the environment (`_lists.from_lock.locked_server` makes the config)."""
    config = entry.config
    try:
        if config.get("type") == "http":
            headers = {k: _expand(str(v), f"header {k!r}") for k, v in (config.get("headers") or {}).items()}
            return "http", {
                "url": str(config["url"]),
                "headers": headers or None,
                "transport": config.get("transport", "auto"),
                "protocol": config.get("protocol", "auto"),
            }
        env = {k: _expand(str(v), f"env {k!r}") for k, v in (config.get("env") or {}).items()}
        return "stdio", {
            "command": str(config["command"]),
            "args": [str(arg) for arg in config.get("args") or ()],
            "env": env or None,
            "cwd": config.get("cwd"),
            "inherit_env": bool(config.get("inherit_env", False)),
            "protocol": config.get("protocol", "auto"),
        }
    except (KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"server {entry.name!r} of the lockfile has a malformed config ({exc})") from exc


def learned_of(entry: LockedServer) -> Learned:
    """What the lock pins of the server's protocol, as a load would have learned it (imports the SDK)."""
    found = entry.protocol
    if not found:
        return Learned()
    from mcp import types

    from ._calls.protocol import needs_definition

    discover = found.get("discover")
    protocol = Protocol(
        str(found["version"]), types.DiscoverResult.model_validate(discover) if discover is not None else None
    )
    definitions = {}
    for name, item in entry.tools.items():
        tool = types.Tool.model_validate(item["definition"])
        if needs_definition(tool):
            definitions[name] = tool
    return Learned(protocol=protocol, transport=found.get("transport"), definitions=definitions)


# -- comparing ------------------------------------------------------------------------------------------


def compare(entry: LockedServer, listed: Iterable[Mapping[str, Any]]) -> ToolChanges:
    """What differs between the pinned tools and `listed` (tool specs): added, removed, changed names."""
    now = {str(spec["name"]): definition_hash(definition(spec)) for spec in listed}
    return ToolChanges(
        added=tuple(sorted(set(now) - set(entry.tools))),
        removed=tuple(sorted(set(entry.tools) - set(now))),
        changed=tuple(
            sorted(
                name
                for name, digest in now.items()
                if name in entry.tools and entry.tools[name]["sha256"] != digest
            )
        ),
    )


def describe_drift(drift: ToolChanges, where: str) -> list[str]:
    """One line per difference, for warnings and ``cubepi lock --check``."""
    return [
        *(f"{where}: tool {name!r} changed since it was locked" for name in drift.changed),
        *(f"{where}: tool {name!r} is new (not in the lockfile)" for name in drift.added),
        *(f"{where}: tool {name!r} was removed" for name in drift.removed),
    ]


def check_policy(on_drift: object) -> DriftPolicy:
    if on_drift not in DRIFT_POLICIES:
        raise UserError(f"on_drift must be one of {', '.join(map(repr, DRIFT_POLICIES))}; got {on_drift!r}")
    return on_drift  # type: ignore[return-value]


def pin(lock: LockSource, on_drift: object, server: ServerConfig) -> Pin:
    """The `Pin` of `server`'s entry in `lock` (a path or its parsed JSON)."""
    return Pin(matching(read_lock(lock), server), check_policy(on_drift))


@dataclasses.dataclass
class Pin:
    """Compares each listing of a `Lister` with a lockfile entry: changed and new tools are left out
    (``refuse``), kept with a warning (``warn``) or kept needing approval (``approve``); `drift` is the
    last comparison."""

    entry: LockedServer
    on_drift: DriftPolicy = "refuse"
    drift: ToolChanges = dataclasses.field(default_factory=ToolChanges)

    def select(self, specs: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
        """The specs a list may build, after warning of what drifted."""
        drift = self.drift = compare(self.entry, specs)
        action = {"refuse": "left out", "warn": "kept", "approve": "kept; every call needs approval"}
        for line in describe_drift(drift, where):
            tail = "" if line.endswith("removed") else f" ({action[self.on_drift]})"
            warnings.warn(line + tail, DriftWarning, stacklevel=5)
        if self.on_drift != "refuse":
            return specs
        return [spec for spec in specs if spec["name"] not in self._suspect()]

    def mark(self, tools: Iterable[AgentTool], wire_names: Iterable[str]) -> None:
        """With ``approve``: every call of a changed or new tool needs approval."""
        if self.on_drift == "approve":
            suspect = self._suspect()
            for tool, wire_name in zip(tools, wire_names, strict=True):
                if wire_name in suspect:
                    tool.needs_approval = True

    def _suspect(self) -> set[str]:
        return set(self.drift.changed) | set(self.drift.added)
