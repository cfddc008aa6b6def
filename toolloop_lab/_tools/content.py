"""Tool results made of content blocks: what the model is sent, and what a person reads.

Every tool from ``langchain-mcp-adapters`` (and any ``content_and_artifact`` tool that
returns blocks) answers with LangChain content blocks: text, images, files. They go to
the model as blocks, as langchain-core's own ``ToolNode`` sends them, text as text and an
image as an image (a provider reads it as one; the approximate token counter counts it as
one), never as a JSON dump of them. Two things are taken out on the way:

* the id langchain-core's ``create_*_block`` helpers make up for a block that has none
  (``lc_`` and a random UUID, a new one on every call): it is no content, and with it two
  identical runs would never compare equal and no recording would replay;
* nothing else: a block's own id, its extras, its data are sent as the tool gave them.

Every reader says a result of blocks in the same words (:func:`content_text`): text as
text, an image as ``[image: image/png, 12 KB]`` (the words are ``words.json``'s
``content_block`` table, the size :func:`~toolloop_lab._spend.usage.format_bytes`'s).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from langchain_core.messages import is_data_content_block
from langchain_core.tools.base import TOOL_MESSAGE_BLOCK_TYPES
from langchain_core.utils.utils import LC_AUTO_PREFIX

from toolloop_lab._spend.usage import format_bytes
from toolloop_lab._support.escape import clip
from toolloop_lab._support.jsonsafe import dumps, json_safe
from toolloop_lab._support.words import CONTENT_BLOCK

DATA_BLOCK_TYPES: Final = frozenset({"image", "audio", "video", "file", "image_url"})
"""Block types that carry data (bytes, a URL, a file id) rather than text."""

DRAWN_IMAGE_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Image types a view draws (from their bytes, never a URL): raster formats a browser
decodes without running anything; SVG, which can hold script and load other documents,
is never one of them."""
_BASE64: Final = re.compile(r"[A-Za-z0-9+/]*={0,2}\Z")

_MADE_ID: Final = re.compile(
    re.escape(LC_AUTO_PREFIX) + r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z"
)
"""The id langchain-core's ``ensure_id`` makes up for a block: ``lc_`` and a UUID4."""

_WORDS: Final = CONTENT_BLOCK
_PLACE_CHARS: Final = 200
"""Characters of a block's URL or file id its words keep."""


def is_blocks(value: Any) -> bool:
    """``value`` (what a tool returned) is content blocks for the model: a non-empty list
    or tuple of blocks of langchain-core's tool-message types (``text``, ``image``,
    ``file``, ...) and strings, at least one of them a block. A list of strings alone, or
    of other dicts, is data the tool returned, and stays JSON text."""
    if not isinstance(value, (list, tuple)) or not value:
        return False
    typed = False
    for item in value:
        if isinstance(item, dict):
            if item.get("type") not in TOOL_MESSAGE_BLOCK_TYPES:
                return False
            typed = True
        elif not isinstance(item, str):
            return False
    return typed


def blocks_of(value: Sequence[Any]) -> list[dict[str, Any]]:
    """A copy of content blocks as JSON data, as the model is sent them: a string becomes
    a text block, and an id langchain-core made up for a block is left out."""
    out: list[dict[str, Any]] = []
    for item in value:
        if isinstance(item, str):
            out.append({"type": "text", "text": item})
        elif isinstance(item, Mapping):
            out.append(json_safe({k: v for k, v in item.items() if not _made_id(k, v)}))
    return out


def without_made_ids(content: Any) -> Any:
    """Message content with the ids langchain-core made up for its blocks left out (what
    two runs of the same conversation never share); any other content as it is."""
    if not isinstance(content, list) or not any(
        isinstance(b, Mapping) and _made_id("id", b.get("id")) for b in content
    ):
        return content
    return [
        {k: v for k, v in b.items() if not _made_id(k, v)} if isinstance(b, Mapping) else b
        for b in content
    ]


def _made_id(key: Any, value: Any) -> bool:
    return key == "id" and isinstance(value, str) and _MADE_ID.match(value) is not None


def is_data_block(block: Any) -> bool:
    """``block`` carries data (an image, audio, a file), as langchain-core tells them."""
    return (
        isinstance(block, Mapping)
        and block.get("type") in DATA_BLOCK_TYPES
        and (block.get("type") == "image_url" or is_data_content_block(dict(block)))
    )


