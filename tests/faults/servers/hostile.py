"""A raw MCP server (no SDK import) whose tools attack the client's transport bounds, over stdio or HTTP.

Run: ``python hostile.py stdio`` (JSON-RPC lines on stdin/stdout) or ``python hostile.py http PORT``
(Streamable HTTP on 127.0.0.1:PORT). Raw, because each misbehaviour is one the SDK's servers would never
commit. Both protocol eras are spoken, decided per request as 2026-07-28 does: a request whose
``params._meta`` carries ``io.modelcontextprotocol/protocolVersion`` is answered the 2026-07-28 way.

Tools:

echo        answers `message` (the next call still works)
endless     a response that never ends: over stdio a line without a newline, over HTTP a JSON body with
            no length, written until the client goes away
big_text    one text block of `mb` MB
big_event   over HTTP, the same as one event of an SSE response (over stdio, as big_text)
blocks      `count` empty text blocks
progress    progress notifications every 20 ms, forever, and never a result

HTTP paths: ``/mcp`` (stateless) and ``/session``, which gives a handshake-era client an
``Mcp-Session-Id`` and answers its closing ``DELETE`` one byte a second, forever.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODERN_VERSION = "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
SERVER_INFO = {"name": "hostile", "version": "0"}
STAMP = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}
UNCACHED = {"ttlMs": 0, "cacheScope": "private"}
CHUNK = b"x" * 65536


def _tool(name: str, **properties: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {key: {"type": kind} for key, kind in properties.items()}}
    return {"name": name, "description": f"The {name} misbehaviour.", "inputSchema": schema}


TOOLS = [
    _tool("echo", message="string"),
    _tool("endless"),
    _tool("big_text", mb="number"),
    _tool("big_event", mb="number"),
    _tool("blocks", count="integer"),
    _tool("progress"),
]


def is_modern(message: dict[str, Any]) -> bool:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return message.get("method") == "server/discover" or (isinstance(meta, dict) and VERSION_KEY in meta)


def response(message: dict[str, Any], result: dict[str, Any]) -> bytes:
    if is_modern(message):
        result = {**result, "resultType": "complete", "_meta": STAMP}
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()


def blocks(count: int, text: str = "") -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}] * count, "isError": False}


def answer(message: dict[str, Any]) -> bytes | None:
    """The plain answer to `message` (None: a notification, or a call answered by `stream_call`)."""
    method = message.get("method")
    if message.get("id") is None or method is None:
        return None
    if method == "initialize":
        version = (message.get("params") or {}).get("protocolVersion", "2025-06-18")
        return response(
            message, {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": SERVER_INFO}
        )
    if method == "server/discover":
        found = {"supportedVersions": [MODERN_VERSION], "capabilities": {"tools": {}}, **UNCACHED}
        return response(message, found)
    if method == "tools/list":
        return response(message, {"tools": TOOLS, **(UNCACHED if is_modern(message) else {})})
    if method == "ping":
        return response(message, {})
    if method == "tools/call":
        params = message.get("params") or {}
        arguments = params.get("arguments") or {}
        name = params.get("name")
        if name == "echo":
            return response(message, blocks(1, str(arguments.get("message"))))
        if name in ("big_text", "big_event"):
            return response(message, blocks(1, "x" * int(float(arguments.get("mb", 1)) * 1024 * 1024)))
        if name == "blocks":
            return response(message, blocks(int(arguments.get("count", 1))))
        return None
    error = {"code": -32601, "message": "no method"}
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode()


def progress_notes(message: dict[str, Any]) -> Iterator[bytes]:
    token = ((message.get("params") or {}).get("_meta") or {}).get("progressToken", "none")
    step = 0
    while True:
        step += 1
        params = {"progressToken": token, "progress": step, "message": "still working"}
        yield json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}).encode()
        time.sleep(0.02)


def endless_head(message: dict[str, Any]) -> bytes:
    return b'{"jsonrpc": "2.0", "id": ' + json.dumps(message["id"]).encode() + b', "result": {"x": "'


# -- stdio -------------------------------------------------------------------------------------------------


def serve_stdio() -> None:
    out = sys.stdout.buffer
    lock = threading.Lock()

    def send(data: bytes) -> None:
        with lock:
            out.write(data + b"\n")
            out.flush()

    def endless(message: dict[str, Any]) -> None:
        with lock:
            out.write(endless_head(message))
            while True:
                out.write(CHUNK)
                out.flush()

    def progress(message: dict[str, Any]) -> None:
        for note in progress_notes(message):
            send(note)

    behaviours: dict[str, Callable[[dict[str, Any]], None]] = {"endless": endless, "progress": progress}
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        message = json.loads(line)
        name = (message.get("params") or {}).get("name")
        if message.get("method") == "tools/call" and name in behaviours:
            threading.Thread(target=_quietly, args=(behaviours[name], message), daemon=True).start()
            continue
        data = answer(message)
        if data is not None:
            send(data)
    os._exit(0)  # stdin closed: the client is done; the writing threads end with the process


def _quietly(behaviour: Callable[[dict[str, Any]], None], message: dict[str, Any]) -> None:
    try:
        behaviour(message)
    except (BrokenPipeError, OSError):
        os._exit(0)


# -- Streamable HTTP ---------------------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, content_type: str, parts: Iterator[bytes]) -> None:
        """A body with no length, written until `parts` ends or the client goes away."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for part in parts:
                self.wfile.write(part)
                self.wfile.flush()
        except OSError:
            pass

    def do_GET(self) -> None:
        self._send(405, Allow="POST, DELETE")

    def do_DELETE(self) -> None:
        if self.path != "/session":
            self._send(200)
            return
        self.close_connection = True
        try:
            for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 1000000:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(1)
        except OSError:
            pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        message = json.loads(self.rfile.read(length) or b"{}")
        name = (message.get("params") or {}).get("name")
        if message.get("method") == "tools/call" and name == "endless":
            self._stream("application/json", _endless_body(message))
            return
        if message.get("method") == "tools/call" and name == "progress":
            self._stream("text/event-stream", (_event(note) for note in progress_notes(message)))
            return
        data = answer(message)
        if data is None:
            self._send(202)
        elif message.get("method") == "tools/call" and name == "big_event":
            self._stream("text/event-stream", iter([_event(data)]))
        elif self.path == "/session" and message.get("method") == "initialize":
            self._send(200, data, Mcp_Session_Id="hostile-session")
        else:
            self._send(200, data)


def _endless_body(message: dict[str, Any]) -> Iterator[bytes]:
    yield endless_head(message)
    while True:
        yield CHUNK


def _event(data: bytes) -> bytes:
    return b"event: message\ndata: " + data + b"\n\n"


def serve_http(port: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        serve_stdio()
    else:
        serve_http(int(sys.argv[2]))
