"""Conformance client on the raw mcp SDK: the baseline that says which scenarios the SDK itself passes.

Run by the suite: `conformance client --command "python tests/conformance/raw_client.py" --scenario NAME`.
`client.py` does the same through cubepi; a scenario this client fails is outside cubepi's reach.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
from _oauth import oauth_for
from _scenarios import ASKS_FOR_INPUT, accept_with_defaults, calls_for, scenario_and_url
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    scenario, url = scenario_and_url()
    async with AsyncExitStack() as stack:
        server: Any = url
        if scenario.startswith("auth/"):
            http = await stack.enter_async_context(httpx2.AsyncClient(auth=await oauth_for(scenario, url)))
            server = streamable_http_client(url, http_client=http)
        answer = accept_with_defaults if scenario in ASKS_FOR_INPUT else None
        client = await stack.enter_async_context(Client(server, mode="auto", elicitation_callback=answer))
        listed = await client.list_tools()

        async def call(name: str, arguments: dict[str, Any]) -> None:
            result = await client.call_tool(name, arguments)
            logging.info("%s -> %s", name, result.content)

        for calls in calls_for(scenario, {tool.name: tool.input_schema for tool in listed.tools}):
            async with anyio.create_task_group() as group:
                for name, arguments in calls:
                    group.start_soon(call, name, arguments)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(relativeCreated)d %(name)s %(message)s")
    anyio.run(main)
