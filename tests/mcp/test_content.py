"""`render_mcp_content` on results shaped as servers send them (SDK objects and plain JSON)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from mcp import types

from cubepi import Content, ImageContent, TextContent
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


@pytest.mark.parametrize(
    "size", [0, 1, 2, 3, 4, 5, 6, 1023, 1024, 1025, 5000, 1024 * 1024 - 1, 1024 * 1024, 3 * 1024 * 1024 + 7]
)
def test_placeholder_sizes_are_the_decoded_size(size: int) -> None:
    """Audio and blob placeholders show the decoded size, padded or not, in bytes, KiB or MiB."""
    data = base64.b64encode(b"\1" * size).decode()
    if size < 1024:
        shown = f"{size} bytes"
    elif size < 1024 * 1024:
        shown = f"{size / 1024:.1f} KiB"
    else:
        shown = f"{size / (1024 * 1024):.1f} MiB"
    for text in (data, data.rstrip("=")):
        audio = render_mcp_content({"content": [{"type": "audio", "data": text, "mimeType": "audio/wav"}]})
        assert audio.text == f"[audio: audio/wav, {shown}]"
        resource = {"uri": "memo://b", "mimeType": "application/zip", "blob": text}
        blob = render_mcp_content({"content": [{"type": "resource", "resource": resource}]})
        assert blob.text == f"[resource: memo://b (application/zip, {shown})]"


def test_placeholder_sizes_of_odd_data() -> None:
    def audio(data: object) -> str:
        block = {"type": "audio", "data": data, "mimeType": "audio/ogg"}
        return render_mcp_content({"content": [block]}).text

    assert audio(None) == "[audio: audio/ogg, 0 bytes]"
    assert audio("  " + base64.b64encode(b"abc").decode() + "\n") == "[audio: audio/ogg, 3 bytes]"
    assert audio("abcdefgh=abc") == "[audio: audio/ogg, 9 bytes]"  # not base64: estimated from its length
    no_type = render_mcp_content({"content": [{"type": "audio", "data": ""}]})
    assert no_type.text == "[audio: audio, 0 bytes]"


def test_other_blocks_and_a_resource_without_content() -> None:
    rendered = render_mcp_content(
        {
            "content": [
                {"type": "text"},
                {"type": "image", "data": PNG_B64},
                {"type": "resource", "resource": {"uri": "memo://empty"}},
                {"type": "resource_link"},
                {"type": "hologram"},
            ]
        }
    )
    assert rendered.content == [
        TextContent(""),
        ImageContent(data=PNG_B64, mime_type="image/png"),
        TextContent("[resource: memo://empty]"),
        TextContent("[resource link: ]"),
        TextContent("[unsupported content: hologram]"),
    ]


def test_meta_goes_to_details_and_sdk_objects_drop_their_nones() -> None:
    rendered = render_mcp_content({"content": [], "_meta": {"trace": "t1"}})
    assert rendered.details == {"meta": {"trace": "t1"}}
    sdk = types.CallToolResult(content=[types.TextContent(type="text", text="x")], _meta={"trace": "t2"})
    assert render_mcp_content(sdk).details == {"meta": {"trace": "t2"}}
    assert render_mcp_content({"content": [], "_meta": {}}).details == {}


def test_errors_are_marked_once() -> None:
    already = {"type": "text", "text": "[tool error] already"}
    marked = render_mcp_content({"content": [already], "isError": True})
    assert marked.text == "[tool error] already"
    image_first = render_mcp_content(
        {"content": [{"type": "image", "data": PNG_B64}, {"type": "text", "text": "bad"}], "isError": True}
    )
    assert image_first.content[1] == TextContent("[tool error] bad")
    silent = render_mcp_content({"content": [{"type": "image", "data": PNG_B64}], "isError": True})
    assert silent.content[0] == TextContent("[tool error] the tool reported an error without a message")
    assert isinstance(silent.content[1], ImageContent)


def test_anything_else_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="expects an MCP CallToolResult or its dict, got list"):
        render_mcp_content([])


def _read(mime: str | None, data: bytes) -> Content:
    resource: dict[str, Any] = {"uri": "memo://r", "blob": base64.b64encode(data).decode()}
    if mime is not None:
        resource["mimeType"] = mime
    (block,) = render_mcp_content({"content": [{"type": "resource", "resource": resource}]}).content
    return block


@pytest.mark.parametrize(
    ("mime", "data", "text"),
    [
        ("text/plain", "naïve ☃".encode(), "naïve ☃"),
        ("Text/Markdown; charset=UTF-8", b"# title", "# title"),
        ("application/json", b'{"a": 1}', '{"a": 1}'),
        ("application/vnd.api+json", b"[]", "[]"),
        ("image/svg+xml", b"<svg/>", None),  # an image type: ImageContent, as before
        ("application/atom+xml", b"<feed/>", "<feed/>"),
        ("application/x-yaml", b"a: 1", "a: 1"),
        ("text/plain; charset=latin-1", "café".encode("latin-1"), "café"),
        ('text/plain; charset="utf-16"', "hi".encode("utf-16"), "hi"),
    ],
)
def test_a_blob_of_a_textual_type_reads_as_its_text(mime: str, data: bytes, text: str | None) -> None:
    block = _read(mime, data)
    if text is None:
        assert isinstance(block, ImageContent)
    else:
        assert block == TextContent(text)


@pytest.mark.parametrize(
    ("mime", "data", "shown"),
    [
        ("text/plain", "café".encode("latin-1"), "text/plain, 4 bytes"),  # not UTF-8
        ("text/plain; charset=rot13", b"uryyb", "text/plain; charset=rot13, 5 bytes"),  # not a text codec
        ("text/plain; charset=no-such", b"hello", "text/plain; charset=no-such, 5 bytes"),
        ("application/octet-stream", b"hello", "application/octet-stream, 5 bytes"),
        ("application/zip", b"hello", "application/zip, 5 bytes"),
        (None, b"hello", "application/octet-stream, 5 bytes"),
    ],
)
def test_a_blob_that_is_not_text_keeps_its_placeholder(mime: str | None, data: bytes, shown: str) -> None:
    assert _read(mime, data) == TextContent(f"[resource: memo://r ({shown})]")


def test_a_textual_blob_of_bad_base64_keeps_its_placeholder() -> None:
    resource = {"uri": "memo://r", "mimeType": "text/plain", "blob": "aGVsbG8"}  # padding missing
    (block,) = render_mcp_content({"content": [{"type": "resource", "resource": resource}]}).content
    assert isinstance(block, TextContent) and block.text.startswith("[resource: memo://r (text/plain, ")
