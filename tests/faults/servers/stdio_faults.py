"""A raw JSON-RPC MCP server over stdio that misbehaves on request (no SDK import: starts in ~20 ms).

It speaks both protocol eras, deciding per request as 2026-07-28 does: a request whose ``params._meta``
carries ``io.modelcontextprotocol/protocolVersion`` is answered the 2026-07-28 way (``resultType`` and a
``serverInfo`` stamp in the result), anything else the handshake way; ``initialize`` and
``server/discover`` are both answered. Every mode misbehaves the same in both eras.

Run: ``python stdio_faults.py MODE [--record FILE] [--size N]``. Modes:

ok            behaves: tools `echo` (message: str) and `strict` (n: int, no extra fields), `env`, `sleep`
exit          prints to stderr and exits with code 3 before reading anything
crash_call    answers initialize (or discover) and list, then dies (exit 7, stderr message) on tools/call
hang_init     reads requests but never answers initialize or server/discover
hang_list     never answers tools/list
crash_list    answers initialize (or discover), then dies (exit 5, stderr message) on tools/list
hang_call     never answers tools/call
deaf_call     on tools/call stops reading stdin and sleeps (ignores EOF, must be killed)
noise         writes non-JSON lines to stdout around every answer, and one more when stdin closes
big           answers tools/call with one text block of --size MB
wrong_shape   answers tools/call with a result whose `content` is not a list
notify        sends unknown notifications (and a known one with bad params) before each answer
names         lists tools with duplicate, empty and spaced names
cursor_same   answers every tools/list page with the same nextCursor
slow_start    sleeps --size seconds before reading anything (a cold npx start)

`--record FILE` appends every message received (one JSON object a line) to FILE.
`--print-env NAME` prints ``NAME=<value>`` of its environment to stderr at start (a chatty server).
`--past-2026 FILE`: once FILE exists the server no longer serves 2026-07-28 (upgraded to a later revision, the
handshake era still served): discover lists only `LATER_VERSION`, any other request in the 2026-07-28 envelope
is refused with -32022 (unsupported protocol version).
`--hang-init-if FILE`: once FILE exists, initialize and server/discover are never answered (as `hang_init`).
`--refuse-discover`: server/discover is refused with -32022 naming only handshake-era versions (a
handshake-era server that knows the method), in any mode.
`--ignore-discover`: server/discover is never answered (a handshake-era server that ignores unknown methods).
`--deaf-at-eof`: once its stdin closes after a tools/call, the server appends `{"eof": true}` to the
`--record` file and sleeps (ignores the EOF, must be killed), in any mode.
`--deaf-when-stuck`: once its stdin closes after it left an initialize or server/discover unanswered
(`hang_init`, `--hang-init-if`), the server sleeps (ignores the EOF, must be killed).
`--say-on-term`: on SIGTERM the server writes ``stdio_faults: terminated`` to stderr, then exits, in any mode.
`--stderr-line N` writes one line of N digits (``0123456789`` repeated) to stderr at start, in any mode.
`--flood MB` writes MB megabytes to stderr at start and during every call, in any mode.
`--secret-at-cut NAME WINDOW` (mode exit) last prints the value of NAME so that the last WINDOW bytes of
stderr begin 2 characters into it (a tail window cutting the secret).
`--grandchild FILE` starts a child in the server's process group that sleeps forever (stdout and stderr
inherited, as `npx` starts `node`) and appends its pid to FILE; the server still exits when its stdin closes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
OPTIONS = sys.argv[2:]


def option(name: str, default: str | None = None) -> str | None:
    if name in OPTIONS:
        return OPTIONS[OPTIONS.index(name) + 1]
    return default


RECORD = option("--record")
SIZE_MB = float(option("--size", "1") or "1")
FLOOD_MB = float(option("--flood", "0") or "0")

MODERN_VERSION = "2026-07-28"
LATER_VERSION = "2099-01-01"
PAST_2026 = option("--past-2026")
HANG_INIT_IF = option("--hang-init-if")
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
SERVER_INFO = {"name": "stdio_faults", "version": "0"}
STAMP = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}  # what a 2026-07-28 result carries in `_meta`
UNCACHED = {"ttlMs": 0, "cacheScope": "private"}  # 2026-07-28 list and discover results must carry these

TOOLS = [
    {
        "name": "echo",
        "description": "Echo the message back.",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
    },
    {
        "name": "strict",
        "description": "Takes one integer, nothing else.",
        "inputSchema": {
            "type": "object",
            "properties": {"n": {"type": "integer"}, "label": {"type": "string", "maxLength": 1000}},
            "required": ["n"],
            "additionalProperties": False,
        },
    },
    {"name": "env", "description": "The server's environment.", "inputSchema": {"type": "object"}},
    {
        "name": "sleep",
        "description": "Sleep `seconds`.",
        "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}},
    },
]

WEIRD_TOOLS = [
    {"name": "dup", "description": "first dup", "inputSchema": {"type": "object"}},
    {"name": "dup", "description": "second dup", "inputSchema": {"type": "object"}},
    {"name": "", "description": "empty name", "inputSchema": {"type": "object"}},
    {"name": "has space", "description": "spaced name", "inputSchema": {"type": "object"}},
    {"name": "echo", "description": "a normal one", "inputSchema": {"type": "object"}},
]

out = sys.stdout.buffer


def send(message: dict[str, object]) -> None:
    if MODE == "noise":
        out.write(b"this is not JSON\n{broken json\n\n")
    out.write(json.dumps(message).encode() + b"\n")
    if MODE == "noise":
        out.write(b"[1, 2, 3]\nDEBUG: sent a reply\n")
    out.flush()


def is_modern(params: object) -> bool:
    """Whether a request's params carry the 2026-07-28 envelope (its protocol version in `_meta`)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and VERSION_KEY in meta


