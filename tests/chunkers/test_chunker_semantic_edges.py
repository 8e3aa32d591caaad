"""The semantic chunker at its edges: exact similarities, breakpoints at the threshold, segments at exactly
``min_size`` / ``max_size``, whitespace units, the fingerprint and the error message."""

from __future__ import annotations

import numpy as np
import pytest
from chunker_checks import check_spans
from helpers import CountingEmbedder
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.chunkers import SemanticChunker, SemanticConfig
from ragloom.chunkers.semantic import neighbour_similarities
from ragloom.chunkers.sentences import sentence_pieces
from ragloom.errors import ConfigError

TEXT = "Alpha beta gamma. Delta epsilon zeta. Eta theta iota."


def _chunker(**options: object) -> SemanticChunker:
    return SemanticChunker(SemanticConfig(**options), embedder=CountingEmbedder())  # type: ignore[arg-type]


def test_similarities_are_cosines_of_neighbours_whatever_their_length() -> None:
    assert neighbour_similarities(np.zeros((0, 3), dtype=np.float32)).tolist() == []
    one = neighbour_similarities(np.array([[1.0, 2.0]], dtype=np.float32))
    assert one.tolist() == [] and one.dtype == np.float32
    # norms 5 and 0.5: cosines, not dot products
    two = neighbour_similarities(np.array([[3, 4], [0.4, 0.3]], dtype=np.float32))
    assert two.tolist() == pytest.approx([0.96])
    rows = np.array([[1, 0], [0, 1], [0.6, 0.8], [0.3, 0.4]], dtype=np.float32)
    assert neighbour_similarities(rows).tolist() == pytest.approx([0.0, 0.8, 1.0])


def test_a_zero_vector_is_similar_to_both_its_neighbours() -> None:
    rows = np.array([[0, 0], [1, 0], [0, 1], [0, 0], [0, 0], [3, 4]], dtype=np.float32)
    assert neighbour_similarities(rows).tolist() == pytest.approx([1.0, 0.0, 1.0, 1.0, 1.0])


@settings(deadline=None, max_examples=60)
@given(st.lists(st.lists(st.floats(-4, 4, width=32), min_size=3, max_size=3), min_size=2, max_size=8))
def test_similarities_match_the_cosine_formula(rows: list[list[float]]) -> None:
    vectors = np.array(rows, dtype=np.float64)
    got = neighbour_similarities(vectors)
    assert len(got) == len(rows) - 1
    for i, value in enumerate(got.tolist()):
        a, b = vectors[i], vectors[i + 1]
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        expected = 1.0 if na == 0 or nb == 0 else float(a @ b / (na * nb))
        assert value == pytest.approx(expected, abs=1e-6)


def test_a_similarity_equal_to_the_threshold_is_no_breakpoint() -> None:
    chunker = _chunker(breakpoint="threshold", breakpoint_threshold=0.5)
    assert chunker.breakpoints(np.array([0.5, 0.49, 0.51, -1.0])).tolist() == [False, True, False, True]
    assert chunker.breakpoints(np.array([0.1])).tolist() == [True]
    empty = chunker.breakpoints(np.zeros(0))
    assert empty.tolist() == [] and empty.dtype == bool


def test_percentile_breakpoints_are_distances_strictly_above_the_percentile() -> None:
    similarities = np.array([0.9, 0.1, 0.5, 0.7], dtype=np.float32)
    assert _chunker(breakpoint_percentile=100).breakpoints(similarities).tolist() == [False] * 4
    assert _chunker(breakpoint_percentile=0).breakpoints(similarities).tolist() == [False, True, True, True]
    assert _chunker(breakpoint_percentile=50).breakpoints(similarities).tolist() == [False, True, True, False]
    assert _chunker(breakpoint_percentile=90).breakpoints(np.array([0.3])).tolist() == [False]
    empty = _chunker().breakpoints(np.zeros(0))
    assert empty.tolist() == [] and empty.dtype == bool


