"""Example ragloom plugin: a chunker that keeps paragraphs whole.

It imports only ragloom's public plugin API (``ragloom.plugin``), as every
third-party plugin should; its tests run ``ragloom.testing.ChunkerContract``.
"""

from __future__ import annotations

import re

import attrs

from ragloom.plugin import BuildContext, Chunk, Document, fingerprint_of, hookimpl, spans_to_chunks

_BLANK_LINES = re.compile(r"\n[ \t]*\n")


@attrs.frozen(kw_only=True)
class ParagraphsConfig:
    """Paragraphs are merged while the chunk stays under ``max_chars``."""

    max_chars: int = attrs.field(default=1000, validator=attrs.validators.gt(0))


class ParagraphChunker:
    """Splits at blank lines; a paragraph longer than max_chars stays one chunk."""

    def __init__(self, config: ParagraphsConfig):
        self.config = config
        self.fingerprint = fingerprint_of("paragraphs", config)

    def chunk(self, document: Document) -> list[Chunk]:
        """Paragraph spans (trimmed), neighbours merged while they fit in ``max_chars``."""
        text = document.text
        spans: list[tuple[int, int]] = []
        start = 0
        for match in [*_BLANK_LINES.finditer(text), None]:
            end = match.start() if match else len(text)
            if text[start:end].strip():
                s = start + (len(text[start:end]) - len(text[start:end].lstrip()))
                e = end - (len(text[start:end]) - len(text[start:end].rstrip()))
                if spans and e - spans[-1][0] <= self.config.max_chars:
                    spans[-1] = (spans[-1][0], e)
                else:
                    spans.append((s, e))
            start = match.end() if match else len(text)
        return spans_to_chunks(document, spans)


def _paragraphs(config: ParagraphsConfig, context: BuildContext) -> ParagraphChunker:
    """One chunk per paragraph (blank-line separated), merged up to max_chars."""
    return ParagraphChunker(config)


@hookimpl
def register_chunkers(register):  # type: ignore[no-untyped-def]
    register("paragraphs", _paragraphs, config=ParagraphsConfig)