def content_text(content: Any) -> str:
    """Message content (a tool's result) as a person reads it: text as it is, content
    blocks one after another, each on its own line (:func:`block_text`), anything else as
    deterministic JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)) and all(isinstance(b, (str, Mapping)) for b in content):
        return "\n".join(b if isinstance(b, str) else block_text(b) for b in content)
    return dumps(content, ascii_only=False)


def text_only(content: Any) -> str | None:
    """The text of content that is text alone (a string, or text blocks), else ``None``
    (content holding an image or a file is more than its words)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, (list, tuple)):
        return None
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            return None
    return "\n".join(parts)


def block_text(block: Mapping[str, Any]) -> str:
    """One block in words: a text block's text, a data block as ``[image: image/png,
    12 KB]`` (its kind, MIME type and size, or where it is), a ``json`` block as its JSON,
    any other block as its JSON (a made-up id left out)."""
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    if is_data_block(block):
        return _data_words(block)
    if kind == "json" and "json" in block:
        return dumps(block["json"], ascii_only=False)
    return dumps({k: v for k, v in block.items() if not _made_id(k, v)}, ascii_only=False)


def _data_words(block: Mapping[str, Any]) -> str:
    kind = "image" if block.get("type") == "image_url" else str(block.get("type"))
    mime, data, place = _data_of(block)
    details = [d for d in (mime, None if data is None else _size(data), place) if d]
    if not details:
        return _WORDS["bare"].format(kind=kind)
    return _WORDS["data"].format(kind=kind, details=", ".join(details))


def _data_of(block: Mapping[str, Any]) -> tuple[str | None, str | None, str | None]:
    """A data block's MIME type, its base64 data and where it is (a URL, a file id), each
    ``None`` when it has none; standard (v1), older (``source_type``) and OpenAI
    ``image_url`` blocks alike."""
    mime = block.get("mime_type")
    mime = mime if isinstance(mime, str) and mime else None
    if block.get("type") == "image_url":
        url = block.get("image_url")
        url = url.get("url") if isinstance(url, Mapping) else url
        return _from_url(url, mime)
    source = block.get("source_type")
    data = block.get("data") if source == "base64" else block.get("base64")
    if isinstance(data, str):
        return mime, data, None
    url = block.get("url")
    if isinstance(url, str) and url:
        return _from_url(url, mime)
    file_id = block.get("id") if source == "id" else block.get("file_id")
    if isinstance(file_id, str) and file_id:
        return mime, None, _WORDS["file_id"].format(id=clip(file_id, _PLACE_CHARS))
    return mime, None, None


def _from_url(url: Any, mime: str | None) -> tuple[str | None, str | None, str | None]:
    """A ``data:`` URL's MIME type and data, or the URL itself as where the data is."""
    if not isinstance(url, str) or not url:
        return mime, None, None
    if url.startswith("data:") and ";base64," in url[:200]:
        head, data = url[5:].split(";base64,", 1)
        return mime or head or None, data, None
    return mime, None, clip(url, _PLACE_CHARS)


def _size(data: str) -> str:
    """How many bytes base64 ``data`` holds, as a person reads a size."""
    text = data.strip()
    padding = len(text) - len(text.rstrip("="))
    return format_bytes(max(len(text) * 3 // 4 - padding, 0))


def structured_of(artifact: Any) -> Mapping[str, Any] | None:
    """The structured content of an MCP tool's result, from the artifact
    ``langchain-mcp-adapters`` gives its ``ToolMessage`` (``{"structured_content":
    {...}}``, a JSON object); ``None`` when there is none."""
    if not isinstance(artifact, Mapping):
        return None
    structured = artifact.get("structured_content")
    return structured if isinstance(structured, Mapping) else None


def drawable_image(block: Any) -> tuple[str, str] | None:
    """An image block's MIME type and base64 data when a view may draw it: a type of
    :data:`DRAWN_IMAGE_TYPES` and data that is base64 (a ``data:`` URL's included); else
    ``None`` (the block is then said in words)."""
    if not isinstance(block, Mapping) or not is_data_block(block):
        return None
    if block.get("type") not in ("image", "image_url"):
        return None
    mime, data, _ = _data_of(block)
    mime = mime.lower() if isinstance(mime, str) else None
    if mime not in DRAWN_IMAGE_TYPES or not data:
        return None
    data = "".join(data.split())
    return (mime, data) if _BASE64.match(data) and len(data) % 4 == 0 else None
