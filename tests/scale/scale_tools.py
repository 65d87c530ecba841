"""Tools and helpers the scale tests send to other processes (importable there: tests/scale on the path)."""

from __future__ import annotations

import os
import pickle
import sys
from typing import Any

from cubepi import AgentTool, AgentToolResult, tool

HERE = os.path.dirname(os.path.abspath(__file__))


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@tool
async def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


def call(tools: list[AgentTool], name: str, arguments: dict[str, Any]) -> str:
    """Call the tool `name` of `tools` (in the process this runs in) and return its text."""
    found = next(item for item in tools if item.name == name)
    result: AgentToolResult = found.execute_sync(arguments)
    if result.is_error:
        raise RuntimeError(result.text)
    return result.text


def call_one(item: AgentTool, arguments: dict[str, Any]) -> str:
    """`item`'s text for `arguments`, with the pid of the process that called."""
    return call([item], item.name, arguments)


def worker_env() -> dict[str, str]:
    """The environment of a worker process: this directory importable, as it is for the tests."""
    path = os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def main() -> None:
    """``python scale_tools.py``: read a pickled (tools, name, arguments) on stdin, call, print the text."""
    tools, name, arguments = pickle.loads(sys.stdin.buffer.read())
    try:
        print(call(tools, name, arguments))
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
