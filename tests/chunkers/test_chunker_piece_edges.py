"""Pieces at the edges of size: a stretch that fits stays one piece, so overlap never starts inside it."""

from __future__ import annotations

from chunker_checks import check_chunks

from ragloom.chunkers import MarkdownChunker, MarkdownConfig

FENCE = "```\nxy\n```\n"  # 11 characters: over size 10, cut at its lines


def test_text_of_exactly_size_before_a_code_block_is_one_piece() -> None:
    """Markdown splits the text between code blocks on its own: a stretch of exactly ``size`` is kept whole,
    so the chunk after it starts with the code, not with the stretch's last line."""
    text = "aaaa\nbbbb\n" + FENCE
    chunks = check_chunks(MarkdownChunker(MarkdownConfig(size=10, overlap=5)), text)
    assert [c.text for c in chunks] == ["aaaa\nbbbb", "```\nxy", "xy\n```"]
    # one under size: the stretch is one piece whichever rule applies
    text = "aaa\nbbbb\n" + FENCE
    chunks = check_chunks(MarkdownChunker(MarkdownConfig(size=10, overlap=5)), text)
    assert [c.text for c in chunks] == ["aaa\nbbbb", "```\nxy", "xy\n```"]
