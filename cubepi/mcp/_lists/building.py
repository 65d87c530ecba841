"""`Lister`: a server's tools listed through a list's runner and built with its policies, at load and at
each refresh (and the tools of ``resources=True`` / ``prompts=True`` and ``page_results`` added at load)."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable
from typing import Any

from ...tools import ensure_unique_names
from .._calls.listings import list_tools
from .._calls.protocol import needs_definition
from .._calls.runner import Runner
from .._lockfile import Pin
from .offers import ServerOffers, offer_tools
from .policies import Policies
from .result_pages import READ_MORE, read_more_tool
from .tool import build_tool, tool_spec
from .toollist import Listing, app_only

__all__ = ["Lister"]

logger = logging.getLogger("cubepi.mcp")


@dataclasses.dataclass
class Lister:
    """Lists a server's tools through `runner` and builds them with one list's policies: at load, and at
    each refresh."""

    runner: Runner
    policies: Policies
    resources: bool = False
    prompts: bool = False
    pin: Pin | None = None  # a lockfile's entry for the server (`_lockfile`)

    async def list(self, *, strict: bool) -> Listing:
        """The server's tools now. `strict` (at load): `include` / `exclude` / `retries` may name only
        tools the server offers; later a tool the server dropped is no longer an error. At load, the
        tools of ``resources=True`` / ``prompts=True`` are added (`_lists.offers`)."""
        started = time.monotonic()
        listed, ttl = await self.runner.request(list_tools)
        self.runner.remember({tool.name: tool for tool in listed if needs_definition(tool)})
        listing = self.build(listed, strict=strict, fresh_until=_fresh_until(ttl, started))
        listing.offers = ServerOffers(self.runner)
        if strict and (self.resources or self.prompts):
            templates = await listing.offers.list_resource_templates() if self.resources else []
            listing.tools += offer_tools(
                self.runner,
                self.policies,
                resources=self.resources,
                prompts=self.prompts,
                templates=templates,
                taken=[tool.name for tool in listing.tools],
            )
        pages, size = self.policies.pages, self.policies.max_output_chars
        if strict and pages is not None and size is not None:
            name = self.policies.name_of(READ_MORE)
            if any(tool.name == name for tool in listing.tools):
                logger.warning("not adding the tool %r: a tool of that name is listed", name)
            else:
                listing.tools.append(read_more_tool(pages, size, name, self.runner.describe()))
        return listing

    def build(
        self, listed: Iterable[Any], *, strict: bool = True, fresh_until: float | None = None
    ) -> Listing:
        """The tools of a listing (SDK `Tool`s or their dicts), built with the policies."""
        specs = [tool_spec(item) for item in listed]
        if self.pin is not None:
            specs = self.pin.select(specs, self.runner.describe())
        policies = self.policies if strict else self.policies.offered_only(s["name"] for s in specs)
        chosen = policies.select(specs, self.runner.describe())
        app = [(name, spec) for name, spec in chosen if app_only(spec)]
        chosen = [(name, spec) for name, spec in chosen if not app_only(spec)]
        tools = [build_tool(spec, self.runner, policies, name=name) for name, spec in chosen]
        if self.pin is not None:
            self.pin.mark(tools, [spec["name"] for _, spec in chosen])
        ensure_unique_names(tools)
        app_tools = [build_tool(spec, self.runner, policies, name=name) for name, spec in app]
        return Listing(tools, dict(chosen), fresh_until, app_tools)

    async def relist(self) -> Listing:
        return await self.list(strict=False)


def _fresh_until(ttl_ms: int | None, started: float) -> float | None:
    """When a listing goes stale (``time.monotonic()``): its shortest page ``ttlMs`` (capped as the SDK
    caps it) after `started`. Hints count on the 2026-07-28 revision only. ``cacheScope`` decides who
    else may reuse a listing: a list is one client with one set of credentials, so both scopes are
    fresh for it."""
    from mcp.client.caching import MAX_TTL_MS

    return started + min(ttl_ms, MAX_TTL_MS) / 1000 if ttl_ms else None
