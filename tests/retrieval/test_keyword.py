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


def test_export_and_restore_give_the_same_index() -> None:
    index = BM25Index()
    index.add(list(range(len(CORPUS))), CORPUS)
    index.remove([2, 5])
    keys, vocabulary, terms, tfs, offsets, lengths = index.export()
    assert keys == [0, 1, 3, 4, 6, 7] == index.keys()
    assert len(offsets) == len(keys) + 1 and offsets[0] == 0 and offsets[-1] == len(terms) == len(tfs)
    assert list(lengths) == [len(index.analyzer.tokens(CORPUS[k])) for k in keys]
    restored = BM25Index.restore(None, keys, vocabulary, terms, tfs, offsets, lengths)
    assert restored.keys() == keys and len(restored) == len(keys) and 3 in restored and 2 not in restored
    for query in QUERIES:
        assert restored.score_all(query) == pytest.approx(index.score_all(query))
        assert restored.search(query, top_k=4) == index.search(query, top_k=4)
    restored.add([2], [CORPUS[2]])  # a restored index goes on like any other
    assert [k for k, _ in restored.search("circadian colour temperature", top_k=2)] == [2]
    empty = BM25Index().export()
    assert empty[0] == [] and len(empty[2]) == len(empty[3]) == len(empty[5]) == 0 and list(empty[4]) == [0]
    assert len(BM25Index.restore(None, *empty)) == 0
    # a restored index scores with the config and the analyzer it is given
    config = BM25Config(k1=0.9, b=0.2, analyzer=AnalyzerConfig(stemmer=None, stopwords=None))
    tuned = BM25Index(config)
    tuned.add(list(range(len(CORPUS))), CORPUS)
    again = BM25Index.restore(config, *tuned.export())
    assert again.score_all("the lamps network") == pytest.approx(tuned.score_all("the lamps network"))
    assert again.score_all("the lamps network") != pytest.approx(BM25Index.restore(None, *tuned.export()).score_all("the lamps network"))
    plain = Analyzer(AnalyzerConfig(stemmer=None, stopwords=None))
    with_analyzer = BM25Index.restore(None, *tuned.export(), analyzer=plain)
    assert with_analyzer.search("the", top_k=1) and not BM25Index.restore(None, *tuned.export()).search("the", top_k=1)
    for broken in (
        (keys[:-1], vocabulary, terms, tfs, offsets, lengths),
        (keys, vocabulary, terms, tfs, offsets, lengths[:-1]),
        (keys, vocabulary, terms, tfs[:-1], offsets, lengths),
    ):
        with pytest.raises(ValueError, match="^inconsistent BM25 index arrays$"):
            BM25Index.restore(None, *broken)
    with pytest.raises(ValueError, match="^duplicate keys in a BM25 index$"):
        BM25Index.restore(None, [0, 0], vocabulary, terms[: offsets[2]], tfs[: offsets[2]], offsets[:3], lengths[:2])


def test_the_ceiling_bounds_every_score_and_counts_an_unknown_term_as_the_rarest() -> None:
    index = BM25Index()
    assert index.ceiling("lamp") == 0.0
    index.add(list(range(len(CORPUS))), CORPUS)
    for query in QUERIES[:-1]:
        ceiling = index.ceiling(query)
        best = max(index.score_all(query).values())
        assert 0 < best <= ceiling + 1e-6
    single = index.ceiling("circadian")  # one document has it: its score is the ceiling
    assert single == pytest.approx(index.score_all("circadian")[2], rel=1e-6)
    rarest = max(index.ceiling(word) for word in {t for text in CORPUS for t in index.analyzer.tokens(text)})
    assert index.ceiling("zzzunknown") == pytest.approx(rarest)
    assert index.ceiling("circadian zzzunknown") == pytest.approx(single + rarest)
    index.add([99], ["circadian circadian circadian"])  # a change is seen by the next ceiling
    assert index.ceiling("circadian") != pytest.approx(single)


def test_keys_in_one_call_must_match_texts_and_a_repeated_key_keeps_its_last_text() -> None:
    index = BM25Index()
    with pytest.raises(ValueError, match="^2 keys for 1 documents$"):
        index.add([1, 2], ["only one"])
    index.add([], [])
    assert len(index) == 0
    index.add([1, 1, 2], ["wifi router", "battery cable", "lamp"])
    assert index.keys() == [1, 2] and len(index) == 2
    assert index.search("wifi", top_k=5) == [] and [k for k, _ in index.search("battery", top_k=5)] == [1]


def test_many_removals_leave_the_right_documents_in_the_right_order() -> None:
    index = BM25Index()
    index.add(list(range(3000)), [f"lamp number{k} {'wifi' if k % 7 == 0 else 'night'}" for k in range(3000)])
    assert index.remove(range(0, 2000)) == 2000
    assert index.keys() == list(range(2000, 3000))
    assert index.search("number2500", top_k=1)[0][0] == 2500
    assert {k for k, _ in index.search("wifi", top_k=1000)} == {k for k in range(2000, 3000) if k % 7 == 0}
    assert index.remove([2500, 2501]) == 2 and len(index) == 998  # and removing goes on after that
    assert index.search("number2500", top_k=1) == [] and index.search("number2502", top_k=1)[0][0] == 2502
    few = BM25Index()
    few.add(list(range(100)), ["lamp"] * 100)
    few.remove(range(0, 90))
    assert [k for k, _ in few.search("lamp", top_k=3)] == [90, 91, 92]  # ties in insertion order


def test_bm25_parameters_are_validated() -> None:
    for bad in ({"k1": -0.1}, {"b": -0.1}, {"b": 1.1}):
        with pytest.raises(ValueError):
            BM25Config(**bad)  # type: ignore[arg-type]
    assert BM25Config().k1 == 1.5 and BM25Config().b == 0.75
    assert BM25Config(k1=0, b=0).k1 == 0 and BM25Config(b=1).b == 1


def test_the_best_few_are_the_best_whatever_top_k() -> None:
    index = BM25Index()
    texts = [" ".join(["lamp"] * (1 + (k * 7) % 10) + ["filler"] * 5) for k in range(10)]
    index.add(list(range(10)), texts)
    ranked = sorted(index.score_all("lamp").items(), key=lambda item: (-item[1], item[0]))
    for top_k in (1, 2, 3, 9, 10, 11):
        found = index.search("lamp", top_k=top_k)
        assert [k for k, _ in found] == [k for k, _ in ranked[:top_k]]
        assert [s for _, s in found] == pytest.approx([s for _, s in ranked[:top_k]])


def test_a_restored_index_removes_documents_like_the_original() -> None:
    index = BM25Index()
    index.add(list(range(len(CORPUS))), CORPUS)
    restored = BM25Index.restore(None, *index.export())
    index.remove([0, 3])
    restored.remove([0, 3])
    for query in QUERIES:
        assert restored.score_all(query) == pytest.approx(index.score_all(query))


def test_the_best_one_of_hundreds_is_the_best() -> None:
    # 300 documents of one length, each with its own count of the query term (so each its own score), in a shuffled
    # order: numpy's partial selection only finds the best of that many when it is asked for the right rank
    index = BM25Index()
    counts = [1 + (k * 7) % 300 for k in range(300)]
    index.add(list(range(300)), [" ".join(["lamp"] * c + ["filler"] * (301 - c)) for c in counts])
    ranked = sorted(range(300), key=lambda k: -counts[k])
    for top_k in (1, 2, 5, 299):
        assert [k for k, _ in index.search("lamp", top_k=top_k)] == ranked[:top_k]
