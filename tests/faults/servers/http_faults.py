"""A stdlib HTTP "MCP server" with one misbehaviour per path (no SDK import).

Run: ``python http_faults.py PORT OTHER_PORT RECORD_FILE``. It listens on 127.0.0.1:PORT and, as a second
origin, 127.0.0.1:OTHER_PORT. Every request either port gets is appended to RECORD_FILE as one JSON line
(port, method, path, headers, body).

Paths on PORT (Streamable HTTP with JSON responses, stateless, unless said otherwise):

/mcp          a working server: tools `echo`, `strict`, `sleep`, `cut`; GET gives 405 (no stream)
/status/NNN   answers every request with HTTP NNN (401 and 403 with WWW-Authenticate, 404, 405, 500)
/sse-404      an old SSE-only server: POST gives 404; GET opens the SSE stream (endpoint event, messages)
/sse-405      the same with 405 for POST
/slow-init    initialize (and server/discover) answered after 30 s
/slow-delete  a stateful server (initialize gives an ``Mcp-Session-Id``) whose DELETE hangs for 30 s
/stateful     the same, whose DELETE is answered at once
/redirect     307 to http://127.0.0.1:OTHER_PORT/mcp (another origin, which records what it got)
/echo-401     answers 401 with the reason phrase ``Denied for <its Authorization header>``
/echo-error   a working server, but tools/list gets a JSON-RPC error quoting the X-Api-Key header
/forgetful    a stateful server (as /stateful) that forgets its sessions before any call: a handshake-era
              tools/call gets HTTP 404 with a JSON-RPC error body, as the TypeScript SDK answers a session
              it does not know
/past-2026    a server upgraded past 2026-07-28: every 2026-07-28 request but server/discover gets -32022
              (unsupported protocol version); the handshake era is served
/upgraded     the same, whose server/discover lists only the later revision it serves now

Every MCP path speaks both protocol eras, deciding per request as 2026-07-28 does: a request whose
``params._meta`` carries ``io.modelcontextprotocol/protocolVersion`` is answered the 2026-07-28 way
(``resultType``, cache hints and a ``serverInfo`` stamp in the result; an error with the HTTP status the
revision gives it), anything else the handshake way; ``initialize`` and ``server/discover`` are both
answered. 2026-07-28 has no sessions, so /slow-delete and /stateful only have them for a handshake-era
client (it never sends DELETE otherwise).

Tool `cut` answers with an SSE response that stops in the middle of an event and closes the connection;
`cut_json` announces a 4000-byte JSON body, sends 30 bytes and closes the connection.
Tool `sleep` sleeps `seconds` before answering.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PORT = int(sys.argv[1])
OTHER_PORT = int(sys.argv[2])
RECORD = sys.argv[3]
_record_lock = threading.Lock()

MODERN_VERSION = "2026-07-28"
LATER_VERSION = "2099-01-01"  # what /past-2026 and /upgraded serve instead
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
SERVER_INFO = {"name": "http_faults", "version": "0"}
STAMP = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}  # what a 2026-07-28 result carries in `_meta`
UNCACHED = {"ttlMs": 0, "cacheScope": "private"}  # 2026-07-28 list and discover results must carry these
ERROR_STATUS = {-32601: 404, -32602: 400}  # the HTTP status of a 2026-07-28 error response
OPENING = ("initialize", "server/discover")  # a client's first request in each era

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
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
            "additionalProperties": False,
        },
    },
    {
        "name": "sleep",
        "description": "Sleep `seconds`.",
        "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}},
    },
    {"name": "cut", "description": "Stops mid-stream.", "inputSchema": {"type": "object"}},
    {"name": "cut_json", "description": "Stops mid-body.", "inputSchema": {"type": "object"}},
]

# SSE sessions of the /sse-* paths: session id -> queue of messages to push on the GET stream.
SSE_SESSIONS: dict[str, queue.Queue[dict[str, Any] | None]] = {}


def record(port: int, method: str, path: str, headers: dict[str, str], body: str) -> None:
    line = json.dumps({"port": port, "method": method, "path": path, "headers": headers, "body": body})
    with _record_lock, open(RECORD, "a", encoding="utf-8") as file:
        file.write(line + "\n")


def is_modern(message: dict[str, Any]) -> bool:
    """Whether a request is a 2026-07-28 one: `server/discover`, or its protocol version in `params._meta`."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return message.get("method") == "server/discover" or (isinstance(meta, dict) and VERSION_KEY in meta)


def is_refused(message: dict[str, Any]) -> bool:
    """Whether /past-2026 refuses `message`: a 2026-07-28 request other than ``server/discover``."""
    return "id" in message and message.get("method") != "server/discover" and is_modern(message)


