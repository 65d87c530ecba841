"""The agent loop: `Agent`, its typed events, hooks and approval.

```python
agent = Agent(provider=FauxProvider(["hello"]), model=Model(id="faux", provider="faux"), tools=tools)
unsubscribe = agent.subscribe(lambda e, s=None: print(e.type))
answer = await agent.prompt("Say hello.")
async for event in agent.stream("Again."):   # the same events, as an async iterator
    ...
```
"""

from __future__ import annotations

from ._agent import Agent, AgentState, Listener
from ._events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolInputRequested,
    TurnEnd,
    TurnStart,
)
from ._hooks import (
    AfterToolCall,
    ApprovalCallback,
    BeforeToolCall,
    BlockCall,
    ReplaceArguments,
    ToolCallContext,
)

__all__ = [
    "AfterToolCall",
    "Agent",
    "AgentEnd",
    "AgentEvent",
    "AgentStart",
    "AgentState",
    "ApprovalCallback",
    "BeforeToolCall",
    "BlockCall",
    "Listener",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "ReplaceArguments",
    "ToolCallContext",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "ToolInputRequested",
    "TurnEnd",
    "TurnStart",
]
