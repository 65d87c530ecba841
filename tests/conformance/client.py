"""Conformance client on cubepi's public API: tools loaded with `load_mcp_tools_http`, called with `execute`.

Run by the suite: `conformance client --command "python tests/conformance/client.py" --scenario NAME`.
OAuth comes from the mcp SDK's providers (`_oauth.py`), passed as `auth=` the way a user would.
Exits non-zero when loading fails or one of the scenario's calls comes back as an error.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import anyio
from _oauth import oauth_for
from _scenarios import ASKS_FOR_INPUT, accept_untouched, calls_for, scenario_and_url

from cubepi import AgentTool
from cubepi.mcp import load_mcp_tools_http


async def call(tool: AgentTool, arguments: dict[str, Any]) -> None:
    result = await tool.execute(arguments)
    logging.info("%s -> %s", tool.name, result.content)
    if result.is_error:
        sys.exit(f"{tool.name} answered with an error: {result.content}")


async def main() -> None:
    scenario, url = scenario_and_url()
    options: dict[str, Any] = {}
    if scenario.startswith("auth/"):
        options["auth"] = await oauth_for(scenario, url)
    if scenario in ASKS_FOR_INPUT:
        options["elicitation_callback"] = accept_untouched
    async with await load_mcp_tools_http(url, **options) as tools:
        by_name = {tool.name: tool for tool in tools}
        for calls in calls_for(scenario, {tool.name: tool.input_schema for tool in tools}):
            async with anyio.create_task_group() as group:
                for name, arguments in calls:
                    group.start_soon(call, by_name[name], arguments)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(relativeCreated)d %(name)s %(message)s")
    anyio.run(main)
