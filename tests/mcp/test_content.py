"""`render_mcp_content` on results shaped as servers send them (SDK objects and plain JSON)."""

from __future__ import annotations

import base64

from mcp import types

from cubepi import ImageContent, TextContent
from cubepi.mcp import render_mcp_content

PNG_B64 = base64.b64encode(b"\x89PNG fake").decode()


def test_text_and_image_blocks() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="hello"),
            types.ImageContent(type="image", data=PNG_B64, mimeType="image/png"),
        ]
    )
    rendered = render_mcp_content(result)
    assert rendered.content == [TextContent("hello"), ImageContent(data=PNG_B64, mime_type="image/png")]
    assert rendered.details == {}
    assert rendered.is_error is False


def test_audio_is_a_placeholder_with_type_and_size_never_base64() -> None:
    data = base64.b64encode(b"\0" * 5000).decode()
    rendered = render_mcp_content({"content": [{"type": "audio", "data": data, "mimeType": "audio/wav"}]})
    (block,) = rendered.content
    assert isinstance(block, TextContent)
    assert block.text == "[audio: audio/wav, 4.9 KiB]"
    assert data[:16] not in block.text


def test_embedded_resources_and_links() -> None:
    blob = base64.b64encode(b"x" * 10).decode()
    rendered = render_mcp_content(
        {
            "content": [
                {"type": "resource_link", "name": "readme", "uri": "file:///srv/README.md"},
                {
                    "type": "resource",
                    "resource": {"uri": "memo://a", "mimeType": "text/plain", "text": "inline"},
                },
                {
                    "type": "resource",
                    "resource": {"uri": "memo://p", "mimeType": "image/png", "blob": PNG_B64},
                },
                {
                    "type": "resource",
                    "resource": {"uri": "memo://b", "mimeType": "application/zip", "blob": blob},
                },
                {"type": "resource", "resource": {"uri": "memo://c", "blob": blob}},
            ]
        }
    )
    assert rendered.content == [
        TextContent("[resource link: file:///srv/README.md]"),
        TextContent("inline"),
        ImageContent(data=PNG_B64, mime_type="image/png"),
        TextContent("[resource: memo://b (application/zip, 10 bytes)]"),
        TextContent("[resource: memo://c (application/octet-stream, 10 bytes)]"),
    ]


def test_structured_content_goes_to_details() -> None:
    rendered = render_mcp_content(
        types.CallToolResult(
            content=[types.TextContent(type="text", text='{"t": 21}')], structuredContent={"t": 21}
        )
    )
    assert rendered.details == {"structuredContent": {"t": 21}}
    assert rendered.text == '{"t": 21}'


def test_structured_content_alone_is_also_shown_as_json_text() -> None:
    rendered = render_mcp_content({"content": [], "structuredContent": {"ok": True}})
    assert rendered.text == '{"ok": true}'
    assert rendered.details["structuredContent"] == {"ok": True}


def test_is_error_is_a_result_marked_for_the_model() -> None:
    rendered = render_mcp_content({"content": [{"type": "text", "text": "no such city"}], "isError": True})
    assert rendered.is_error is True
    assert rendered.text == "[tool error] no such city"
    empty = render_mcp_content({"content": [], "isError": True})
    assert empty.text.startswith("[tool error] ")


def test_unknown_block_types_are_named_not_dropped() -> None:
    rendered = render_mcp_content({"content": [{"type": "hologram", "data": "..."}]})
    assert rendered.text == "[unsupported content: hologram]"
