"""An agent loop with no network and no API key: FauxProvider plays the model.

Runs as written (``python examples/agent_offline.py``); swap the provider for ``AnthropicProvider`` or
``OpenAIProvider`` and the model for a real one, and the rest stays the same. The answer is printed as it
streams, piece by piece (FauxProvider streams its script word by word, as a model would).
"""

from __future__ import annotations

import anyio

from cubepi import tool
from cubepi.agent import (
    Agent,
    AgentEnd,
    BlockCall,
    MessageEnd,
    MessageUpdate,
    ToolCallContext,
    ToolExecutionEnd,
)
from cubepi.providers import FauxProvider, Model, ProviderRequest, TextDelta, ToolCall, ToolResultMessage


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def weather(city: str) -> str:
    """Today's weather in a city."""
    await anyio.sleep(0.1)
    return f"Sunny in {city}, 21 °C"


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def answer_from_results(request: ProviderRequest) -> str:
    """The scripted model's last reply: read the tool results it was sent."""
    results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
    return "Here is what I found:\n" + "\n".join(
        f"- {m.tool_name}: {'ERROR ' if m.is_error else ''}{m.text}" for m in results
    )


def before(ctx: ToolCallContext) -> BlockCall | None:
    if ctx.tool.name == "weather" and ctx.arguments.get("city") == "Atlantis":
        return BlockCall("Atlantis is not on the map")
    return None


def approve(ctx: ToolCallContext) -> bool:
    print(f"  approve {ctx.tool.name}({dict(ctx.arguments)})? no")
    return False


async def main() -> None:
    model = FauxProvider(
        [
            # Turn 1: the "model" asks for four calls; they run concurrently.
            [
                ToolCall("1", "add", {"a": 2, "b": 40}),
                ToolCall("2", "weather", {"city": "Paris"}),
                ToolCall("3", "weather", {"city": "Atlantis"}),
                ToolCall("4", "delete_file", {"path": "/etc/hosts"}),
            ],
            # Turn 2: it answers from the results.
            answer_from_results,
        ]
    )
    agent = Agent(
        provider=model,
        model=Model(id="faux", provider="faux"),
        tools=[add, weather, delete_file],
        system_prompt="You are a helpful assistant.",
        before_tool_call=before,
        approve=approve,
    )
    question = "Add 2 and 40, check the weather in Paris and Atlantis, delete /etc/hosts."
    async for event in agent.stream(question):  # or agent.subscribe(listener) + await agent.prompt(question)
        if isinstance(event, MessageUpdate) and isinstance(event.delta, TextDelta):
            print(event.delta.text, end="", flush=True)  # the answer, as it is written
        elif isinstance(event, MessageEnd) and event.message.role == "assistant" and event.message.text:
            print()
        elif isinstance(event, ToolExecutionEnd):
            print(f"  [{event.tool_name}] {'error' if event.is_error else 'ok'}")
        elif isinstance(event, AgentEnd):
            print(f"({len(event.messages)} messages added to the transcript)")


if __name__ == "__main__":
    anyio.run(main)
