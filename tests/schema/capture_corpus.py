"""Capture the tool schemas a real MCP server advertises into ``tests/schema/corpus/<label>.json``.

The output is ``{"server": "<package>@<version>", "captured": "<YYYY-MM-DD>", "tools": [...]}`` where each
tool is the raw ``tools/list`` entry (name, description, inputSchema, outputSchema, annotations, ...) exactly
as the server sent it. Environment values given with ``--env`` reach the server only; they are never written.

Re-run (install the servers in a scratch folder outside the repo first, e.g. ``npm install
@modelcontextprotocol/server-memory`` in /work/capture, ``pip install mcp-server-time`` in a separate venv)::

    python tests/schema/capture_corpus.py memory @modelcontextprotocol/server-memory@2026.8.31 -- \\
        node /work/capture/node_modules/@modelcontextprotocol/server-memory/dist/index.js
    python tests/schema/capture_corpus.py firecrawl firecrawl-mcp@3.22.2 --env FIRECRAWL_API_KEY=dummy -- \\
        node /work/capture/node_modules/firecrawl-mcp/dist/index.js
    python tests/schema/capture_corpus.py time mcp-server-time@2026.10.19 -- \\
        /work/capture/pyvenv/bin/mcp-server-time

``tests/schema/corpus/README.md`` lists how every file was captured.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"


async def list_tools(command: str, args: list[str], env: dict[str, str]) -> list[dict[str, Any]]:
    """Start the server over stdio and return every tool it lists, following ``nextCursor``."""
    params = StdioServerParameters(command=command, args=args, env={**os.environ, **env})
    tools: list[dict[str, Any]] = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        cursor: str | None = None
        while True:
            result = await session.list_tools(cursor=cursor)
            tools.extend(t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in result.tools)
            cursor = result.nextCursor
            if not cursor:
                return tools


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("label", help="output file stem: corpus/<label>.json")
    parser.add_argument("server", help="package@version recorded in the file")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="extra server env")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before giving up")
    parser.epilog = "The server command follows a literal --: ... -- COMMAND [ARGS...]"
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    ns = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if not command:
        parser.error("missing server command after --")
    env = dict(item.split("=", 1) for item in ns.env)

    tools = asyncio.run(asyncio.wait_for(list_tools(command[0], command[1:], env), ns.timeout))
    doc = {"server": ns.server, "captured": datetime.date.today().isoformat(), "tools": tools}
    CORPUS_DIR.mkdir(parents=True, exist_ok=True)
    out = CORPUS_DIR / f"{ns.label}.json"
    out.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{out}: {len(tools)} tools from {ns.server}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
