"""The BM25 index: scores against references, correctness after removal and re-adding."""

from __future__ import annotations

import math
from collections import Counter

import bm25s
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.analysis import Analyzer, AnalyzerConfig
from ragloom.keyword import BM25Config, BM25Index

CORPUS = [
    "The Lumen Lamp connects to your home Wi-Fi network in two minutes.",
    "Reset the lamp by holding the power button for ten seconds.",
    "Circadian mode shifts colour temperature through the day, warm at night.",
    "The lamp's battery lasts eight hours; charge it with any USB-C cable.",
    "Wi-Fi setup fails when the router uses a 5 GHz-only network.",
    "Returns are accepted within thirty days; shipping is free for lamps.",
    "Night mode dims the lamp gradually and turns it off after an hour.",
    "Developers can control the lamp through a local HTTP API on port 8080.",
]
QUERIES = ["wifi network setup", "lamp battery charge", "night mode dimming", "free shipping returns", "lamp lamp api", "zzz"]


def reference_scores(docs: list[list[str]], query: list[str], k1: float, b: float) -> list[float]:
    """Lucene BM25 written out term by term (the textbook formula)."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    df = Counter(t for d in docs for t in set(d))
    out = []
    for doc in docs:
        tf = Counter(doc)
        score = 0.0
        for term in query:
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf[term] / (tf[term] + k1 * (1 - b + b * len(doc) / avgdl))
        out.append(score)
    return out


@pytest.mark.parametrize(("k1", "b"), [(1.5, 0.75), (1.2, 0.4), (0.9, 1.0)])
def test_scores_match_bm25s_and_the_formula(k1: float, b: float) -> None:
    analyzer = Analyzer()
    index = BM25Index(BM25Config(k1=k1, b=b))
    index.add(list(range(len(CORPUS))), CORPUS)
    tokens = analyzer.tokens_many(CORPUS)
    reference = bm25s.BM25(k1=k1, b=b, method="lucene")
    reference.index(tokens, show_progress=False)
    for query in QUERIES:
        query_tokens = analyzer.tokens(query)
        mine = index.score_all(query)
        formula = reference_scores(tokens, query_tokens, k1, b)
        known = [t for t in query_tokens if t in reference.vocab_dict]
        theirs = reference.get_scores(known) if known else np.zeros(len(CORPUS))
        for doc in range(len(CORPUS)):
            assert mine.get(doc, 0.0) == pytest.approx(formula[doc], rel=1e-5, abs=1e-6)
            assert mine.get(doc, 0.0) == pytest.approx(float(theirs[doc]), rel=1e-5, abs=1e-6)


def test_search_order_top_k_and_restriction() -> None:
    index = BM25Index()
    index.add(list(range(len(CORPUS))), CORPUS)
    hits = index.search("lamp wifi network", top_k=3)
    assert len(hits) == 3
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert hits[0][0] in (0, 4)
    only = index.search("lamp wifi network", top_k=10, keys=[1, 3])
    assert {k for k, _ in only} == {1, 3}
    assert index.search("lamp", top_k=0) == [] and index.search("qqq", top_k=5) == []
    assert index.search("the and of", top_k=5) == []  # only stop words


def test_removed_documents_are_never_returned_and_stats_follow() -> None:
    index = BM25Index()
    index.add(list(range(len(CORPUS))), CORPUS)
    assert index.remove([0, 4, 99]) == 2
    assert all(k not in (0, 4) for k, _ in index.search("wifi network", top_k=10))
    fresh = BM25Index()
    keys = [k for k in range(len(CORPUS)) if k not in (0, 4)]
    fresh.add(keys, [CORPUS[k] for k in keys])
    assert index.score_all("lamp night") == pytest.approx(fresh.score_all("lamp night"))
    index.add([4], ["a completely new text about wifi"])  # re-adding a key replaces it
    assert [k for k, _ in index.search("wifi", top_k=5)] == [4]
    index.add([4], ["now about batteries"])
    assert index.search("wifi", top_k=5) == [] and len(index) == len(CORPUS) - 1


def test_remap_keys() -> None:
    index = BM25Index()
    index.add([10, 20], ["alpha beta", "beta gamma"])
    index.remap({10: 0, 20: 1})
    assert sorted(k for k, _ in index.search("beta", top_k=5)) == [0, 1]
    with pytest.raises(ValueError):
        index.remap({0: 1})


def test_analysis_is_configurable() -> None:
    plain = BM25Index(BM25Config(analyzer=AnalyzerConfig(stemmer=None, stopwords=None)))
    plain.add([0], ["the lamps"])
    assert plain.search("lamp", top_k=1) == [] and plain.search("the", top_k=1)[0][0] == 0


WORDS = st.sampled_from(["lamp", "wifi", "night", "mode", "battery", "reset", "router", "colour", "cable", "api"])
TEXTS = st.lists(WORDS, min_size=0, max_size=8).map(" ".join)
OPS = st.lists(st.tuples(st.booleans(), st.integers(0, 12), TEXTS), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(ops=OPS, query=st.lists(WORDS, min_size=1, max_size=3).map(" ".join))
def test_incremental_index_equals_a_fresh_one(ops: list[tuple[bool, int, str]], query: str) -> None:
    index = BM25Index()
    live: dict[int, str] = {}
    for add, key, text in ops:
        if add:
            index.add([key], [text])
            live[key] = text
        else:
            index.remove([key])
            live.pop(key, None)
        index.search(query, top_k=3)  # interleaved searches rebuild between changes
    fresh = BM25Index()
    fresh.add(list(live), list(live.values()))
    got = index.score_all(query)
    assert set(got) <= set(live)
    assert got == pytest.approx(fresh.score_all(query), rel=1e-5)
    assert {k for k, _ in index.search(query, top_k=20)} == set(fresh.score_all(query))


def test_clear() -> None:
    index = BM25Index()
    index.add([1, 2], ["lamp", "lamp wifi"])
    index.clear()
    assert len(index) == 0 and index.search("lamp", top_k=5) == []
    index.add([3], ["lamp"])
    assert index.search("lamp", top_k=5)[0][0] == 3
