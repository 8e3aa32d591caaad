"""The semantic chunker's segment loop: a document of exactly two units, and max_size counted from the segment's start."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragloom.chunkers import SemanticChunker, SemanticConfig
from ragloom.chunkers.sentences import sentence_pieces
from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig

TWO = "Alpha beta gamma. Delta epsilon zeta."
THREE = "Alpha beta gamma. Delta epsilon zeta. Eta theta iota."


class Topics(HashEmbedder):
    """A real embedder whose vectors are chosen per text: e0 for a text starting with "Alpha", e1 otherwise."""

    def __init__(self) -> None:
        super().__init__(HashEmbedderConfig(dim=8))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.eye(8, dtype=np.float32)[[0 if t.startswith("Alpha") else 1 for t in texts]]


def _texts(text: str, spans: list[tuple[int, int]]) -> list[str]:
    return [text[a:b] for a, b in spans]


def test_a_document_of_two_units_is_cut_at_their_breakpoint_and_at_max_size() -> None:
    # a breakpoint between the only two units (different topics)
    split = SemanticChunker(SemanticConfig(breakpoint="threshold", breakpoint_threshold=0.5, min_size=0), embedder=Topics())
    assert _texts(TWO, split.spans(TWO)) == ["Alpha beta gamma.", "Delta epsilon zeta."]
    # no breakpoint at all (threshold -1), but both units together are over max_size
    bounds = sentence_pieces(TWO, 0, len(TWO), 30, None)
    assert len(bounds) == 3
    sized = SemanticChunker(
        SemanticConfig(breakpoint="threshold", breakpoint_threshold=-1.0, min_size=0, max_size=30), embedder=Topics()
    )
    assert _texts(TWO, sized.spans(TWO)) == ["Alpha beta gamma.", "Delta epsilon zeta."]


def test_max_size_is_counted_from_where_the_segment_starts() -> None:
    bounds = sentence_pieces(THREE, 0, len(THREE), 1500, None)
    assert len(bounds) == 4
    # a breakpoint after the first unit only; the last two units are exactly max_size together
    rest = bounds[3] - bounds[1]
    chunker = SemanticChunker(
        SemanticConfig(breakpoint="threshold", breakpoint_threshold=0.5, min_size=0, max_size=rest), embedder=Topics()
    )
    assert _texts(THREE, chunker.spans(THREE)) == ["Alpha beta gamma.", "Delta epsilon zeta. Eta theta iota."]
