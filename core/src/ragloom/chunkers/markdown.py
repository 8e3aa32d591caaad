"""The ``markdown`` chunker: sections first, then recursive splitting inside each.

- Headings (ATX ``## Title`` and setext ``Title`` underlined with ``===`` or
  ``---``) start sections; a chunk never spans two sections. Each chunk's
  metadata holds ``headings``, the path of headings above it
  (``["Install", "Linux"]``). A setext heading's title is its last text line.
- Fenced code blocks (```` ``` ```` / ``~~~``) and pipe tables (a header row,
  a ``|---|`` delimiter row and the rows after it) are kept whole when they fit
  in ``size``; a larger one is cut at line breaks (then every ``size``).
  Headings inside code fences are code, not headings.
- YAML/TOML frontmatter (``---`` … ``---`` or ``+++`` … ``+++`` at the very
  start) is left out of every chunk.
- Between code and tables, text is split like ``recursive`` (``separators``).

Overlap works like ``recursive``, within a section only. No chunk is ever
over ``size`` characters.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

import attrs

from ragloom.chunkers.base import check_separators, check_sizes, fingerprint_of, spans_to_chunks
from ragloom.chunkers.packing import DEFAULT_SEPARATORS
from ragloom.chunkers.pieces import pack, split_ends, trimmed_spans
from ragloom.types import Chunk, Document

_FRONTMATTER = re.compile(r"\A(?:---|\+\+\+)[ \t]*\r?\n")
# Line patterns, matched at line starts only: each also has a finder that starts
# with the newline before the line, so the regex engine can skip to newlines fast.
_FENCE = r" {0,3}(`{3,}|~{3,})[^\n]*$"
_ATX = r" {0,3}(#{1,6})(?:[ \t]([^\n]*))?$"
_SETEXT = r" {0,3}(=+|-+)[ \t]*$"
_TABLE_DELIMITER = r" {0,3}(?=[^\n]*\|)\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$"
_LIST_OR_QUOTE = re.compile(r" {0,3}(?:[-*+>]|\d+[.)])(?:[ \t]|$)")


class _LinePattern:
    """A regex applied at the start of a line."""

    def __init__(self, source: str):
        self.line = re.compile(source, re.M)

    def match(self, text: str, position: int) -> re.Match[str] | None:
        """The match of the line starting at ``position``."""
        return self.line.match(text, position)


_FENCES = _LinePattern(_FENCE)
_ATXS = _LinePattern(_ATX)
_SETEXTS = _LinePattern(_SETEXT)
_TABLE_DELIMITERS = _LinePattern(_TABLE_DELIMITER)
#: Lines that may be structure start with one of these (after up to 3 spaces).
_MARKED_LINE = re.compile(r"\n {0,3}[#`~=|:-]")
_PATTERNS_BY_MARK = {
    "#": (("atx", _ATXS),),
    "`": (("fence", _FENCES),),
    "~": (("fence", _FENCES),),
    "=": (("setext", _SETEXTS),),
    "-": (("setext", _SETEXTS), ("table", _TABLE_DELIMITERS)),
    "|": (("table", _TABLE_DELIMITERS),),
    ":": (("table", _TABLE_DELIMITERS),),
}


def _structure_lines(text: str, start: int) -> dict[str, list[tuple[int, re.Match[str]]]]:
    """``(line start, match)`` of fence, ATX, setext-underline and table-delimiter lines, by kind.

    One scan finds the lines starting with a Markdown mark; only those are matched further.
    """
    found: dict[str, list[tuple[int, re.Match[str]]]] = {"atx": [], "fence": [], "setext": [], "table": []}
    lines = [start] if start < len(text) else []
    lines.extend(m.start() + 1 for m in _MARKED_LINE.finditer(text, start))
    for line in lines:
        mark = text[line : line + 4].lstrip(" ")[:1]
        for kind, pattern in _PATTERNS_BY_MARK.get(mark, ()):
            match = pattern.match(text, line)
            if match:
                found[kind].append((line, match))
    return found


@attrs.frozen(kw_only=True)
class MarkdownConfig:
    """At most ``size`` characters per chunk, sections never mixed, code and tables kept whole."""

    size: int = attrs.field(default=1000, validator=attrs.validators.gt(0))
    overlap: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    separators: tuple[str, ...] = attrs.field(default=DEFAULT_SEPARATORS)

    def __attrs_post_init__(self) -> None:
        check_sizes(self.size, self.overlap)
        check_separators(self.separators)


def _line_end(text: str, position: int) -> int:
    """Offset just past the line containing ``position`` (its newline included)."""
    newline = text.find("\n", position)
    return len(text) if newline == -1 else newline + 1


def _line_start(text: str, position: int) -> int:
    return text.rfind("\n", 0, position) + 1


def frontmatter_end(text: str) -> int:
    """Where the body starts: after a leading ``---``/``+++`` block, else 0."""
    match = _FRONTMATTER.match(text)
    if not match:
        return 0
    fence = text[:3]
    closing = re.compile(rf"^(?:{re.escape(fence)}|\.\.\.)[ \t]*$", re.M).search(text, match.end())
    return _line_end(text, closing.start()) if closing else 0


def _fences(text: str, lines: list[tuple[int, re.Match[str]]]) -> list[tuple[int, int]]:
    """``(start, end)`` of fenced code blocks; an unclosed fence runs to the end."""
    blocks: list[tuple[int, int]] = []
    opening = None
    for line, match in lines:
        marker = match.group(1)
        if opening is None:
            opening = (line, marker)
        elif marker[0] == opening[1][0] and len(marker) >= len(opening[1]) and not match.group(0).strip("\n \t" + marker[0]):
            blocks.append((opening[0], _line_end(text, match.end())))
            opening = None
    if opening is not None:
        blocks.append((opening[0], len(text)))
    return blocks


def _inside(blocks: list[tuple[int, int]], position: int) -> bool:
    index = bisect_right(blocks, (position, 1 << 62)) - 1
    return index >= 0 and blocks[index][0] <= position < blocks[index][1]


def _tables(text: str, start: int, lines: list[tuple[int, re.Match[str]]], fences: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``(start, end)`` of pipe tables: header row, delimiter row, body rows."""
    tables: list[tuple[int, int]] = []
    for row, match in lines:
        if row == start or _inside(fences, row) or (tables and row < tables[-1][1]):
            continue
        header = _line_start(text, row - 1)
        if "|" not in text[header:row] or not text[header:row].strip() or header < start:
            continue
        end = _line_end(text, match.end())
        while end < len(text):
            following = _line_end(text, end)
            line = text[end:following]
            if "|" not in line or not line.strip():
                break
            end = following
        tables.append((header, end))
    return tables


