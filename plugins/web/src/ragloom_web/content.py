"""From a fetched response to a Document: HTML, plain text or JSON; anything else is refused.

HTML is decoded and extracted by the HTML file loader's own code
(:func:`ragloom.plugin.decode_html` and :func:`extract_html`), so pages
and ``.html`` files give the same text. Charset: a BOM, else the
``Content-Type`` charset, else ``<meta charset>`` (HTML), else UTF-8, else
detection; ``encoding`` forces one.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

from ragloom.plugin import (
    Document,
    LoaderError,
    WebLoaderError,
    bom_encoding,
    check_text_chars,
    decode_html,
    decode_text,
    extract_html,
    html_metadata,
)
from ragloom_web.config import WebLoaderConfig
from ragloom_web.fetch import Fetched

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/x-markdown"})
XML_TYPES = frozenset({"application/xml", "text/xml"})
GZIP_TYPES = frozenset({"application/gzip", "application/x-gzip"})
_META_CHARSET = re.compile(rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.IGNORECASE)


def kind_of(fetched: Fetched) -> str:
    """``html``, ``text``, ``json``, ``xml`` or ``gzip`` — or WebLoaderError for another content type."""
    mime = fetched.content_type
    if mime in HTML_TYPES:
        return "html"
    if mime in TEXT_TYPES:
        return "text"
    if mime == "application/json" or mime.endswith("+json"):
        return "json"
    if mime in XML_TYPES or mime.endswith("+xml"):
        return "xml"
    if mime in GZIP_TYPES and fetched.url.split("?", 1)[0].endswith(".xml.gz"):
        return "gzip"
    if not mime:
        head = fetched.body[:512].lstrip().lower()
        if head.startswith((b"<!doctype html", b"<html")):
            return "html"
        raise WebLoaderError("the response has no Content-Type and does not look like HTML; refused", source=fetched.url)
    raise WebLoaderError(
        f"unsupported content type {mime!r}: the web loader reads HTML, plain text and JSON pages (and XML sitemaps)",
        source=fetched.url,
    )


def _trim_partial(data: bytes, encoding: str) -> bytes:
    """``data`` without a multi-byte character cut off at its end (for truncated bodies)."""
    try:
        decoder = codecs.getincrementaldecoder(encoding)()
    except LookupError:
        return data
    try:
        decoder.decode(data, final=False)
    except UnicodeDecodeError:
        return data
    pending = len(decoder.getstate()[0])
    return data[: len(data) - pending] if pending else data


def _charset_hint(fetched: Fetched, html: bool) -> str:
    bom, _ = bom_encoding(fetched.body)
    if bom:
        return bom
    if fetched.charset:
        return fetched.charset
    if html:
        match = _META_CHARSET.search(fetched.body[:8192])
        if match:
            return match.group(1).decode("ascii", "replace")
    return "utf-8"


def decode_body(fetched: Fetched, kind: str, config: WebLoaderConfig) -> str:
    """The response body as text."""
    data = fetched.body
    if fetched.truncated:
        data = _trim_partial(data, config.encoding or _charset_hint(fetched, kind == "html"))
    try:
        if config.encoding:
            try:
                return data.decode(config.encoding)
            except (LookupError, UnicodeDecodeError) as exc:
                raise LoaderError(f"cannot decode as {config.encoding}: {exc}") from None
        if kind == "html":
            return decode_html(data, fetched.url, declared=fetched.charset)
        return decode_text(data, fetched.url, declared=fetched.charset)
    except LoaderError as exc:
        raise WebLoaderError(exc.reason, source=fetched.url, position=exc.position) from None


def page_metadata(fetched: Fetched, config: WebLoaderConfig) -> dict[str, Any]:
    """What every web document carries."""
    metadata: dict[str, Any] = {"url": fetched.url, "status": fetched.status, "content_type": fetched.content_type}
    if config.record_fetched_at:
        metadata["fetched_at"] = fetched.fetched_at
    if fetched.requested_url != fetched.url:
        metadata["requested_url"] = fetched.requested_url
    if fetched.truncated:
        metadata["truncated"] = True
    return metadata


def to_document(fetched: Fetched, kind: str, config: WebLoaderConfig) -> Document:
    """One document of an HTML, text or JSON response; ``source`` is the final URL."""
    text = decode_body(fetched, kind, config)
    metadata = page_metadata(fetched, config)
    if kind == "html":
        try:
            content = extract_html(text, selector=config.selector, base_url=fetched.url, max_chars=config.max_text_chars)
        except LoaderError as exc:
            raise WebLoaderError(exc.reason, source=fetched.url, position=exc.position) from None
        text = content.text
        metadata.update(html_metadata(content))
    elif kind == "json":
        if fetched.truncated:
            raise WebLoaderError("a truncated JSON body cannot be parsed; raise max_response_bytes", source=fetched.url)
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise WebLoaderError(f"invalid JSON: {exc}", source=fetched.url) from None
        text = json.dumps(value, indent=2, ensure_ascii=False)
    text = text.lstrip("\ufeff")
    try:
        check_text_chars(text, config.max_text_chars, fetched.url)
    except LoaderError as exc:
        raise WebLoaderError(exc.reason, source=fetched.url) from None
    return Document.create(text, fetched.url, metadata=metadata)
