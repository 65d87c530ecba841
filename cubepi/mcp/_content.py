"""`render_mcp_content`: an MCP `CallToolResult` as an `AgentToolResult` a model can read."""

from __future__ import annotations

import binascii
import codecs
import json
from collections.abc import Mapping
from typing import Any

from ..tools import AgentToolResult, Content, ImageContent, TextContent

__all__ = ["blob_text", "render_mcp_content"]

ERROR_PREFIX = "[tool error] "


def render_mcp_content(result: Any) -> AgentToolResult:
    """Map an MCP tool result (an SDK `CallToolResult` or its JSON dict) to an `AgentToolResult`.

    - text → `TextContent`; image → `ImageContent`;
    - audio → a text placeholder naming its type and size (never raw base64 in text);
    - embedded resources: text inlined, image blobs as `ImageContent`, blobs of a textual MIME type
      (``text/*``, JSON, XML, YAML, ...) that decode cleanly as text, other blobs as size-stamped
      placeholders; resource links → ``[resource link: uri]`` lines;
    - ``structuredContent`` → ``details["structuredContent"]`` (and, when the server sent no content
      blocks at all, its JSON as text so the model sees it);
    - ``isError`` → ``is_error=True``, rendered ``[tool error] ...`` for the model: a result, not an
      exception.
    """
    data = _as_dict(result)
    content: list[Content] = []
    for block in data.get("content") or []:
        if type(block) is dict and block.get("type") == "text":  # the common case, kept cheap
            content.append(TextContent(str(block.get("text", ""))))
        else:
            content.extend(_render_block(_as_dict(block)))
    details: dict[str, Any] = {}
    structured = data.get("structuredContent")
    if structured is not None:
        details["structuredContent"] = structured
        if not content:
            content.append(TextContent(json.dumps(structured, ensure_ascii=False)))
    meta = data.get("_meta", data.get("meta"))
    if meta:
        details["meta"] = meta
    is_error = bool(data.get("isError"))
    if is_error:
        content = _mark_error(content)
    return AgentToolResult(content=content, details=details, is_error=is_error)


def _as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump(mode="json", by_alias=True, exclude_none=True)
        if isinstance(dumped, dict):
            return dumped
    kind = type(value).__name__
    raise TypeError(f"render_mcp_content expects an MCP CallToolResult or its dict, got {kind}")


def _render_block(block: dict[str, Any]) -> list[Content]:
    kind = block.get("type")
    if kind == "text":
        return [TextContent(str(block.get("text", "")))]
    if kind == "image":
        mime = str(block.get("mimeType", "image/png"))
        return [ImageContent(data=str(block.get("data", "")), mime_type=mime)]
    if kind == "audio":
        size = _b64_size(block.get("data"))
        return [TextContent(f"[audio: {block.get('mimeType', 'audio')}, {_human(size)}]")]
    if kind == "resource":
        return _render_resource(_as_dict(block.get("resource") or {}))
    if kind == "resource_link":
        return [TextContent(f"[resource link: {block.get('uri', '')}]")]
    return [TextContent(f"[unsupported content: {kind}]")]


def _render_resource(resource: dict[str, Any]) -> list[Content]:
    uri = resource.get("uri", "")
    mime = resource.get("mimeType")
    if "text" in resource:
        return [TextContent(str(resource["text"]))]
    blob = resource.get("blob")
    if isinstance(blob, str):
        if isinstance(mime, str) and mime.startswith("image/"):
            return [ImageContent(data=blob, mime_type=mime)]
        text = blob_text(blob, mime)
        if text is not None:
            return [TextContent(text)]
        kind = mime or "application/octet-stream"
        return [TextContent(f"[resource: {uri} ({kind}, {_human(_b64_size(blob))})]")]
    return [TextContent(f"[resource: {uri}]")]


# Types that are text under another top-level name; a ``+json`` / ``+xml`` suffix counts too.
_TEXTUAL = frozenset(
    {
        *("application/json", "application/ld+json", "application/xml", "application/yaml"),
        *("application/x-yaml", "application/toml", "application/javascript", "application/ecmascript"),
        *("application/x-sh", "application/sql", "application/graphql", "application/x-ndjson"),
    }
)


def blob_text(blob: Any, mime: Any) -> str | None:
    """A blob's text when its MIME type is textual and its bytes decode in its charset (UTF-8 unless
    it names another); `None` keeps the placeholder (binary, bad base64, bytes that are not that text)."""
    if not isinstance(blob, str) or not isinstance(mime, str):
        return None
    kind, *params = (part.strip() for part in mime.lower().split(";"))
    if not (kind.startswith("text/") or kind in _TEXTUAL or kind.endswith(("+json", "+xml"))):
        return None
    charset = next((p[8:].strip("\"' ") for p in params if p.startswith("charset=")), "utf-8")
    try:
        return binascii.a2b_base64(blob).decode(codecs.lookup(charset).name)
    except (binascii.Error, LookupError, UnicodeDecodeError, ValueError):
        return None


def _b64_size(data: Any) -> int:
    """Decoded size of base64 text, without decoding it all."""
    if not isinstance(data, str):
        return 0
    text = data.strip()
    try:
        tail = binascii.a2b_base64(text[-4:]) if len(text) >= 4 else b""
    except (binascii.Error, ValueError):
        return len(text) * 3 // 4
    return max(len(text) // 4 - 1, 0) * 3 + len(tail) if len(text) % 4 == 0 else len(text) * 3 // 4


def _human(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"


def _mark_error(content: list[Content]) -> list[Content]:
    for index, block in enumerate(content):
        if isinstance(block, TextContent):
            if not block.text.startswith(ERROR_PREFIX.strip()):
                content[index] = TextContent(ERROR_PREFIX + block.text)
            return content
    return [TextContent(ERROR_PREFIX + "the tool reported an error without a message"), *content]
