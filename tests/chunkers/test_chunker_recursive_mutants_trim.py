"""Overlap into trailing whitespace never yields a chunk that is only a tail of the one before it."""

from __future__ import annotations

from chunker_checks import check_chunks

from ragloom.chunkers import RecursiveChunker, RecursiveConfig


def test_an_overlapping_chunk_that_trims_to_the_previous_end_is_dropped() -> None:
    """The second packed chunk is "bbb" plus spaces: trimmed, it ends where the first ends, inside it: not a chunk."""
    chunker = RecursiveChunker(RecursiveConfig(size=10, overlap=6))
    text = "aaa bbb" + " " * 20 + "ccc"
    assert [(c.start, c.end, c.text) for c in check_chunks(chunker, text)] == [(0, 7, "aaa bbb"), (27, 30, "ccc")]
    chunker = RecursiveChunker(RecursiveConfig(size=14, overlap=9))
    text = "alpha beta" + " " * 12 + "gamma"
    assert [(c.start, c.end) for c in check_chunks(chunker, text)] == [(0, 10), (22, 27)]
