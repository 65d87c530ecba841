"""A stdio relay to an MCP server that holds back its answers to ``server/discover`` while a file exists.

Run: ``python late_discover.py [--first-only] HOLD COMMAND [ARGS...]``. Every line the client writes goes on
to the server ``COMMAND`` at once; every line the server writes comes back at once, except an answer to
``server/discover``, which waits while the file ``HOLD`` exists. A server that is slow to answer the probe
but quick to answer a call looks like this to the client. With ``--first-only`` only the answer to the first
probe waits: a slow starter that took the probe after all and answers the next one at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any


def parsed(line: bytes) -> dict[str, Any]:
    """The JSON-RPC message on `line` ({} when it is none)."""
    try:
        message = json.loads(line)
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


def main() -> int:
    args = sys.argv[1:]
    first_only = args[:1] == ["--first-only"]
    args = args[1:] if first_only else args
    hold = Path(args[0])
    server = subprocess.Popen(args[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    probes: set[Any] = set()
    out = sys.stdout.buffer
    writing = threading.Lock()

    def emit(line: bytes) -> None:
        with writing:
            out.write(line)
            out.flush()

    def held(line: bytes) -> None:
        while hold.exists():
            time.sleep(0.02)  # the test's event reaches this process as a file
        emit(line)

    def forward(source: IO[bytes], sink: IO[bytes]) -> None:
        seen_probe = False
        for line in source:
            message = parsed(line)
            if message.get("method") == "server/discover" and not (first_only and seen_probe):
                probes.add(message.get("id"))
            seen_probe = seen_probe or message.get("method") == "server/discover"
            sink.write(line)
            sink.flush()
        sink.close()

    threading.Thread(target=forward, args=(sys.stdin.buffer, server.stdin), daemon=True).start()
    for line in server.stdout:
        message = parsed(line)
        if "method" not in message and message.get("id") in probes:
            threading.Thread(target=held, args=(line,), daemon=True).start()
        else:
            emit(line)
    return server.wait()


if __name__ == "__main__":
    sys.exit(main())
