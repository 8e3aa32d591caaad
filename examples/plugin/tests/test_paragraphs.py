"""The example plugin's own tests: ragloom's chunker conformance suite, plus what is particular to it."""

from __future__ import annotations

import re

from ragloom_paragraphs import ParagraphChunker, ParagraphsConfig, register_chunkers

from ragloom.plugin import Chunk, Document
from ragloom.testing import ChunkerContract

MAX_CHARS = 80


class TestParagraphChunker(ChunkerContract):
    max_size = MAX_CHARS

    def make_chunker(self) -> ParagraphChunker:
        return ParagraphChunker(ParagraphsConfig(max_chars=MAX_CHARS))

    def may_exceed(self, chunk: Chunk) -> bool:
        # documented: a paragraph longer than max_chars stays one chunk
        return re.search(r"\n[ \t]*\n", chunk.text) is None


def test_paragraphs_are_merged_up_to_max_chars() -> None:
    text = "First paragraph.\n\nSecond one.\n\n" + "x" * 100 + "\n\nLast."
    chunks = ParagraphChunker(ParagraphsConfig(max_chars=40)).chunk(Document.create(text, "doc.txt"))
    assert [c.text for c in chunks] == ["First paragraph.\n\nSecond one.", "x" * 100, "Last."]


def test_registers_through_the_hook() -> None:
    registered: list[tuple[str, object]] = []
    register_chunkers(register=lambda name, factory, **options: registered.append((name, options.get("config"))))
    assert registered == [("paragraphs", ParagraphsConfig)]
