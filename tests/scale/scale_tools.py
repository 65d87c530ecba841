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
    """Call the tool `name` of `tools` (in the process this runs in) and return its text.

    With ``SCALE_PROGRESS_FILE`` set, the first progress update the call gets creates that file.
    """
    found = next(item for item in tools if item.name == name)
    flag = os.environ.get("SCALE_PROGRESS_FILE")

    def on_update(update: object) -> None:
        if flag:
            with open(flag, "a"):
                pass

    result: AgentToolResult = found.execute_sync(arguments, on_update=on_update)
    if result.is_error:
        raise RuntimeError(result.text)
    return result.text


def call_one(item: AgentTool, arguments: dict[str, Any]) -> str:
    """`item`'s text for `arguments`, with the pid of the process that called."""
    return call([item], item.name, arguments)


class Caller:
    """An actor's state: a tool list, called through (Ray keeps one per actor process)."""

    def __init__(self, tools: list[AgentTool]) -> None:
        self.tools = tools

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        return call(self.tools, name, arguments)


def worker_env() -> dict[str, str]:
    """The environment of a worker process: this directory importable, as it is for the tests."""
    path = os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


MARK = "CUBEPI_SCALE_MARK"


def marked_processes(mark: str) -> list[Any]:
    """The running processes (psutil) whose environment has ``CUBEPI_SCALE_MARK=mark``: the stdio servers
    a test's tools started, wherever they were started."""
    import psutil

    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(MARK) == mark and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            continue
    return found


def main() -> None:
    """``python scale_tools.py``: read a pickled (tools, name, arguments) on stdin, call, print the text."""
    tools, name, arguments = pickle.loads(sys.stdin.buffer.read())
    try:
        print(call(tools, name, arguments))
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
