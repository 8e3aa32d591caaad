"""The ``html`` loader and :func:`extract_html`, the block-aware text extraction it shares with the web loader.

Extraction rules: ``script``, ``style``, ``noscript``, ``template``, ``svg``
(and the rest of ``<head>``) are dropped; block elements become paragraph
breaks, ``<br>``, list items, table rows and cells become line breaks; inline
elements never split a word (``<b>Lu</b>men`` stays ``Lumen``); whitespace
collapses as a browser renders it except inside ``<pre>``; entities are
decoded by the parser.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin

import attrs

from ragloom.errors import LoaderError
from ragloom.loaders.base import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_TEXT_CHARS,
    bom_encoding,
    decode_text,
    file_metadata,
    files_of,
    read_bytes,
)
from ragloom.types import Document

HTML_SUFFIXES = (".html", ".htm", ".xhtml")

#: Elements whose content is never text.
SKIPPED_TAGS = frozenset(
    {"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "embed", "canvas", "-comment", "!doctype"}
)
#: Elements that end a paragraph (a blank line between blocks).
PARAGRAPH_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "center", "details", "dialog", "dir",
        "div", "dl", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
        "header", "hgroup", "hr", "html", "legend", "main", "menu", "nav", "ol", "p", "pre", "section",
        "summary", "table", "ul",
    }
)  # fmt: skip
#: Elements that end a line.
LINE_TAGS = frozenset(
    {"br", "li", "dt", "dd", "tr", "td", "th", "thead", "tbody", "tfoot", "option", "textarea", "label", "input"}
)  # fmt: skip
#: Deepest element nesting accepted: the HTML parser's scope checks make deeper
#: (hostile) nesting quadratic in time; browsers cap the depth too.
MAX_HTML_DEPTH = 2048
# Elements that need no end tag (or routinely go without one): not counted as nesting.
_UNNESTED = frozenset(
    {
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
        "wbr", "p", "li", "dt", "dd", "option", "optgroup", "tr", "td", "th", "thead", "tbody", "tfoot",
        "colgroup", "caption", "rb", "rt", "rtc", "rp", "html", "head", "body",
    }
)  # fmt: skip
_XML_ENCODING = re.compile(rb"""\s*<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9_.:-]{1,40})""", re.IGNORECASE)
# Labels browsers decode with another codec than Python's of the same name.
_CHARSET_ALIASES = {
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "l1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "x-user-defined": "cp1252",
    "iso-8859-9": "cp1254",
    "tis-620": "cp874",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-sjis": "shift_jis",
}
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)")
_PRESERVE_TAGS = frozenset({"pre", "textarea", "listing", "plaintext"})
_WHITESPACE = re.compile("[ \t\n\r\f\xa0\u200b]+")
_META_CHARSET = re.compile(rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.IGNORECASE)


@attrs.frozen
class HtmlContent:
    """What :func:`extract_html` finds in a page."""

    text: str
    title: str | None
    description: str | None
    lang: str | None
    canonical_url: str | None


# Private-use characters mark breaks and preformatted whitespace while the
# parser's C code concatenates the text; they are removed from the input first.
_PARAGRAPH = "\ue000"
_LINE = "\ue001"
_PRE_NEWLINE = "\ue002"
_PRE_SPACE = "\ue003"
_PRE_TAB = "\ue004"
_SENTINELS = re.compile("[\ue000-\ue004]")
_SENTINEL_CHARS = "\ue000\ue001\ue002\ue003\ue004"
_BREAKS = re.compile("[\ue000\ue001][ \ue000\ue001]*")
_PRE_WHITESPACE = str.maketrans({"\n": _PRE_NEWLINE, " ": _PRE_SPACE, "\t": _PRE_TAB, "\r": None})
_PARAGRAPH_SELECTOR = ", ".join(sorted(PARAGRAPH_TAGS))
_LINE_SELECTOR = ", ".join(sorted(LINE_TAGS))
_SKIPPED_ELEMENTS = sorted(tag for tag in SKIPPED_TAGS if tag[0].isalpha())


def _break(match: re.Match[str]) -> str:
    return "\n\n" if _PARAGRAPH in match.group(0) else "\n"


def _mark_blocks(root: Any) -> None:
    """Mark block boundaries and preformatted whitespace with sentinels inside ``root``."""
    for node in root.css(_PARAGRAPH_SELECTOR):
        node.insert_before(_PARAGRAPH)
        node.insert_after(_PARAGRAPH)
    for node in root.css(_LINE_SELECTOR):
        node.insert_before(_LINE)
        node.insert_after(_LINE)
    for node in root.css(", ".join(sorted(_PRESERVE_TAGS))):
        for child in list(node.traverse(include_text=True)):
            if child.is_text_node and child.text_content:
                child.replace_with(child.text_content.translate(_PRE_WHITESPACE))


def _render(raw: str) -> str:
    """Browser-like whitespace: runs collapse to a space, marked breaks become newlines."""
    if "\u200b" in raw:
        raw = raw.replace("\u200b", "")
    text = " ".join(raw.split())  # str.split() knows every Unicode space, \xa0 included
    text = _BREAKS.sub(_break, text).replace(" \n", "\n")
    for sentinel, char in ((_PRE_NEWLINE, "\n"), (_PRE_SPACE, " "), (_PRE_TAB, "\t")):
        if sentinel in text:
            text = text.replace(sentinel, char)
    return text.strip(" \n")


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = _WHITESPACE.sub(" ", value).strip()
    return value or None


def _meta_content(tree: Any, *selectors: str) -> str | None:
    for selector in selectors:
        node = tree.css_first(selector)
        if node is not None:
            value = _clean(node.attributes.get("content"))
            if value:
                return value
    return None


def _canonical(tree: Any, base_url: str | None) -> str | None:
    base = base_url
    base_node = tree.css_first("base[href]")
    if base_node is not None and base_node.attributes.get("href"):
        base = urljoin(base or "", base_node.attributes["href"].strip())
    for node in tree.css("link[rel][href]"):
        rel = (node.attributes.get("rel") or "").lower().split()
        href = (node.attributes.get("href") or "").strip()
        if "canonical" in rel and href:
            return urljoin(base, href) if base else href
    return None


def check_nesting(html: str, limit: int = MAX_HTML_DEPTH) -> None:
    """LoaderError when elements nest deeper than ``limit`` (counted from the tags, before parsing)."""
    if html.count("<") <= limit:
        return
    depth = 0
    for match in _TAG.finditer(html):
        name = match.group(2).lower()
        if name in _UNNESTED:
            continue
        if match.group(1):
            depth = depth - 1 if depth else 0
        else:
            depth += 1
            if depth > limit:
                raise LoaderError(f"HTML elements nest deeper than {limit} levels", position=f"character {match.start()}")


def _outermost(nodes: list[Any]) -> list[Any]:
    """The nodes not inside another of ``nodes`` (document order kept); linear in the tree size."""
    ids = {node.mem_id for node in nodes}
    inside: dict[int, bool] = {}  # memo: node id -> some ancestor is in ``ids``
    kept = []
    for node in nodes:
        path = []
        parent = node.parent
        answer = False
        while parent is not None:
            key = parent.mem_id
            if key in ids:
                answer = True
                break
            if key in inside:
                answer = inside[key]
                break
            path.append(key)
            parent = parent.parent
        for key in path:
            inside[key] = answer
        if not answer:
            kept.append(node)
    return kept


def extract_html(
    html: str, *, selector: str | None = None, base_url: str | None = None, max_chars: int | None = None
) -> HtmlContent:
    """Text and metadata of an HTML page.

    ``selector`` (CSS) keeps only the matching elements (their text joined by
    blank lines; none matching gives ``""``); an invalid selector raises
    :class:`LoaderError`. ``base_url`` resolves a relative canonical URL.
    ``max_chars`` bounds the extracted text: going over raises LoaderError,
    and so does nesting deeper than :data:`MAX_HTML_DEPTH` elements.
    """
    from selectolax.lexbor import LexborHTMLParser, SelectolaxError

    if any(char in html for char in _SENTINEL_CHARS):
        html = _SENTINELS.sub("", html)
    check_nesting(html)
    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = _clean(title_node.text(deep=True)) if title_node is not None else None
    html_node = tree.css_first("html")
    lang = _clean(html_node.attributes.get("lang")) if html_node is not None else None
    content = HtmlContent(
        text="",
        title=title or _meta_content(tree, 'meta[property="og:title"]'),
        description=_meta_content(tree, 'meta[name="description" i]', 'meta[property="og:description"]'),
        lang=lang,
        canonical_url=_canonical(tree, base_url),
    )
    tree.strip_tags(_SKIPPED_ELEMENTS)
    for node in _outermost(tree.css("[hidden]")):
        node.decompose()
    if selector is None:
        roots = [tree.body] if tree.body is not None else []
    else:
        try:
            matches = tree.css(selector)
        except (SelectolaxError, ValueError, TypeError) as exc:
            raise LoaderError(f"invalid CSS selector {selector!r}: {exc}", position="selector") from None
        roots = _outermost(matches)
    if not roots:
        return content
    pieces = []
    for root in roots:
        _mark_blocks(root)
        pieces.append(root.text(deep=True, separator="", strip=False))
    text = _render(_PARAGRAPH.join(pieces))
    if max_chars is not None and len(text) > max_chars:
        raise LoaderError(f"extracted text is over the limit of {max_chars} characters (max_text_chars)")
    return attrs.evolve(content, text=text)


def html_charset(label: str) -> str | None:
    """The codec a browser uses for a declared charset label (WHATWG rules), or None to ignore it."""
    label = label.strip().lower()
    if label.startswith(("utf-16", "utf-32", "ucs-2", "unicode")):
        return None  # an ASCII-compatible document cannot really be UTF-16: browsers use UTF-8
    return _CHARSET_ALIASES.get(label, label)


def decode_html(data: bytes, source: str, *, declared: str | None = None) -> str:
    """HTML bytes as text: BOM, else ``declared`` (an HTTP charset), else ``<meta charset>`` or the
    XML declaration, else UTF-8, else detected."""
    if bom_encoding(data)[0] is None:
        if declared is None:
            head = data[:8192]
            match = _META_CHARSET.search(head) or _XML_ENCODING.match(head)
            if match:
                declared = match.group(1).decode("ascii", "replace")
        declared = html_charset(declared) if declared else None
    return decode_text(data, source, declared=declared)


@attrs.frozen(kw_only=True)
class HtmlLoaderConfig:
    """Options of the html loader.

    ``selector``: CSS selector of the content to keep (e.g. ``"main, article"``);
    ``encoding``: force a charset instead of BOM / ``<meta charset>`` / detection;
    ``max_file_bytes``, ``max_text_chars``: limits.
    """

    selector: str | None = None
    encoding: str | None = None
    max_file_bytes: int = attrs.field(default=DEFAULT_MAX_FILE_BYTES, validator=attrs.validators.gt(0))
    max_text_chars: int = attrs.field(default=DEFAULT_MAX_TEXT_CHARS, validator=attrs.validators.gt(0))


def html_metadata(content: HtmlContent) -> dict[str, str]:
    """The non-empty metadata fields of extracted HTML."""
    fields = {
        "title": content.title,
        "description": content.description,
        "lang": content.lang,
        "canonical_url": content.canonical_url,
    }
    return {key: value for key, value in fields.items() if value}


class HtmlLoader:
    """HTML files: one document of block-aware text; title, description, lang, canonical URL in metadata."""

    def __init__(self, config: HtmlLoaderConfig | None = None):
        self.config = config or HtmlLoaderConfig()

    def load_file(self, path: str) -> Document:
        """One document."""
        data = read_bytes(path, self.config.max_file_bytes)
        if self.config.encoding:
            try:
                html = data.decode(self.config.encoding)
            except (LookupError, UnicodeDecodeError) as exc:
                raise LoaderError(f"cannot decode as {self.config.encoding}: {exc}", source=path) from None
        else:
            html = decode_html(data, path)
        try:
            content = extract_html(html, selector=self.config.selector, max_chars=self.config.max_text_chars)
        except LoaderError as exc:
            raise LoaderError(exc.reason, source=path, position=exc.position) from None
        return Document.create(content.text, path, metadata={**file_metadata(path), **html_metadata(content)})

    def load(self, source: str) -> Iterator[Document]:
        """One document per file; a directory loads its HTML files in sorted order."""
        for path in files_of(source, HTML_SUFFIXES):
            yield self.load_file(path)
