"""Text analysis: tokenisation, lower-casing, stop words, stemming, configuration."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


# ---------------------------------------------------------------- the fast paths give the reference's terms

_ALPHABET = st.sampled_from(list("aAbBzZ_09 \t\n.,-'’éÉßﬁ東京١٢") + ["\u0301", "\u00a0", "\u2028", "ǅ", "Ⅻ", "²"])
_TEXTS = st.text(alphabet=_ALPHABET, max_size=60)


def _reference_tokens(analyzer: Analyzer, text: str) -> list[str]:
    """The analysis spelled out step by step, as the module docstring lists it (no tables, no fast pattern)."""
    import re
    import unicodedata

    import Stemmer

    c = analyzer.config
    if c.normalization is not None:
        text = unicodedata.normalize(c.normalization, text)
    if c.lowercase:
        text = text.lower()
    words = [w for w in re.findall(c.token_pattern, text) if w not in analyzer.stopwords]
    return Stemmer.Stemmer(c.stemmer).stemWords(words) if c.stemmer is not None and words else words


@given(_TEXTS)
def test_the_default_pattern_runs_as_a_faster_one_with_the_same_matches(text: str) -> None:
    import re

    from ragloom.analysis import _DEFAULT_SPLIT, DEFAULT_TOKEN_PATTERN

    assert re.findall(_DEFAULT_SPLIT, text) == re.findall(DEFAULT_TOKEN_PATTERN, text)
    assert re.findall(_DEFAULT_SPLIT, text.lower()) == re.findall(DEFAULT_TOKEN_PATTERN, text.lower())


_CONFIGS = [
    AnalyzerConfig(),
    AnalyzerConfig(stemmer=None),
    AnalyzerConfig(stopwords=None),
    AnalyzerConfig(stopwords=None, stemmer=None),
    AnalyzerConfig(lowercase=False, extra_stopwords=("The", "ab")),
    AnalyzerConfig(token_pattern=r"\w*", extra_stopwords=("",)),  # empty matches, and the empty word a stop word
    AnalyzerConfig(token_pattern=r"\w*", stemmer=None),  # empty matches kept as terms
    AnalyzerConfig(token_pattern=r"[^\W\d]+", normalization="NFD"),
]
_ANALYZERS = [Analyzer(config) for config in _CONFIGS]  # shared: their tables fill up across examples, as in an ingest


@given(st.lists(_TEXTS | st.sampled_from(["The lamps are DIMMING", "the the a an", "ﬁne FINE fine", "running runner ran"]), max_size=6))
def test_every_configuration_gives_the_reference_terms(texts: list[str]) -> None:
    for analyzer in _ANALYZERS:
        assert analyzer.tokens_many(texts) == [_reference_tokens(analyzer, t) for t in texts], analyzer.config


def test_stop_words_and_stems_come_from_one_table_learnt_once() -> None:
    analyzer = Analyzer()
    assert analyzer.tokens("the lamps and the lamp") == ["lamp", "lamp"]
    assert analyzer._table == {"the": None, "and": None, "lamps": "lamp", "lamp": "lamp"}
    analyzer._table["lamps"] = "LEARNT"  # a word already in the table is not analysed again
    assert analyzer.tokens("lamps glow") == ["LEARNT", "glow"]
    assert Analyzer(AnalyzerConfig(stopwords=None, stemmer=None))._filters is False


def test_the_default_pattern_is_run_as_the_faster_one_and_any_other_as_given() -> None:
    from ragloom.analysis import _DEFAULT_SPLIT

    assert Analyzer()._split.__self__.pattern == _DEFAULT_SPLIT  # type: ignore[attr-defined]
    assert Analyzer(AnalyzerConfig(token_pattern=r"\w+"))._split.__self__.pattern == r"\w+"  # type: ignore[attr-defined]


def test_a_missing_pystemmer_is_a_config_error_saying_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "Stemmer", None)  # a fault: the import of PyStemmer fails
    with pytest.raises(ConfigError) as refused:
        Analyzer(AnalyzerConfig(stemmer="english"))
    assert str(refused.value) == "stemmer 'english' needs PyStemmer: pip install PyStemmer (or set stemmer to none)"
