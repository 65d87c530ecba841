"""The documented example: Claude lists a folder through the filesystem MCP server.

Needs ``pip install "cubepi[mcp,anthropic]"``, Node.js (for ``npx``) and ``ANTHROPIC_API_KEY``::

    python examples/agent_anthropic.py
"""

from __future__ import annotations

import os

import anyio

from cubepi.agent import Agent
from cubepi.mcp import load_mcp_tools_stdio
from cubepi.providers import AnthropicProvider, Model


async def main() -> None:
    os.makedirs("/tmp/sandbox", exist_ok=True)
    tools = await load_mcp_tools_stdio(
        command="npx", args=["-y", "@modelcontextprotocol/server-filesystem", "/tmp/sandbox"]
    )
    agent = Agent(
        provider=AnthropicProvider(api_key=os.environ["ANTHROPIC_API_KEY"]),
        model=Model(id="claude-sonnet-4-5-20250929", provider="anthropic"),
        tools=tools,
    )
    agent.subscribe(lambda e, s=None: None)  # a listener: e is the event, s the agent's state
    agent.subscribe(lambda e, s=None: print("  ·", e.type) if e.type.startswith("tool_execution") else None)
    answer = await agent.prompt("List files in /tmp/sandbox.")
    print(answer.text)


if __name__ == "__main__":
    anyio.run(main)
