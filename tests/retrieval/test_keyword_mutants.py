"""Text analysis and BM25 details a caller sees, each found as a gap by mutation testing (docs/testing.md)."""

from __future__ import annotations

import math

import attrs
import numpy as np
import pytest
import Stemmer
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.analysis import Analyzer, AnalyzerConfig
from ragloom.errors import ConfigError
from ragloom.keyword import BM25Config, BM25Index

AVAILABLE = ", ".join(Stemmer.algorithms())


def test_an_unknown_stemmer_language_is_refused_listing_every_language() -> None:
    with pytest.raises(ValueError) as refused:
        AnalyzerConfig(stemmer="klingon")
    assert str(refused.value) == f"'stemmer': unknown stemmer language 'klingon'; available: {AVAILABLE}"


def test_the_analyzer_refuses_an_unknown_stemmer_even_when_validators_are_off() -> None:
    with attrs.validators.disabled():  # attrs' global switch: the config takes any value
        config = AnalyzerConfig(stemmer="klingon")
    with pytest.raises(ConfigError) as refused:
        Analyzer(config)
    assert str(refused.value) == f"unknown stemmer language 'klingon'; available: {AVAILABLE}"


def test_extra_stopwords_keep_their_case_when_text_is_not_lowercased() -> None:
    analyzer = Analyzer(AnalyzerConfig(lowercase=False, stopwords=None, stemmer=None, extra_stopwords=("Lamp",)))
    assert analyzer.stopwords == frozenset({"Lamp"})
    assert analyzer.tokens("Lamp lamp LAMP") == ["lamp", "LAMP"]
    lowered = Analyzer(AnalyzerConfig(stopwords=None, stemmer=None, extra_stopwords=("Lamp",)))
    assert lowered.tokens("Lamp lamp LAMP oil") == ["oil"]


def test_an_analyzer_keeps_stemming_after_its_stem_cache_passes_its_bound() -> None:
    analyzer = Analyzer(AnalyzerConfig(stopwords=None))
    words = [f"w{i}" for i in range(500_001)]  # one more distinct word than the cache holds
    assert analyzer.tokens(" ".join(words)) == words
    assert analyzer.tokens("the lamps are dimming") == ["the", "lamp", "are", "dim"]
    assert analyzer.tokens("lamps") == ["lamp"]


def _bm25(tf: float, length: float, avgdl: float, n_docs: int, df: int, k1: float = 1.5, b: float = 0.75) -> float:
    idf = math.log1p((n_docs - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + k1 * (1.0 - b + b * length / avgdl))


def test_scores_are_the_bm25_formula_in_single_precision() -> None:
    index = BM25Index(BM25Config(analyzer=AnalyzerConfig(stopwords=None, stemmer=None)))
    index.add(["a", "b", "c"], ["lamp lamp oil", "lamp wick glass chimney", "battery"])
    exact = {"a": _bm25(2, 3, 8 / 3, 3, 2), "b": _bm25(1, 4, 8 / 3, 3, 2)}  # lengths 3, 4, 1
    assert all(float(np.float32(v)) != v for v in exact.values())  # the values differ in single precision
    assert index.score_all("lamp") == {k: float(np.float32(v)) for k, v in exact.items()}
    assert index.search("lamp", top_k=2) == [("a", float(np.float32(exact["a"]))), ("b", float(np.float32(exact["b"])))]


def test_export_hands_over_int64_term_ids_and_float32_frequencies() -> None:
    index = BM25Index()
    index.add([1, 2], ["lamp oil lamp", "wick"])
    keys, vocabulary, terms, tfs, offsets, lengths = index.export()
    assert keys == [1, 2] and vocabulary == ["lamp", "oil", "wick"]
    assert terms.dtype == np.int64 and tfs.dtype == np.float32 and offsets.dtype == np.int64 and lengths.dtype == np.int64
    assert terms.tolist() == [0, 1, 2] and tfs.tolist() == [2.0, 1.0, 1.0] and offsets.tolist() == [0, 2, 3]


def test_a_remap_renames_what_search_and_keys_return() -> None:
    index = BM25Index()
    index.add([0, 1, 2], ["lamp oil", "dark room", "lamp"])
    index.remap({0: "zero", 2: "two"})
    assert index.keys() == ["zero", 1, "two"]
    assert [k for k, _ in index.search("lamp", top_k=5)] == ["two", "zero"]
    assert "zero" in index and 0 not in index
    index.remove(["two"])
    assert index.keys() == ["zero", 1] and [k for k, _ in index.search("lamp", top_k=5)] == ["zero"]
    with pytest.raises(ValueError) as refused:
        index.remap({"zero": 1})
    assert str(refused.value) == "remap would merge two documents into one key"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["lamp", "oil", "wick", "glass"]), max_size=5), min_size=1, max_size=6))
def test_batched_adds_score_as_one_by_one_adds(docs: list[list[str]]) -> None:
    batched, single = BM25Index(), BM25Index()
    batched.add_tokens(list(range(len(docs))), docs)
    for key, tokens in enumerate(docs):
        single.add_tokens([key], [tokens])
    for query in ("lamp", "oil wick", "glass lamp oil"):
        assert batched.score_all(query) == single.score_all(query)
