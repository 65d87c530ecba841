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
from _scenarios import (
    ASKS_FOR_INPUT,
    DECLARES_EVERY_CAPABILITY,
    READS_OFFERS,
    accept_untouched,
    calls_for,
    decline_sampling,
    no_roots,
    scenario_and_url,
)

from cubepi import AgentTool
from cubepi.mcp import MCPToolList, load_mcp_tools_http


async def call(tool: AgentTool, arguments: dict[str, Any]) -> None:
    result = await tool.execute(arguments)
    logging.info("%s -> %s", tool.name, result.content)
    if result.is_error:
        sys.exit(f"{tool.name} answered with an error: {result.content}")


async def read_offers(tools: MCPToolList) -> None:
    """Read every resource and get every prompt, through the list's API as an application would."""
    for resource in await tools.list_resources():
        logging.info("%s -> %s", resource.uri, await tools.read_resource(str(resource.uri)))
    for prompt in await tools.list_prompts():
        arguments = {argument.name: "sample" for argument in prompt.arguments or () if argument.required}
        logging.info("%s -> %s", prompt.name, await tools.get_prompt(prompt.name, arguments))


async def main() -> None:
    scenario, url = scenario_and_url()
    options: dict[str, Any] = {}
    if scenario.startswith("auth/"):
        options["auth"] = await oauth_for(scenario, url)
    if scenario in ASKS_FOR_INPUT:
        options["elicitation_callback"] = accept_untouched
    if scenario in DECLARES_EVERY_CAPABILITY:
        options.update(sampling_callback=decline_sampling, list_roots_callback=no_roots)
    async with await load_mcp_tools_http(url, **options) as tools:
        by_name = {tool.name: tool for tool in tools}
        for calls in calls_for(scenario, {tool.name: tool.input_schema for tool in tools}):
            async with anyio.create_task_group() as group:
                for name, arguments in calls:
                    group.start_soon(call, by_name[name], arguments)
        if scenario in READS_OFFERS:
            await read_offers(tools)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(relativeCreated)d %(name)s %(message)s")
    anyio.run(main)
