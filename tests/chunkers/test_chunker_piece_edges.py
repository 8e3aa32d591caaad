"""Pieces at the edges of size: a stretch that fits stays one piece, so overlap never starts inside it."""

from __future__ import annotations

from chunker_checks import MINILM_TOKENIZER, check_chunks

from ragloom.chunkers import MarkdownChunker, MarkdownConfig, RecursiveChunker, RecursiveConfig
from ragloom.chunkers.pieces import pack

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


def test_a_piece_over_size_after_an_overlapping_chunk_is_never_skipped() -> None:
    """Only tokens make a piece over size (one character a byte-level tokenizer splits into many): it still gets a chunk."""
    assert pack([0, 2, 10, 12], 5, 1) == [(0, 1), (1, 2), (2, 3)]


def test_token_sizes_still_cut_at_the_coarsest_separator() -> None:
    """With sizes in tokens, paragraphs are pieces too: no chunk mixes the end of one with the start of the next."""
    text = "one two three\n\nfour five six seven"
    chunker = RecursiveChunker(RecursiveConfig(size=4, size_unit="tokens", tokenizer=str(MINILM_TOKENIZER)))
    assert [text[a:b] for a, b in chunker.spans(text)] == ["one two three", "four five six seven"]
