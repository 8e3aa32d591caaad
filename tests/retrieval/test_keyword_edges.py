"""BM25 index edges a caller sees: what ``ranked`` hands back, restrictions that exclude every match, messages."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.keyword import BM25Index

TEXTS = ["lamp glows warm", "dark room", "lamp oil lamp", "battery charge"]


def _index() -> BM25Index:
    index = BM25Index()
    index.add([0, 1, 2, 3], TEXTS)
    return index


def test_ranked_gives_the_ceiling_only_when_asked() -> None:
    index = _index()
    found, scores, top = index.ranked("lamp oil", top_k=2)
    assert top == 0.0 and found == [2, 0] and scores.dtype == np.float64
    assert [(k, s) for k, s in zip(found, scores.tolist(), strict=True)] == index.search("lamp oil", top_k=2)
    found, _, top = index.ranked("lamp oil", top_k=2, ceiling=True)
    assert found == [2, 0] and top == pytest.approx(index.ceiling("lamp oil")) and top > 0
    for query in ("lamp", "zzz"):
        empty, empty_scores, top = index.ranked(query, top_k=0, ceiling=True)
        assert empty == [] and empty_scores.shape == (0,) and top == pytest.approx(index.ceiling(query))


def test_a_restriction_that_excludes_every_match_finds_nothing() -> None:
    index = _index()
    assert index.search("lamp", top_k=3, keys=[1, 3]) == []
    found, scores, top = index.ranked("lamp", top_k=3, keys=[1, 3, 99])
    assert found == [] and scores.shape == (0,) and top == 0.0
    found, scores, _ = index.ranked("unknownword", top_k=3)
    assert found == [] and scores.shape == (0,)
    assert index.search("lamp", top_k=3, keys=[2, 99]) == [(2, pytest.approx(index.score_all("lamp")[2]))]


def test_a_remap_that_would_merge_two_documents_says_so() -> None:
    index = _index()
    with pytest.raises(ValueError, match="^remap would merge two documents into one key$"):
        index.remap({0: 1})
    assert index.keys() == [0, 1, 2, 3]  # a refused remap changes nothing
    assert [k for k, _ in index.search("lamp", top_k=5)] == [2, 0]