def reply(request_id: object, result: dict[str, object], modern: bool = False) -> None:
    if modern:
        result = {**result, "resultType": "complete", "_meta": STAMP}
    if MODE == "notify":
        send({"jsonrpc": "2.0", "method": "notifications/made_up", "params": {"x": 1}})
        send({"jsonrpc": "2.0", "method": "vendor/whatever"})
        send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"bogus": True}})
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}})
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def flood() -> None:
    chunk = b"E" * 1023 + b"\n"
    for _ in range(int(FLOOD_MB * 1024)):
        sys.stderr.buffer.write(chunk)
    sys.stderr.buffer.write(b"flood: done\n")
    sys.stderr.flush()


def text(value: str) -> dict[str, object]:
    return {"content": [{"type": "text", "text": value}], "isError": False}


def call(request_id: object, params: dict[str, object]) -> None:
    if FLOOD_MB:
        flood()
    modern = is_modern(params)
    name = params.get("name")
    arguments = params.get("arguments") or {}
    assert isinstance(arguments, dict)
    if MODE == "crash_call":
        sys.stderr.write("crash_call: segfault-ish failure while calling\n")
        sys.stderr.flush()
        os._exit(7)
    if MODE in ("hang_call",):
        return
    if MODE == "deaf_call":
        while True:
            time.sleep(3600)
    if MODE == "big":
        reply(request_id, text("x" * int(SIZE_MB * 1024 * 1024)), modern)
        return
    if MODE == "wrong_shape":
        reply(request_id, {"content": "this should be a list", "isError": "maybe"}, modern)
        return
    if name == "echo":
        reply(request_id, text(str(arguments.get("message"))), modern)
    elif name == "strict":
        reply(request_id, text(f"n={arguments.get('n')}"), modern)
    elif name == "env":
        reply(request_id, text(json.dumps(dict(os.environ))), modern)
    elif name == "sleep":
        time.sleep(float(arguments.get("seconds", 0)))
        reply(request_id, text("slept"), modern)
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"no tool {name}"}})


def said_on_term(signum: int, frame: object) -> None:
    sys.stderr.write("stdio_faults: terminated\n")
    sys.stderr.flush()
    os._exit(128 + signum)