def _atx_title(raw: str) -> str:
    """The title of an ATX heading: without the optional closing ``#`` run."""
    title = raw.strip()
    stripped = title.rstrip("#")
    if stripped != title and (not stripped or stripped[-1] in " \t"):
        title = stripped.strip()
    return title


def _headings(
    text: str, start: int, lines: dict[str, list[tuple[int, re.Match[str]]]], fences: list[tuple[int, int]], tables: list[tuple[int, int]]
) -> list[tuple[int, int, str]]:
    """``(line start, level, title)`` of every heading outside code and tables, in order."""
    found: list[tuple[int, int, str]] = []
    blocks = sorted(fences + tables)
    for line, match in lines["atx"]:
        if not _inside(blocks, line):
            found.append((line, len(match.group(1)), _atx_title(match.group(2) or "")))
    for line, match in lines["setext"]:
        if line == start or _inside(blocks, line):
            continue
        title_start = _line_start(text, line - 1)
        title = text[title_start : line - 1].strip()
        if (
            not title
            or title_start < start
            or _inside(blocks, title_start)
            or _LIST_OR_QUOTE.match(text, title_start)
            or _ATXS.match(text, title_start)
            or _SETEXTS.match(text, title_start)
        ):
            continue
        found.append((title_start, 1 if match.group(1)[0] == "=" else 2, title))
    found.sort()
    return found


class MarkdownChunker:
    """Heading-aware Markdown chunking with exact offsets and bounded size."""

    def __init__(self, config: MarkdownConfig | None = None):
        self.config = config or MarkdownConfig()
        self.fingerprint = fingerprint_of("markdown", self.config)

    def sections(self, text: str) -> list[tuple[int, int, list[str], list[tuple[int, int]]]]:
        """``(start, end, heading path, atoms)`` per section; atoms are code blocks and tables."""
        body = frontmatter_end(text)
        if not any(mark in text for mark in "#`~|=-"):
            return [(body, len(text), [], [])]
        lines = _structure_lines(text, body)
        fences = _fences(text, lines["fence"])
        tables = _tables(text, body, lines["table"], fences)
        atoms = sorted(fences + tables)
        headings = _headings(text, body, lines, fences, tables)
        sections = []
        path: list[tuple[int, str]] = []
        starts = [body] + [h[0] for h in headings]
        ends = [h[0] for h in headings] + [len(text)]
        titles: list[list[str]] = [[]]
        for _, level, title in headings:
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, title))
            titles.append([t for _, t in path])
        atom_starts = [a[0] for a in atoms]
        for start, end, names in zip(starts, ends, titles, strict=False):
            if end > start:
                sections.append((start, end, names, atoms[bisect_left(atom_starts, start) : bisect_left(atom_starts, end)]))
        return sections

    def spans_with_headings(self, text: str) -> tuple[list[tuple[int, int]], list[list[str]]]:
        """Trimmed spans and the heading path of each."""
        c = self.config
        spans: list[tuple[int, int]] = []
        paths: list[list[str]] = []
        for start, end, names, atoms in self.sections(text):
            bounds = [start]
            position = start
            for atom_start, atom_end in atoms:
                atom_start, atom_end = max(atom_start, position), min(atom_end, end)
                if atom_end <= atom_start:
                    continue
                if atom_start > position:
                    split_ends(text, position, atom_start, c.separators, c.size, bounds)
                split_ends(text, atom_start, atom_end, ("\n",), c.size, bounds)
                position = atom_end
            if end > position:
                split_ends(text, position, end, c.separators, c.size, bounds)
            for span in trimmed_spans(text, bounds, pack(bounds, c.size, c.overlap)):
                if spans and span[0] >= spans[-1][0] and span[1] <= spans[-1][1]:
                    continue
                spans.append(span)
                paths.append(names)
        return spans, paths

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Trimmed ``(start, end)`` spans of the chunks."""
        return self.spans_with_headings(text)[0]

    def chunk(self, document: Document) -> list[Chunk]:
        """Chunks of the document, each with its ``headings`` path in the metadata."""
        spans, paths = self.spans_with_headings(document.text)
        return spans_to_chunks(document, spans, [{"headings": list(p)} for p in paths])