def test_a_segment_of_exactly_min_size_ends_at_a_breakpoint() -> None:
    bounds = sentence_pieces(TEXT, 0, len(TEXT), 1500, None)
    assert len(bounds) == 4
    first = bounds[1] - bounds[0]
    # threshold 1.0: every pair of different sentences is a breakpoint
    at = _chunker(breakpoint="threshold", breakpoint_threshold=1.0, min_size=first, max_size=1500)
    assert [TEXT[a:b] for a, b in at.spans(TEXT)][0] == "Alpha beta gamma."
    above = _chunker(breakpoint="threshold", breakpoint_threshold=1.0, min_size=first + 1, max_size=1500)
    assert [TEXT[a:b] for a, b in above.spans(TEXT)][0] == "Alpha beta gamma. Delta epsilon zeta."


def test_units_of_exactly_max_size_together_stay_one_segment() -> None:
    bounds = sentence_pieces(TEXT, 0, len(TEXT), 1500, None)
    two = bounds[2] - bounds[0]
    # threshold -1.0: no breakpoint at all, only max_size ends a segment
    fits = _chunker(breakpoint="threshold", breakpoint_threshold=-1.0, min_size=0, max_size=two)
    assert [TEXT[a:b] for a, b in fits.spans(TEXT)] == ["Alpha beta gamma. Delta epsilon zeta.", "Eta theta iota."]
    whole = _chunker(breakpoint="threshold", breakpoint_threshold=-1.0, min_size=0, max_size=len(TEXT))
    assert whole.spans(TEXT) == [(0, len(TEXT))]


def test_whitespace_between_units_never_makes_an_empty_chunk() -> None:
    text = "Hi there." + " " * 30 + "\n\n" + " " * 30 + "Bye now."
    spans = _chunker(breakpoint="threshold", breakpoint_threshold=1.0, min_size=0, max_size=12).spans(text)
    check_spans(text, spans, 12)
    assert [text[a:b] for a, b in spans] == ["Hi there.", "Bye now."]
    assert _chunker().spans(" \n\n ") == []


def test_a_document_of_one_unit_is_one_chunk_and_its_leading_text_is_kept() -> None:
    assert _chunker().spans("  Just one sentence here.  ") == [(2, 25)]
    spans = _chunker(breakpoint="threshold", breakpoint_threshold=-1.0, min_size=0).spans(TEXT)
    assert spans == [(0, len(TEXT))]


def test_some_whitespace_units_get_zero_rows_the_others_their_vectors() -> None:
    embedder = CountingEmbedder(dim=16)
    chunker = SemanticChunker(SemanticConfig(), embedder=embedder)
    rows = chunker._embed(["alpha", "", "beta"])
    assert rows.shape == (3, 16) and rows.dtype == np.float32
    assert not rows[1].any() and rows[0].any() and rows[2].any()
    assert np.array_equal(rows[[0, 2]], embedder.embed_documents(["alpha", "beta"]))
    assert embedder.texts == 4, "the empty unit is never sent"


def test_the_fingerprint_and_the_missing_embedder_message() -> None:
    embedder = CountingEmbedder()
    config = SemanticConfig(min_size=10, max_size=20)
    chunker = SemanticChunker(config, embedder=embedder)
    assert chunker.config is config
    assert chunker.embedder is embedder
    assert chunker.fingerprint.startswith('semantic:v1:{"breakpoint":"percentile"')
    assert chunker.fingerprint.endswith(f'"max_size":20,"min_size":10}}:embedder={embedder.model_id}')
    assert SemanticChunker(embedder=embedder).config == SemanticConfig()
    with pytest.raises(ConfigError, match=r"^the semantic chunker needs the pipeline's embedder$"):
        SemanticChunker(config, embedder=None)


def test_min_size_may_equal_max_size() -> None:
    assert SemanticConfig(min_size=100, max_size=100).min_size == 100
    with pytest.raises(ValueError, match=r"^'min_size' \(101\) must not exceed 'max_size' \(100\)$"):
        SemanticConfig(min_size=101, max_size=100)


def test_a_document_of_one_unit_costs_no_embedding_call() -> None:
    embedder = CountingEmbedder()
    chunker = SemanticChunker(SemanticConfig(), embedder=embedder)
    assert chunker.spans("Only one sentence.") == [(0, 18)]
    assert embedder.calls == 0 and embedder.texts == 0