def is_forgotten(message: dict[str, Any]) -> bool:
    """Whether /forgetful answers `message` as a session it does not know: a handshake-era tools/call."""
    return message.get("method") == "tools/call" and not is_modern(message)


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON-RPC response to `message` (None for a notification or a response)."""
    request_id = message.get("id")
    method = message.get("method")
    if request_id is None or method is None:
        return None
    modern = is_modern(message)
    if method == "initialize":
        version = (message.get("params") or {}).get("protocolVersion", "2025-06-18")
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": SERVER_INFO,
        }
    elif method == "server/discover":  # 2026-07-28: the client's first request, in place of initialize
        result = {"supportedVersions": [MODERN_VERSION], "capabilities": {"tools": {}}, **UNCACHED}
    elif method == "tools/list":
        result = {"tools": TOOLS, **(UNCACHED if modern else {})}
    elif method == "tools/call":
        params = message.get("params") or {}
        arguments = params.get("arguments") or {}
        name = params.get("name")
        if name == "sleep":
            time.sleep(float(arguments.get("seconds", 0)))
            text = "slept"
        elif name == "strict":
            text = f"n={arguments.get('n')}"
        else:
            text = str(arguments.get("message"))
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no method"}}
    if modern:
        result = {**result, "resultType": "complete", "_meta": STAMP}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> str:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length).decode() if length else ""

    def _send(
        self, status: int, body: bytes = b"", content_type: str = "application/json", **extra: str
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in extra.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def _handle(self, method: str) -> None:
        body = self._body() if method == "POST" else ""
        port = self.server.server_address[1]
        record(port, method, self.path, dict(self.headers.items()), body)
        path = self.path.split("?")[0]
        if port == OTHER_PORT:
            self._mcp(method, body)
        elif path.startswith("/status/"):
            status = int(path.rsplit("/", 1)[1])
            extra = {"WWW_Authenticate": 'Bearer realm="faults"'} if status == 401 else {}
            self._send(status, json.dumps({"error": f"status {status}"}).encode(), **extra)
        elif path == "/echo-401":
            self.send_response(401, f"Denied for {self.headers.get('Authorization')}")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/echo-error" and method == "POST" and '"tools/list"' in body:
            message = json.loads(body)
            key = self.headers.get("X-Api-Key")
            error = {"code": -32603, "message": f"key {key} is not allowed to list"}
            self._send(200, json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode())
        elif path == "/echo-error":
            self._mcp(method, body)
        elif path == "/forgetful" and method == "POST" and is_forgotten(json.loads(body)):
            message = json.loads(body)
            error = {"code": -32001, "message": "Session not found"}
            self._send(404, json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode())
        elif path == "/forgetful":
            self._mcp(method, body, session="forgetful-session")
        elif path == "/upgraded" and method == "POST" and json.loads(body).get("method") == "server/discover":
            message = json.loads(body)
            result = {"supportedVersions": [LATER_VERSION], "capabilities": {"tools": {}}, **UNCACHED}
            self._send(200, json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode())
        elif path in ("/past-2026", "/upgraded") and method == "POST" and is_refused(json.loads(body)):
            message = json.loads(body)
            refused = {"supported": [LATER_VERSION], "requested": MODERN_VERSION}
            error = {"code": -32022, "message": "Unsupported protocol version", "data": refused}
            self._send(200, json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode())
        elif path in ("/past-2026", "/upgraded"):
            self._mcp(method, body)
        elif path == "/redirect":
            self._send(307, b"", Location=f"http://127.0.0.1:{OTHER_PORT}/mcp")
        elif path in ("/sse-404", "/sse-405"):
            if method == "GET":
                self._sse_stream()
            else:
                self._send(404 if path == "/sse-404" else 405, b"not here")
        elif path == "/messages":
            self._sse_post(body)
        elif path == "/slow-init":
            if method == "POST" and json.loads(body or "{}").get("method") in OPENING:
                time.sleep(30)
            self._mcp(method, body)
        elif path == "/slow-delete":
            if method == "DELETE":
                time.sleep(30)
                self._send(200)
            else:
                self._mcp(method, body, session="slow-delete-session")
        elif path == "/stateful":
            self._mcp(method, body, session="stateful-session")
        elif path == "/mcp":
            self._mcp(method, body)
        else:
            self._send(404, b"no such path")

    def _mcp(self, method: str, body: str, session: str | None = None) -> None:
        if method == "GET":
            self._send(405, b"", Allow="POST, DELETE")
            return
        if method == "DELETE":
            self._send(200)
            return
        message = json.loads(body)
        params = message.get("params") or {}
        if message.get("method") == "tools/call" and params.get("name") == "cut":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b'event: message\ndata: {"jsonrpc": "2.0", "id": ')
            self.wfile.flush()
            self.close_connection = True
            return
        if message.get("method") == "tools/call" and params.get("name") == "cut_json":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4000")
            self.end_headers()
            self.wfile.write(b'{"jsonrpc": "2.0", "id": 1, "re')
            self.wfile.flush()
            self.close_connection = True
            return
        response = answer(message)
        if response is None:
            self._send(202)
        elif session is not None and message.get("method") == "initialize":
            self._send(200, json.dumps(response).encode(), Mcp_Session_Id=session)
        elif "error" in response and is_modern(message):
            self._send(ERROR_STATUS.get(response["error"]["code"], 200), json.dumps(response).encode())
        else:
            self._send(200, json.dumps(response).encode())

    def _sse_stream(self) -> None:
        session = uuid.uuid4().hex
        messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        SSE_SESSIONS[session] = messages
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            self.wfile.write(f"event: endpoint\ndata: /messages?session_id={session}\n\n".encode())
            self.wfile.flush()
            while True:
                try:
                    item = messages.get(timeout=0.5)
                except queue.Empty:
                    self.wfile.write(b": keepalive\n\n")
                    self.wfile.flush()
                    continue
                if item is None:
                    break
                self.wfile.write(f"event: message\ndata: {json.dumps(item)}\n\n".encode())
                self.wfile.flush()
        except OSError:
            pass
        finally:
            SSE_SESSIONS.pop(session, None)

    def _sse_post(self, body: str) -> None:
        session = self.path.split("session_id=", 1)[-1]
        messages = SSE_SESSIONS.get(session)
        if messages is None:
            self._send(404, b"no session")
            return
        self._send(202, b"Accepted", content_type="text/plain")
        response = answer(json.loads(body))
        if response is not None:
            messages.put(response)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512


def main() -> None:
    servers = [Server(("127.0.0.1", port), Handler) for port in (PORT, OTHER_PORT)]
    threads = [threading.Thread(target=server.serve_forever, daemon=True) for server in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main()
