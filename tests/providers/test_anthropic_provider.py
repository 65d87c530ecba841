"""AnthropicProvider through the official SDK against a fake Messages API (httpx2 MockTransport)."""

from __future__ import annotations

import sys

import pytest
from _fakes import FakeAPI

from cubepi import ImageContent, TextContent, UserError, tool
from cubepi.agent import Agent
from cubepi.providers import (
    AnthropicProvider,
    AssistantMessage,
    Model,
    ProviderRequest,
    ToolResultMessage,
    Usage,
    UserMessage,
)

anthropic = pytest.importorskip("anthropic")

MODEL = Model(id="claude-sonnet-4-5-20250929", provider="anthropic")
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


# Shapes as documented for POST /v1/messages (anthropic.types.Message).
TOOL_USE_REPLY = {
    "id": "msg_01Aq9w938a90dw8q",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [
        {"type": "text", "text": "I'll look."},
        {"type": "tool_use", "id": "toolu_01A", "name": "list_files", "input": {"path": "/tmp/sandbox"}},
        {"type": "tool_use", "id": "toolu_01B", "name": "screenshot", "input": {}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 472, "output_tokens": 91},
}
FINAL_REPLY = {
    "id": "msg_01Bq",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [{"type": "text", "text": "There are two files."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 600, "output_tokens": 12},
}


def provider_for(api: FakeAPI) -> AnthropicProvider:
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-test", base_url="http://anthropic.test", http_client=api.client(), max_retries=0
    )
    return AnthropicProvider(client=client)


async def test_a_tool_round_trip_sends_exact_requests() -> None:
    api = FakeAPI([TOOL_USE_REPLY, FINAL_REPLY])
    agent = Agent(
        provider=provider_for(api), model=MODEL, tools=[list_files, screenshot], system_prompt="Be brief."
    )
    answer = await agent.prompt("List files in /tmp/sandbox.")

    assert isinstance(answer, AssistantMessage) and answer.text == "There are two files."
    assert answer.stop_reason == "end_turn" and answer.model == MODEL.id
    first_answer = agent.messages[1]
    assert isinstance(first_answer, AssistantMessage)
    assert [(c.id, c.name, c.arguments) for c in first_answer.tool_calls] == [
        ("toolu_01A", "list_files", {"path": "/tmp/sandbox"}),
        ("toolu_01B", "screenshot", {}),
    ]
    assert first_answer.usage is not None and first_answer.usage.input_tokens == 472

    first = api.requests[0]
    assert first.method == "POST" and first.url.path == "/v1/messages"
    auth = first.headers.get("x-api-key") or first.headers.get("authorization")
    assert auth is not None and auth.endswith("sk-ant-test") and "anthropic-version" in first.headers
    body1, body2 = api.bodies
    assert body1 == {
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 4096,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "List files in /tmp/sandbox."}]}],
        "tools": [list_files.to_anthropic(), screenshot.to_anthropic()],
        "stream": True,
    }
    tool_def = body1["tools"][0]
    assert tool_def["name"] == "list_files" and tool_def["description"] == "List the files in a folder."
    assert tool_def["input_schema"]["properties"]["path"]["type"] == "string"
    assert tool_def["input_schema"]["required"] == ["path"]

    assert body2["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I'll look."},
                {
                    "type": "tool_use",
                    "id": "toolu_01A",
                    "name": "list_files",
                    "input": {"path": "/tmp/sandbox"},
                },
                {"type": "tool_use", "id": "toolu_01B", "name": "screenshot", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01A",
                    "content": [{"type": "text", "text": "a.txt\nb.txt"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01B",
                    "content": [
                        {"type": "text", "text": "the screen:"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                        },
                    ],
                },
            ],
        },
    ]


async def test_error_results_carry_is_error_and_user_images_are_sent() -> None:
    bad_call = {
        **TOOL_USE_REPLY,
        "content": [{"type": "tool_use", "id": "toolu_X", "name": "list_files", "input": {"folder": 1}}],
    }
    api = FakeAPI([bad_call, FINAL_REPLY])
    agent = Agent(
        provider=provider_for(api), model=Model(MODEL.id, "anthropic", max_tokens=100), tools=[list_files]
    )
    await agent.prompt([TextContent("What is this?"), ImageContent(data=PNG, mime_type="image/png")])
    body1, body2 = api.bodies
    assert body1["max_tokens"] == 100 and "system" not in body1
    assert body1["messages"][0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
    }
    (result_block,) = body2["messages"][-1]["content"]
    assert result_block["is_error"] is True and result_block["tool_use_id"] == "toolu_X"
    assert result_block["content"][0]["text"].startswith("Invalid arguments for tool 'list_files'")
    result = agent.messages[2]
    assert isinstance(result, ToolResultMessage) and result.is_error


async def test_api_errors_raise_the_sdk_exception() -> None:
    api = FakeAPI(
        [{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}],
        status=401,
    )
    agent = Agent(provider=provider_for(api), model=MODEL)
    with pytest.raises(anthropic.AuthenticationError):
        await agent.prompt("hi")


def test_construction_api_key_base_url_or_client() -> None:
    provider = AnthropicProvider(api_key="sk-ant-secret", base_url="http://127.0.0.1:9")
    assert str(provider.client.base_url).startswith("http://127.0.0.1:9")
    assert "secret" not in repr(provider)
    client = anthropic.AsyncAnthropic(api_key="k")
    assert AnthropicProvider(client=client).client is client
    with pytest.raises(UserError, match="not both"):
        AnthropicProvider(api_key="k", client=client)


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(UserError, match=r'pip install "cubepi\[anthropic\]"'):
        AnthropicProvider(api_key="k")


async def test_complete_still_answers_with_the_whole_message() -> None:
    api = FakeAPI([TOOL_USE_REPLY])
    request = ProviderRequest(model=MODEL, messages=[UserMessage.of("List files.")], tools=[list_files])
    answer = await provider_for(api).complete(request)
    assert answer.text == "I'll look." and [c.id for c in answer.tool_calls] == ["toolu_01A", "toolu_01B"]
    assert answer.usage == Usage(472, 91) and "stream" not in api.bodies[0]
