"""The streaming wire formats, written as the APIs write them, and a live server that streams them.

`anthropic_events(message)` is a Messages API response (``anthropic.types.Message`` JSON) as its SSE
event stream (message_start, content_block_start/delta/stop, message_delta, message_stop);
`openai_chunks(completion)` a ``ChatCompletion`` as its ``chat.completion.chunk`` stream ending in
``data: [DONE]``. Text, thinking and arguments are cut into small pieces, as the APIs send them.

`stream_server(responses)` serves scripted responses over real HTTP (chunked, one connection each): a response
is a list of frames, `Hold` markers (the server stops there until the test releases it) and `CUT` (the server
drops the connection mid-body).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from conftest import plain_http_server

PIECE = 5


def pieces(text: str, size: int = PIECE) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    body = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {body}\n\n".encode()


def anthropic_event(data: dict[str, Any]) -> bytes:
    return sse(data["type"], data)


def anthropic_events(message: dict[str, Any]) -> list[bytes]:
    """The SSE frames the Messages API streams for `message`."""
    usage = message.get("usage") or {}
    frames = [
        anthropic_event(
            {
                "type": "message_start",
                "message": {
                    **message,
                    "content": [],
                    "stop_reason": None,
                    "usage": {**usage, "output_tokens": 1},
                },
            }
        )
    ]
    for index, block in enumerate(message["content"]):
        frames += _anthropic_block(index, block)
    frames.append(
        anthropic_event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": message.get("stop_reason"), "stop_sequence": None},
                "usage": {"output_tokens": usage.get("output_tokens", 0)},
            }
        )
    )
    frames.append(anthropic_event({"type": "message_stop"}))
    return frames


def _anthropic_block(index: int, block: dict[str, Any]) -> list[bytes]:
    kind = block["type"]
    frames = []
    if kind == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": part} for part in pieces(block["text"])]
    elif kind == "tool_use":
        start = {**block, "input": {}}
        encoded = json.dumps(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": ""}]
        deltas += [{"type": "input_json_delta", "partial_json": part} for part in pieces(encoded)]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": part} for part in pieces(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    else:  # redacted_thinking arrives whole
        start, deltas = block, []
    frames.append(anthropic_event({"type": "content_block_start", "index": index, "content_block": start}))
    frames += [
        anthropic_event({"type": "content_block_delta", "index": index, "delta": delta}) for delta in deltas
    ]
    frames.append(anthropic_event({"type": "content_block_stop", "index": index}))
    return frames


def openai_chunks(completion: dict[str, Any]) -> list[bytes]:
    """The ``data:`` lines Chat Completions streams for `completion` (usage included, then ``[DONE]``)."""
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: Any = None) -> bytes:
        choices = (
            [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        )
        return sse(
            None,
            {
                "id": completion["id"],
                "object": "chat.completion.chunk",
                "created": completion["created"],
                "model": completion["model"],
                "system_fingerprint": completion.get("system_fingerprint"),
                "choices": choices,
                "usage": usage,
            },
        )

    frames = [chunk({"role": "assistant", "content": "", "refusal": None})]
    if message.get("content"):
        frames += [chunk({"content": part}) for part in pieces(message["content"])]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        first = {"index": index, "id": call["id"], "type": "function"}
        start = {**first, "function": {"name": function["name"], "arguments": ""}}
        frames.append(chunk({"tool_calls": [start]}))
        frames += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            for part in pieces(function["arguments"])
        ]
    frames.append(chunk({}, choice["finish_reason"]))
    frames.append(chunk(None, usage=completion.get("usage")))
    frames.append(sse(None, "[DONE]"))
    return frames


def stream_body(path: str, reply: dict[str, Any]) -> bytes:
    """The whole streamed body answering a request to `path` with `reply`."""
    frames = anthropic_events(reply) if path.endswith("/messages") else openai_chunks(reply)
    return b"".join(frames)


@dataclass
class Hold:
    """A point where the server stops sending until `release()`; `reached` is set when it gets there."""

    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)

    def release(self) -> None:
        self.released.set()


CUT = object()
"""Drop the connection here, mid-body."""

Response = list[Any]
"""Frames (bytes), `Hold`s and `CUT`, in order; or a callable of the request body returning them."""


@dataclass
class StreamServer:
    url: str
    bodies: list[dict[str, Any]]


@contextmanager
def stream_server(responses: list[Response | Callable[[dict[str, Any]], Response]]) -> Iterator[StreamServer]:
    """Serve `responses`, one per POST, as chunked event streams on 127.0.0.1; every hold is released and
    every response finished when the block ends."""
    bodies: list[dict[str, Any]] = []
    holds: list[Hold] = []
    finished: list[threading.Event] = []
    lock = threading.Lock()
    for response in responses:
        if isinstance(response, list):
            holds += [item for item in response if isinstance(item, Hold)]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            done = threading.Event()
            with lock:
                finished.append(done)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                bodies.append(body)
                script = responses.pop(0) if responses else [sse("error", {"error": "no more replies"})]
            try:
                items = script(body) if callable(script) else script
                status = 200
                if isinstance(items, tuple):  # (status, json body): a plain error response
                    status, payload = items
                    data = json.dumps(payload).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                for item in items:
                    if isinstance(item, Hold):
                        item.reached.set()
                        item.released.wait(30)
                    elif item is CUT:
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    else:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(item), item))
                        self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except OSError:  # the client went away (an aborted stream)
                pass
            finally:
                self.close_connection = True
                done.set()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    try:
        with plain_http_server(Handler) as url:
            try:
                yield StreamServer(url, bodies)
            finally:
                for hold in holds:
                    hold.release()
                for done in finished:
                    done.wait(10)
    finally:
        for hold in holds:
            hold.release()
