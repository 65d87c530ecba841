"""Claude lists a folder through the filesystem MCP server: the example of docs/loading-mcp-tools.md.

Needs ``pip install "cubepi[mcp,anthropic]"``, Node.js (for ``npx``) and ``ANTHROPIC_API_KEY``; it lists the
folder ``sandbox`` (made if missing) of the directory it runs in::

    python examples/agent_anthropic.py
"""

import os

import anyio

from cubepi.agent import Agent, AgentEvent
from cubepi.mcp import load_mcp_tools_stdio
from cubepi.providers import Model
from cubepi.providers.anthropic import AnthropicProvider

SANDBOX = os.path.abspath("sandbox")  # the folder the server may read and write


def show(event: AgentEvent) -> None:
    if event.type == "tool_execution_start":
        print(f"  -> {event.tool_name}({event.arguments})")


async def main() -> None:
    os.makedirs(SANDBOX, exist_ok=True)
    tools = await load_mcp_tools_stdio(
        command="npx",
        args=["-y", "@modelcontextprotocol/server-filesystem", SANDBOX],
        timeout=30.0,
    )
    agent = Agent(
        provider=AnthropicProvider(api_key=os.environ["ANTHROPIC_API_KEY"]),
        model=Model(id="claude-sonnet-4-5-20250929", provider="anthropic"),
        tools=tools,
    )
    agent.subscribe(show)
    answer = await agent.prompt(f"List the files in {SANDBOX}.")
    print(answer.text)
    await tools.aclose()


if __name__ == "__main__":
    anyio.run(main)
