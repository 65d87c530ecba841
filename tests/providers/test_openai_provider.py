"""OpenAIProvider through the official SDK against a fake Chat Completions API (httpx2 MockTransport)."""

from __future__ import annotations

import json
import sys

import pytest
from _fakes import FakeAPI

from cubepi import ImageContent, TextContent, UserError, tool
from cubepi.agent import Agent
from cubepi.providers import (
    AssistantMessage,
    Model,
    OpenAIProvider,
    ProviderRequest,
    ToolResultMessage,
    Usage,
    UserMessage,
    image_placeholder,
)

openai = pytest.importorskip("openai")

MODEL = Model(id="gpt-4.1", provider="openai")
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@tool
def list_files(path: str) -> str:
    """List the files in a folder.

    Args:
        path: The folder.
    """
    return "a.txt\nb.txt"


@tool
def screenshot() -> list[TextContent | ImageContent]:
    """Take a screenshot."""
    return [TextContent("the screen:"), ImageContent(data=PNG, mime_type="image/png")]


def completion(message: dict[str, object], finish_reason: str) -> dict[str, object]:
    """A ChatCompletion as POST /v1/chat/completions returns it (openai.types.chat.ChatCompletion)."""
    return {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4.1-2025-04-14",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "refusal": None, "annotations": [], **message},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": 82,
            "completion_tokens": 17,
            "total_tokens": 99,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": "fp_fc9f1d7035",
    }


TOOL_CALLS = completion(
    {
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "list_files", "arguments": '{"path": "/tmp/sandbox"}'},
            },
            {"id": "call_b", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}},
        ],
    },
    "tool_calls",
)
FINAL = completion({"content": "There are two files."}, "stop")


def provider_for(api: FakeAPI, *, strict: bool = False) -> OpenAIProvider:
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url="http://openai.test/v1", http_client=api.client(), max_retries=0
    )
    return OpenAIProvider(client=client, strict=strict)


async def test_a_tool_round_trip_sends_exact_requests_and_replaces_images() -> None:
    api = FakeAPI([TOOL_CALLS, FINAL])
    agent = Agent(
        provider=provider_for(api), model=MODEL, tools=[list_files, screenshot], system_prompt="Be brief."
    )
    answer = await agent.prompt("List files in /tmp/sandbox.")
    assert isinstance(answer, AssistantMessage) and answer.text == "There are two files."
    assert answer.stop_reason == "stop" and answer.model == "gpt-4.1-2025-04-14"
    assert answer.usage is not None and (answer.usage.input_tokens, answer.usage.output_tokens) == (82, 17)

    first = api.requests[0]
    assert first.method == "POST" and first.url.path == "/v1/chat/completions"
    assert first.headers["authorization"] == "Bearer sk-test"
    body1, body2 = api.bodies
    assert body1 == {
        "model": "gpt-4.1",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "List files in /tmp/sandbox."},
        ],
        "tools": [list_files.to_openai(), screenshot.to_openai()],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    function = body1["tools"][0]["function"]
    assert body1["tools"][0]["type"] == "function" and function["name"] == "list_files"
    assert function["parameters"]["properties"]["path"]["type"] == "string" and "strict" not in function

    placeholder = image_placeholder(ImageContent(data=PNG, mime_type="image/png"))
    assert "image/png" in placeholder and "70 bytes" in placeholder
    assert body2["messages"][2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "list_files", "arguments": json.dumps({"path": "/tmp/sandbox"})},
                },
                {"id": "call_b", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "a.txt\nb.txt"},
        {"role": "tool", "tool_call_id": "call_b", "content": f"the screen:\n{placeholder}"},
    ]
    # The transcript keeps the real image; only the wire gets the placeholder.
    shot = agent.messages[3]
    assert isinstance(shot, ToolResultMessage) and shot.images[0].data == PNG


async def test_strict_tools_user_images_errors_and_bad_json_arguments() -> None:
    bad = completion(
        {
            "content": "Let me try.",
            "tool_calls": [
                {
                    "id": "call_x",
                    "type": "function",
                    "function": {"name": "list_files", "arguments": "{not json"},
                },
                {"id": "call_y", "type": "function", "function": {"name": "list_files", "arguments": "[1]"}},
            ],
        },
        "tool_calls",
    )
    api = FakeAPI([bad, FINAL])
    agent = Agent(
        provider=provider_for(api, strict=True),
        model=Model("gpt-4.1", "openai", max_tokens=64),
        tools=[list_files],
    )
    await agent.prompt([TextContent("What is this?"), ImageContent(data=PNG, mime_type="image/png")])
    body1, body2 = api.bodies
    assert body1["max_completion_tokens"] == 64
    assert body1["tools"] == [list_files.to_openai(strict=True)]
    assert body1["tools"][0]["function"]["strict"] is True
    assert body1["messages"][0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        ],
    }
    assert body2["messages"][1]["content"] == "Let me try."
    x, y = body2["messages"][2:]
    assert x["tool_call_id"] == "call_x" and x["content"].startswith("Error: Invalid arguments")
    assert "not valid JSON" in x["content"] and "JSON list" in y["content"]


async def test_api_errors_raise_the_sdk_exception() -> None:
    api = FakeAPI(
        [
            {
                "error": {
                    "message": "Rate limit reached",
                    "type": "requests",
                    "param": None,
                    "code": "rate_limit",
                }
            }
        ],
        status=429,
    )
    agent = Agent(provider=provider_for(api), model=MODEL)
    with pytest.raises(openai.RateLimitError):
        await agent.prompt("hi")


def test_construction_api_key_base_url_or_client() -> None:
    provider = OpenAIProvider(api_key="sk-secret", base_url="http://127.0.0.1:9/v1")
    assert str(provider.client.base_url).startswith("http://127.0.0.1:9/v1")
    assert "secret" not in repr(provider)
    client = openai.AsyncOpenAI(api_key="k")
    assert OpenAIProvider(client=client).client is client
    with pytest.raises(UserError, match="not both"):
        OpenAIProvider(base_url="http://x", client=client)


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(UserError, match=r'pip install "cubepi\[openai\]"'):
        OpenAIProvider(api_key="k")


async def test_complete_still_answers_with_the_whole_message() -> None:
    api = FakeAPI([TOOL_CALLS])
    request = ProviderRequest(model=MODEL, messages=[UserMessage.of("List files.")], tools=[list_files])
    answer = await provider_for(api).complete(request)
    assert [c.name for c in answer.tool_calls] == ["list_files", "screenshot"]
    assert answer.usage == Usage(82, 17) and "stream" not in api.bodies[0]
