"""A fake HTTP API for the official SDKs: an httpx2 MockTransport that records requests and replays JSON
(as the API's event stream when the request asks to stream).

`serve(api)` puts the same fake on a real port of 127.0.0.1, for a program running in another process.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx2
from _wire import stream_body
from conftest import plain_http_server


@dataclass
class FakeAPI:
    """Answers each request with the next JSON body of `replies`; keeps what was sent in `requests`."""

    replies: list[dict[str, Any]]
    status: int = 200
    requests: list[httpx2.Request] = field(default_factory=list)

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if not self.replies:
            return httpx2.Response(500, json={"error": "no more scripted replies"})
        reply = self.replies.pop(0)
        if self.status == 200 and json.loads(request.content).get("stream"):
            return httpx2.Response(
                200,
                headers={"Content-Type": "text/event-stream"},
                content=stream_body(request.url.path, reply),
            )
        return httpx2.Response(self.status, json=reply)

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]


Handler = Callable[[httpx2.Request], httpx2.Response]


@contextmanager
def serve(api: FakeAPI) -> Iterator[str]:
    """Serve `api` over HTTP on a free port of 127.0.0.1 until the block ends; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            request = httpx2.Request(
                "POST",
                f"http://{self.headers.get('Host')}{self.path}",
                headers=dict(self.headers),
                content=body,
            )
            response = api.handler(request)
            self.send_response(response.status_code)
            self.send_header("Content-Type", response.headers.get("Content-Type", "application/json"))
            self.send_header("Content-Length", str(len(response.content)))
            self.end_headers()
            self.wfile.write(response.content)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with plain_http_server(Handler) as url:
        yield url
