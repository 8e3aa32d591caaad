"""Text analysis: tokenisation, lower-casing, stop words, stemming, configuration."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from ragloom.analysis import ENGLISH_STOPWORDS, Analyzer, AnalyzerConfig
from ragloom.config import structure_options
from ragloom.errors import ConfigError


def test_default_analysis_lowercases_drops_stopwords_and_stems() -> None:
    assert Analyzer().tokens("The Lamps are DIMMING slowly") == ["lamp", "dim", "slowli"]


def test_unicode_words_and_normalisation() -> None:
    analyzer = Analyzer(AnalyzerConfig(stemmer=None))
    assert analyzer.tokens("Ärger über Straße, ﬁne 東京タワー") == ["ärger", "über", "straße", "fine", "東京タワー"]
    raw = Analyzer(AnalyzerConfig(stemmer=None, normalization=None))
    assert raw.tokens("ﬁne") == ["ﬁne"]


def test_single_characters_and_punctuation_are_not_terms() -> None:
    assert Analyzer(AnalyzerConfig(stemmer=None, stopwords=None)).tokens("a b-c d.e 42 x1") == ["42", "x1"]


def test_options_can_be_switched_off() -> None:
    analyzer = Analyzer(AnalyzerConfig(lowercase=False, stopwords=None, stemmer=None))
    assert analyzer.tokens("The Lamps") == ["The", "Lamps"]
    assert Analyzer(AnalyzerConfig(extra_stopwords=("Lamp",), stemmer=None)).tokens("the lamp glows") == ["glows"]
    assert Analyzer(AnalyzerConfig(token_pattern=r"\w+", stopwords=None, stemmer=None)).tokens("a b") == ["a", "b"]


def test_queries_and_documents_share_terms() -> None:
    analyzer = Analyzer()
    assert analyzer.terms("connecting to networks") == analyzer.terms("Connected network")


def test_lucene_stop_words() -> None:
    assert len(ENGLISH_STOPWORDS) == 33 and {"the", "and", "with"} <= ENGLISH_STOPWORDS


def test_config_errors() -> None:
    with pytest.raises(ConfigError, match="stopwords"):
        structure_options(AnalyzerConfig, {"stopwords": "klingon"}, path="$.analyzer")
    with pytest.raises(ConfigError, match="regular expression"):
        structure_options(AnalyzerConfig, {"token_pattern": "("}, path="$.analyzer")
    with pytest.raises(ConfigError, match="unknown stemmer language 'klingon'"):
        structure_options(AnalyzerConfig, {"stemmer": "klingon"}, path="$.analyzer")
    off = structure_options(AnalyzerConfig, {"stemmer": "none", "stopwords": "None", "normalization": "none"}, path="$.analyzer")
    assert (off.stemmer, off.stopwords, off.normalization) == (None, None, None)
    assert AnalyzerConfig().fingerprint != AnalyzerConfig(stemmer=None).fingerprint


def test_thread_safe_stemming() -> None:
    analyzer = Analyzer()
    texts = [f"running jumped connections {i} generalization" for i in range(200)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(analyzer.tokens, texts))
    assert all(r[:3] == ["run", "jump", "connect"] for r in results)
