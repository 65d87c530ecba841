"""A fake HTTP API for the official SDKs: an httpx2 MockTransport that records requests and replays JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2


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
        return httpx2.Response(self.status, json=self.replies.pop(0))

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]


Handler = Callable[[httpx2.Request], httpx2.Response]