def main() -> None:
    if option("--print-env"):
        name = option("--print-env") or ""
        sys.stderr.write(f"stdio_faults: using {name}={os.environ.get(name)}\n")
        sys.stderr.flush()
    if "--say-on-term" in OPTIONS:
        signal.signal(signal.SIGTERM, said_on_term)
    if option("--stderr-line"):
        size = int(option("--stderr-line") or "0")
        sys.stderr.write(("0123456789" * (size // 10 + 1))[:size] + "\n")
        sys.stderr.flush()
    if option("--grandchild"):
        child = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(3600)"])
        with open(option("--grandchild") or "", "a", encoding="utf-8") as pids:
            pids.write(f"{child.pid}\n")
    if MODE == "exit":
        sys.stderr.write("stdio_faults: starting\nstdio_faults: FATAL cannot open config\n")
        if option("--secret-at-cut"):
            value = os.environ.get(option("--secret-at-cut") or "", "")
            window = int(OPTIONS[OPTIONS.index("--secret-at-cut") + 2])
            sys.stderr.write(f"token={value}\n" + "." * (window - len(value)) + "\n")
        sys.stderr.flush()
        sys.exit(3)
    if FLOOD_MB:
        flood()
    if MODE == "slow_start":
        time.sleep(SIZE_MB)
    record = open(RECORD, "a", encoding="utf-8") if RECORD else None  # noqa: SIM115
    called = stuck = False
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        message = json.loads(line)
        if record is not None:
            record.write(json.dumps(message) + "\n")
            record.flush()
        method = message.get("method")
        request_id = message.get("id")
        if request_id is None:
            continue  # a notification
        modern = is_modern(message.get("params"))
        past = PAST_2026 is not None and os.path.exists(PAST_2026)
        hang_init = MODE == "hang_init" or (HANG_INIT_IF is not None and os.path.exists(HANG_INIT_IF))
        if method == "server/discover" and "--ignore-discover" in OPTIONS:
            continue
        if method == "server/discover" and "--refuse-discover" in OPTIONS:
            refused = {"supported": ["2025-06-18"], "requested": MODERN_VERSION}
            error = {"code": -32022, "message": "Unsupported protocol version", "data": refused}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})
        elif past and modern and method != "server/discover":
            refused = {"supported": [LATER_VERSION], "requested": MODERN_VERSION}
            error = {"code": -32022, "message": "Unsupported protocol version", "data": refused}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})
        elif method == "initialize":
            if hang_init:
                stuck = True
                continue
            version = message.get("params", {}).get("protocolVersion", "2025-06-18")
            reply(
                request_id,
                {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": SERVER_INFO},
            )
        elif method == "server/discover":  # 2026-07-28: the client's first request, in place of initialize
            if hang_init:
                stuck = True
                continue
            served = LATER_VERSION if past else MODERN_VERSION
            discovered = {"supportedVersions": [served], "capabilities": {"tools": {}}, **UNCACHED}
            reply(request_id, discovered, True)
        elif method == "tools/list":
            if MODE == "hang_list":
                continue
            if MODE == "crash_list":
                sys.stderr.write("crash_list: failure while listing\n")
                sys.stderr.flush()
                os._exit(5)
            cache = UNCACHED if modern else {}
            if MODE == "cursor_same":
                reply(request_id, {"tools": TOOLS[:1], "nextCursor": "page-2", **cache}, modern)
            else:
                reply(request_id, {"tools": WEIRD_TOOLS if MODE == "names" else TOOLS, **cache}, modern)
        elif method == "tools/call":
            called = True
            call(request_id, message.get("params") or {})
        elif method == "ping":
            reply(request_id, {}, modern)
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no method"}})
    if "--deaf-when-stuck" in OPTIONS and stuck:
        while True:
            time.sleep(3600)
    if "--deaf-at-eof" in OPTIONS and called:
        if record is not None:
            record.write(json.dumps({"eof": True}) + "\n")
            record.flush()
        while True:
            time.sleep(3600)
    if MODE == "noise":  # stdin closed: the client is shutting down; a last non-JSON line as we exit
        out.write(b"goodbye (not JSON)\n")
        out.flush()


if __name__ == "__main__":
    main()
