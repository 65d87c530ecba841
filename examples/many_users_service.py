"""One agent service, many users: each request's caller reaches the MCP server as themselves.

Run: ``python examples/many_users_service.py`` (``pip install "cubepi[mcp]"``; Starlette and uvicorn come with
the MCP SDK). It starts a small MCP server over Streamable HTTP (``serve-mcp``: a ``whoami`` tool that echoes
the ``Authorization`` header and the ``user_id`` argument it got), then this service, a Starlette app whose
``POST /ask`` runs an agent for the user whose token came with the request, and asks it as Alice and as Bob
at the same time.

The tool list is loaded once, at start-up, and shared by every request. What differs per request is the
call context: the user's token goes on the MCP requests (`headers`), their id fills the hidden ``user_id``
parameter (which the model never sees and cannot set), and a request id travels as ``_meta``. The model
here is scripted (`FauxProvider`), so the example runs offline; put `AnthropicProvider` or
`OpenAIProvider` in its place.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx2
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from cubepi.agent import Agent
from cubepi.mcp import CallContext, MCPToolList, call_context, load_mcp_tools_http
from cubepi.providers import FauxProvider, Model, ProviderRequest, ToolCall, ToolResultMessage

# The service's users: their tokens (in a real service, your identity provider checks them).
USERS = {"alice-token": "alice", "bob-token": "bob"}


def user_id(ctx: CallContext) -> Any:
    """The hidden ``user_id`` of a call: the user of the request it is made for."""
    return ctx.values["user_id"]


def scripted_model() -> FauxProvider:
    """Calls ``whoami`` once, then answers with what the tool said (a real provider goes here)."""

    def answer(request: ProviderRequest) -> str:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        return results[-1].content[0].text if results else "no tool result"  # type: ignore[union-attr]

    return FauxProvider([ToolCall(id="call_1", name="whoami", arguments={}), answer])


def create_app(mcp_url: str) -> Starlette:
    """The service: the MCP tools are loaded at start-up, one list for every user."""
    tools: MCPToolList | None = None

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        nonlocal tools
        async with await load_mcp_tools_http(mcp_url, hidden_arguments={"user_id": user_id}) as loaded:
            tools = loaded
            yield

    async def ask(request: Request) -> JSONResponse:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        user = USERS.get(token)
        if user is None:
            return JSONResponse({"error": "unknown user"}, status_code=401)
        assert tools is not None
        async with call_context(
            headers={"Authorization": f"Bearer {token}"},
            values={"user_id": user},
            meta={"example/request_id": str(uuid.uuid4())},
        ):
            agent = Agent(provider=scripted_model(), model=Model(id="scripted", provider="faux"), tools=tools)
            answer = await agent.prompt("Who am I?")
        return JSONResponse({"user": user, "answer": answer.text})

    return Starlette(routes=[Route("/ask", ask, methods=["POST"])], lifespan=lifespan)


# -- the MCP server the service calls ------------------------------------------------------------------


def serve_mcp(port: int) -> None:
    """A Streamable HTTP MCP server whose ``whoami`` says who called."""
    server = MCPServer("whoami", log_level="WARNING")

    @server.tool()
    def whoami(user_id: str, ctx: Context) -> str:
        """Who is calling."""
        headers = ctx.headers or {}
        return f"user_id={user_id}, token={headers.get('authorization', '').removeprefix('Bearer ')}"

    server.run(transport="streamable-http", port=port)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(port: int, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline or (process is not None and process.poll() is not None):
                raise RuntimeError(f"nothing listens on port {port}") from None
            time.sleep(0.1)


@contextlib.contextmanager
def mcp_server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, __file__, "serve-mcp", str(port)], stderr=subprocess.DEVNULL, env=dict(os.environ)
    )
    try:
        wait_for(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


async def main() -> dict[str, Any]:
    """Start both servers, ask as Alice and as Bob at once, print and return the answers."""
    with mcp_server() as mcp_url:
        listening = socket.socket()  # bound and listening before the service starts: no wait for it
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        service = uvicorn.Server(uvicorn.Config(create_app(mcp_url), log_level="warning"))
        answers: dict[str, Any] = {}
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: service.serve(sockets=[listening]))
            async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:

                async def ask(token: str) -> None:
                    response = await client.post("/ask", headers={"Authorization": f"Bearer {token}"})
                    answers[token] = response.json()

                async with anyio.create_task_group() as asking:
                    for token in USERS:
                        asking.start_soon(ask, token)
            service.should_exit = True
    for token in USERS:
        print(json.dumps(answers[token]))
    return answers


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve-mcp"]:
        serve_mcp(int(sys.argv[2]))
    else:
        anyio.run(main)
