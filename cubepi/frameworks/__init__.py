"""Hand cubepi tools to other agent frameworks: one module each, imported only when used.

```python
tool.to_langchain()       # langchain_core StructuredTool   (pip install "cubepi[langchain]")
tool.to_pydantic_ai()     # pydantic_ai.Tool                (pip install "cubepi[pydantic-ai]")
tool.to_openai_agents()   # agents.FunctionTool             (pip install "cubepi[openai-agents]")
```

Each module depends on the tool only through its public methods (`execute`, `execute_sync`,
`json_schema`, `to_openai`, ...), never on the rest of cubepi. See docs/frameworks.md.
"""

from __future__ import annotations

__all__: list[str] = []
