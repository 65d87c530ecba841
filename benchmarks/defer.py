"""How much a deferred catalog saves: the exported tool definitions of a 60-tool catalog, direct vs deferred.

Run: ``python benchmarks/defer.py`` (uses the real tool schemas captured in ``tests/schema/corpus``).
Tokens are approximated as bytes / 4, the usual rule of thumb for JSON in English-language tokenizers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cubepi import AgentTool, AgentToolResult, defer_tools

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "schema" / "corpus"


def corpus_tools(limit: int) -> list[AgentTool]:
    """The first `limit` tools of the captured corpus, as AgentTools that are never called."""

    async def never(params: BaseModel, on_update: Any) -> AgentToolResult:
        raise AssertionError("the benchmark does not call tools")

    tools: list[AgentTool] = []
    seen: set[str] = set()
    for path in sorted(CORPUS.glob("*.json")):
        for raw in json.loads(path.read_text())["tools"]:
            if raw["name"] in seen:
                continue
            seen.add(raw["name"])
            tools.append(
                AgentTool(
                    name=raw["name"],
                    description=raw.get("description") or "",
                    parameters=lambda: BaseModel,
                    run=never,
                    input_schema=raw["inputSchema"],
                    origin=path.stem,
                )
            )
            if len(tools) == limit:
                return tools
    return tools


def size(definitions: list[dict[str, Any]], extra: str = "") -> int:
    return len(json.dumps(definitions, separators=(",", ":")).encode()) + len(extra.encode())


def main() -> None:
    tools = corpus_tools(60)
    if len(tools) < 60:
        sys.exit(f"the corpus in {CORPUS} holds only {len(tools)} distinct tools; 60 are needed")
    deferred = defer_tools(tools)
    print(f"{len(tools)} tools from {len({t.origin for t in tools})} servers in {CORPUS.name}/")
    header = ("export", "direct bytes", "deferred bytes", "~tokens direct", "~tokens deferred", "ratio")
    print("".join(f"{h:<14}" if i == 0 else f"{h:>18}" for i, h in enumerate(header)))
    for label, export in (
        ("anthropic", lambda t: t.to_anthropic()),
        ("openai", lambda t: t.to_openai()),
        ("openai strict", lambda t: t.to_openai(strict=True)),
    ):
        direct = size([export(t) for t in tools])
        small = size([export(t) for t in deferred.tools], deferred.system_prompt)
        print(
            f"{label:<14}{direct:>14,}{small:>16,}{direct // 4:>16,}{small // 4:>18,}{small / direct:>8.3f}"
        )


if __name__ == "__main__":
    main()
