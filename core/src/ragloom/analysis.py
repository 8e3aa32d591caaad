"""Text analysis shared by every keyword index: text -> list of terms.

The steps, each configurable in :class:`AnalyzerConfig`:

1. Unicode normalisation (NFKC by default: ligatures, full-width forms);
2. lower-casing (``str.lower``, Unicode-aware);
3. tokenisation with a Unicode regular expression (default: runs of at least
   two word characters, as Lucene's and bm25s' defaults);
4. stop-word removal (``"english"``: Lucene's English list, plus ``extra_stopwords``);
5. Snowball stemming through PyStemmer (``stemmer = "english"``).

``"none"`` (or ``None`` in Python) switches normalisation, stop words or stemming off.

Stores that index keywords themselves (DuckDB, PostgreSQL …) reuse it so that
documents and queries are analysed identically everywhere::

    analyzer = Analyzer(AnalyzerConfig(stemmer="english"))
    analyzer.tokens("The lamps are dimming")  # ['lamp', 'dim']
"""

from __future__ import annotations

import functools
import operator
import re
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import Literal

import attrs

from ragloom.errors import ConfigError
from ragloom.stopwords import LUCENE_ENGLISH_STOP_WORDS

#: Lucene's English stop words (``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``), from :mod:`ragloom.stopwords`.
ENGLISH_STOPWORDS: frozenset[str] = LUCENE_ENGLISH_STOP_WORDS

STOPWORD_LISTS: dict[str, frozenset[str]] = {"english": ENGLISH_STOPWORDS}

DEFAULT_TOKEN_PATTERN = r"\b\w\w+\b"
#: What the analyzer runs for :data:`DEFAULT_TOKEN_PATTERN`: the same matches (a greedy run of word
#: characters always ends at a boundary, and a scan never starts inside a run of two or more), found
#: about a fifth faster by ``re``.
_DEFAULT_SPLIT = r"\w\w+"
_TABLE_BOUND = 500_000  # words an analyzer remembers before it starts a new table
_UNSEEN = object()  # a word the table does not hold yet
_is_term = functools.partial(operator.is_not, None)


def _none_word(value: object) -> object:
    """TOML has no null: ``"none"`` switches a step off."""
    return None if isinstance(value, str) and value.lower() == "none" else value


def _check_pattern(_instance: object, attribute: attrs.Attribute, value: str) -> None:  # type: ignore[type-arg]
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"'{attribute.name}' is not a valid regular expression: {exc}") from None


def _check_stopwords(_instance: object, attribute: attrs.Attribute, value: str | None) -> None:  # type: ignore[type-arg]
    if value is not None and value not in STOPWORD_LISTS:
        raise ValueError(f"'{attribute.name}' must be one of {', '.join(sorted(STOPWORD_LISTS))} or 'none', got {value!r}")


def _check_stemmer(_instance: object, attribute: attrs.Attribute, value: str | None) -> None:  # type: ignore[type-arg]
    if value is None:
        return
    try:
        import Stemmer
    except ImportError:  # reported when the analyzer is built
        return
    if value not in Stemmer.algorithms():
        raise ValueError(f"'{attribute.name}': unknown stemmer language {value!r}; available: {', '.join(Stemmer.algorithms())}")


@attrs.frozen(kw_only=True)
class AnalyzerConfig:
    """How text becomes terms (identical for documents and queries)."""

    lowercase: bool = True
    normalization: Literal["NFC", "NFKC", "NFD", "NFKD", "none"] | None = attrs.field(default="NFKC", converter=_none_word)
    token_pattern: str = attrs.field(default=DEFAULT_TOKEN_PATTERN, validator=_check_pattern)
    stopwords: str | None = attrs.field(default="english", converter=_none_word, validator=_check_stopwords)
    extra_stopwords: tuple[str, ...] = ()
    stemmer: str | None = attrs.field(default="english", converter=_none_word, validator=_check_stemmer)

    @property
    def fingerprint(self) -> str:
        """Every option that changes the terms, as one string."""
        extra = ",".join(sorted(self.extra_stopwords))
        return (
            f"lower={self.lowercase}:norm={self.normalization}:pattern={self.token_pattern}:"
            f"stop={self.stopwords}+{extra}:stem={self.stemmer}"
        )


def _load_stemmer(language: str):  # type: ignore[no-untyped-def]
    try:
        import Stemmer
    except ImportError as exc:
        raise ConfigError(
            f"stemmer {language!r} needs PyStemmer: pip install PyStemmer (or set stemmer to none)"
        ) from exc
    try:
        return Stemmer.Stemmer(language)
    except KeyError:
        raise ConfigError(
            f"unknown stemmer language {language!r}; available: {', '.join(Stemmer.algorithms())}"
        ) from None


class Analyzer:
    """Turns text into terms; thread-safe (one Snowball stemmer per thread, one shared table of word -> term)."""

    def __init__(self, config: AnalyzerConfig | None = None):
        self.config = config or AnalyzerConfig()
        c = self.config
        self._split = re.compile(_DEFAULT_SPLIT if c.token_pattern == DEFAULT_TOKEN_PATTERN else c.token_pattern).findall
        stop = set(STOPWORD_LISTS[c.stopwords]) if c.stopwords else set()
        stop.update(w.lower() if c.lowercase else w for w in c.extra_stopwords)
        self.stopwords: frozenset[str] = frozenset(stop)
        self._local = threading.local()
        self._filters = bool(stop) or c.stemmer is not None
        self._table: dict[str, str | None] = {}  # word -> its term, None for a stop word
        if c.stemmer is not None:
            _load_stemmer(c.stemmer)  # fail at construction, not at the first query

    def _stemmer(self):  # type: ignore[no-untyped-def]
        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:
            stemmer = self._local.stemmer = _load_stemmer(self.config.stemmer)  # type: ignore[arg-type]
        return stemmer

    def _learn(self, words: Sequence[str]) -> dict[str, str | None]:
        """The table, holding every one of ``words`` (stop words as None, the rest stemmed in one call)."""
        table = self._table
        if len(table) > _TABLE_BOUND:  # bound memory on endless vocabularies
            table = self._table = {}
        new = [w for w in set(words) if w not in table]
        stop = self.stopwords
        kept = [w for w in new if w not in stop]
        table.update(dict.fromkeys([w for w in new if w in stop]))
        terms = self._stemmer().stemWords(kept) if self.config.stemmer is not None else kept
        table.update(zip(kept, terms, strict=True))
        return table

    def _terms(self, words: list[str]) -> list[str]:
        """``words`` without stop words, stemmed: one lookup per word in a table learnt as words come."""
        terms = list(map(self._table.get, words, repeat(_UNSEEN)))
        if _UNSEEN in terms:
            terms = list(map(self._learn(words).__getitem__, words))
        if None in terms:
            terms = list(filter(_is_term, terms))
        return terms  # type: ignore[return-value]  # no None and no _UNSEEN left

    def tokens(self, text: str) -> list[str]:
        """The terms of ``text``, in order, repeats kept."""
        c = self.config
        form = c.normalization
        if form is not None and form != "none" and not unicodedata.is_normalized(form, text):
            text = unicodedata.normalize(form, text)
        if c.lowercase:
            text = text.lower()
        words = self._split(text)
        return self._terms(words) if self._filters and words else words

    def tokens_many(self, texts: Iterable[str]) -> list[list[str]]:
        """``tokens`` of each text."""
        return [self.tokens(text) for text in texts]

    def terms(self, text: str) -> set[str]:
        """The distinct terms of ``text``."""
        return set(self.tokens(text))
