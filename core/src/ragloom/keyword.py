"""An incremental BM25 index in numpy (Lucene's BM25 variant, as bm25s and Anserini).

    score(q, d) = sum over query terms t of  idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

Documents are added and removed by key at any time. The term statistics
(``N``, ``df``, ``avgdl``) always describe exactly the documents present: the
per-posting scores are (re)computed eagerly, in one vectorised pass, the first
time the index is searched after a change. A query then sums the postings of
its terms with ``np.bincount`` — no Python loop per document. A removed key can
never be returned.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

import attrs
import numpy as np

from ragloom.analysis import Analyzer, AnalyzerConfig


@attrs.frozen(kw_only=True)
class BM25Config:
    """BM25 parameters and the text analysis of documents and queries."""

    k1: float = attrs.field(default=1.5, validator=attrs.validators.ge(0))
    b: float = attrs.field(default=0.75, validator=[attrs.validators.ge(0), attrs.validators.le(1)])
    analyzer: AnalyzerConfig = attrs.field(factory=AnalyzerConfig)


class BM25Index:
    """BM25 over documents identified by hashable keys; not thread-safe (callers lock).

    Equal scores come back in insertion order, or with ``ties_by_key`` in key
    order (keys that compare, such as a database's row ids): then a ranking does
    not depend on the order the documents were added in, and an index kept in
    step with a store ranks like one rebuilt from it.
    """

    def __init__(self, config: BM25Config | None = None, *, analyzer: Analyzer | None = None, ties_by_key: bool = False):
        self.config = config or BM25Config()
        self.ties_by_key = ties_by_key
        self.analyzer = analyzer or Analyzer(self.config.analyzer)
        self._vocab: dict[str, int] = {}
        self._slot_of: dict[Hashable, int] = {}
        self._keys: list[Hashable | None] = []
        self._terms: list[np.ndarray | None] = []
        self._tfs: list[np.ndarray | None] = []
        self._lengths: list[int] = []
        self._dead = 0
        self._dirty = True
        self._indptr = np.zeros(1, dtype=np.int64)
        self._post_slots = np.zeros(0, dtype=np.int64)
        self._post_scores = np.zeros(0, dtype=np.float32)

    # ------------------------------------------------------------------ content

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._slot_of

    def keys(self) -> list[Hashable]:
        """The keys present, in insertion order."""
        return [k for k in self._keys if k is not None and k in self._slot_of]

    def add(self, keys: Sequence[Hashable], texts: Sequence[str]) -> None:
        """Index ``texts[i]`` under ``keys[i]`` (an existing key is replaced)."""
        self.add_tokens(keys, self.analyzer.tokens_many(texts))

    def add_tokens(self, keys: Sequence[Hashable], token_lists: Sequence[Sequence[str]]) -> None:
        """Index already analysed documents."""
        if len(keys) != len(token_lists):
            raise ValueError(f"{len(keys)} keys for {len(token_lists)} documents")
        if not keys:
            return
        if len(set(keys)) != len(keys):  # a key twice in one call: the later text replaces the earlier, one by one
            for key, tokens in zip(keys, token_lists, strict=True):
                self.add_tokens([key], [tokens])
            return
        for key in keys:
            if key in self._slot_of:
                self._remove_one(key)
        # one vectorised pass for the whole batch: (document, term id) pairs counted with a single np.unique
        vocab = self._vocab
        lengths = [len(tokens) for tokens in token_lists]
        ids = np.fromiter(
            (vocab.setdefault(t, len(vocab)) for tokens in token_lists for t in tokens), dtype=np.int64, count=sum(lengths)
        )
        width = max(len(vocab), 1)
        owners = np.repeat(np.arange(len(keys), dtype=np.int64), lengths)
        pairs, counts = np.unique(owners * width + ids, return_counts=True)
        terms = pairs % width  # per document ascending, as np.unique of the document alone
        cuts = np.searchsorted(pairs // width, np.arange(1, len(keys), dtype=np.int64))
        tfs = counts.astype(np.float32)
        first = len(self._keys)
        for offset, key in enumerate(keys):
            self._slot_of[key] = first + offset
        self._keys.extend(keys)
        self._terms.extend(np.split(terms, cuts))
        self._tfs.extend(np.split(tfs, cuts))
        self._lengths.extend(lengths)
        self._dirty = True

    def remove(self, keys: Iterable[Hashable]) -> int:
        """Remove documents by key (unknown keys are ignored); return how many were removed."""
        removed = sum(self._remove_one(key) for key in keys)
        if removed:
            self._dirty = True
            if self._dead > 1024 and self._dead * 2 > len(self._keys):
                self._compact()
        return removed

    def _remove_one(self, key: Hashable) -> int:
        slot = self._slot_of.pop(key, None)
        if slot is None:
            return 0
        self._keys[slot] = None
        self._terms[slot] = None
        self._tfs[slot] = None
        self._lengths[slot] = 0
        self._dead += 1
        return 1

    def remap(self, mapping: Mapping[Hashable, Hashable]) -> None:
        """Rename keys (e.g. row numbers after a store compacts); keys not in ``mapping`` keep theirs."""
        renamed = {mapping.get(key, key): slot for key, slot in self._slot_of.items()}
        if len(renamed) != len(self._slot_of):  # refused before anything changed: the index stays as it was
            raise ValueError("remap would merge two documents into one key")
        for key, slot in renamed.items():
            self._keys[slot] = key
        self._slot_of = renamed

    def export(self) -> tuple[list[Hashable], list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The analysed documents present, in insertion order, for :meth:`restore`.

        :returns: ``(keys, vocabulary, term ids, term frequencies, offsets, lengths)``; document ``i``
            holds ``terms[offsets[i]:offsets[i + 1]]``.
        """
        live = [s for s, key in enumerate(self._keys) if key is not None and self._terms[s] is not None]
        sizes = np.asarray([len(self._terms[s]) for s in live], dtype=np.int64)  # type: ignore[arg-type]
        offsets = np.zeros(len(live) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        terms = np.concatenate([self._terms[s] for s in live]) if live else np.zeros(0, dtype=np.int64)  # type: ignore[misc]
        tfs = np.concatenate([self._tfs[s] for s in live]) if live else np.zeros(0, dtype=np.float32)  # type: ignore[misc]
        lengths = np.asarray([self._lengths[s] for s in live], dtype=np.int64)
        return [self._keys[s] for s in live], list(self._vocab), terms, tfs, offsets, lengths

    @classmethod
    def restore(
        cls,
        config: BM25Config | None,
        keys: Sequence[Hashable],
        vocabulary: Sequence[str],
        terms: np.ndarray,
        tfs: np.ndarray,
        offsets: np.ndarray,
        lengths: np.ndarray,
        *,
        analyzer: Analyzer | None = None,
    ) -> BM25Index:
        """An index holding what :meth:`export` returned (no text analysed again)."""
        index = cls(config, analyzer=analyzer)
        if len(offsets) != len(keys) + 1 or len(lengths) != len(keys) or len(terms) != len(tfs):
            raise ValueError("inconsistent BM25 index arrays")
        index._vocab = {term: i for i, term in enumerate(vocabulary)}
        index._keys = list(keys)
        index._slot_of = {key: slot for slot, key in enumerate(keys)}
        terms = np.asarray(terms, dtype=np.int64)
        tfs = np.asarray(tfs, dtype=np.float32)
        index._terms = [terms[offsets[i] : offsets[i + 1]] for i in range(len(keys))]
        index._tfs = [tfs[offsets[i] : offsets[i + 1]] for i in range(len(keys))]
        index._lengths = [int(n) for n in lengths]
        if len(index._slot_of) != len(keys):
            raise ValueError("duplicate keys in a BM25 index")
        return index

    def clear(self) -> None:
        """Remove everything."""
        self.remove(list(self._slot_of))
        self._compact()

    def _compact(self) -> None:
        live = [s for s, key in enumerate(self._keys) if key is not None]
        self._keys = [self._keys[s] for s in live]
        self._terms = [self._terms[s] for s in live]
        self._tfs = [self._tfs[s] for s in live]
        self._lengths = [self._lengths[s] for s in live]
        self._slot_of = {key: slot for slot, key in enumerate(self._keys)}
        self._dead = 0
        self._dirty = True

    # ------------------------------------------------------------------ scoring

    def _build(self) -> None:
        live = [s for s, terms in enumerate(self._terms) if terms is not None]
        vocab_size = len(self._vocab)
        n_docs = len(live)
        if n_docs == 0:
            self._indptr = np.zeros(vocab_size + 1, dtype=np.int64)
            self._post_slots = np.zeros(0, dtype=np.int64)
            self._post_scores = np.zeros(0, dtype=np.float32)
            self._term_max = np.zeros(vocab_size, dtype=np.float64)
            self._dirty = False
            return
        terms = np.concatenate([self._terms[s] for s in live])  # type: ignore[misc]
        tfs = np.concatenate([self._tfs[s] for s in live])  # type: ignore[misc]
        sizes = np.fromiter((len(self._terms[s]) for s in live), dtype=np.int64, count=n_docs)  # type: ignore[arg-type]
        slots = np.repeat(np.asarray(live, dtype=np.int64), sizes)
        lengths = np.asarray(self._lengths, dtype=np.float64)
        avgdl = float(lengths[live].mean()) or 1.0
        df = np.bincount(terms, minlength=vocab_size).astype(np.float64)
        idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
        k1, b = self.config.k1, self.config.b
        norm = k1 * (1.0 - b + b * lengths[slots] / avgdl)
        scores = idf[terms] * tfs / (tfs + norm)
        order = np.argsort(terms, kind="stable")
        self._post_slots = slots[order]
        self._post_scores = scores[order].astype(np.float32)
        self._indptr = np.zeros(vocab_size + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=vocab_size), out=self._indptr[1:])
        self._term_max = np.zeros(vocab_size, dtype=np.float64)
        present = np.flatnonzero(np.diff(self._indptr) > 0)
        if len(present):
            self._term_max[present] = np.maximum.reduceat(self._post_scores.astype(np.float64), self._indptr[present])
        self._dirty = False

    def _query_ids(self, query: str) -> list[int]:
        vocab = self._vocab
        return [vocab[t] for t in self.analyzer.tokens(query) if t in vocab]

    def ceiling(self, query: str) -> float:
        """The query's best reachable score: per query term, the best any document scores on it, summed.

        A term no document contains counts as much as the corpus's rarest term
        (the highest per-term best), so a query about something absent scores
        low. A document's score divided by this lies in [0, 1] and is comparable
        across queries (1: the best match for every term at once).
        """
        return self._ceiling(self.analyzer.tokens(query))

    def _ceiling(self, tokens: Sequence[str]) -> float:
        if self._dirty:
            self._build()
        if len(self._term_max) == 0:
            return 0.0
        vocab, best = self._vocab, self._term_max
        rarest = float(best.max())
        # a term that only removed documents held stays in the vocabulary with a best of 0: absent, like one never seen
        return float(sum(best[vocab[t]] if t in vocab and best[vocab[t]] > 0 else rarest for t in tokens))

    def score_all(self, query: str) -> dict[Hashable, float]:
        """Every matching key with its BM25 score (for tests and debugging)."""
        scores = self._scores(self._query_ids(query))
        if scores is None:
            return {}
        return {self._keys[s]: float(scores[s]) for s in np.flatnonzero(scores > 0).tolist()}

    def _scores(self, ids: list[int]) -> np.ndarray | None:
        if self._dirty:
            self._build()
        if not ids:
            return None
        indptr = self._indptr
        if len(ids) == 1:
            start, end = indptr[ids[0]], indptr[ids[0] + 1]
            slots, weights = self._post_slots[start:end], self._post_scores[start:end]
        else:
            slots = np.concatenate([self._post_slots[indptr[t] : indptr[t + 1]] for t in ids])
            weights = np.concatenate([self._post_scores[indptr[t] : indptr[t + 1]] for t in ids])
        if len(slots) == 0:
            return None
        return np.bincount(slots, weights=weights, minlength=len(self._keys))

    def search(self, query: str, *, top_k: int, keys: Iterable[Hashable] | None = None) -> list[tuple[Hashable, float]]:
        """The ``top_k`` best ``(key, score)`` pairs, best first (equal scores in tie order: see the class).

        ``keys`` restricts the search to those documents (a metadata filter's matches).
        """
        found, scores, _ = self.ranked(query, top_k=top_k, keys=keys)
        return list(zip(found, scores.tolist(), strict=True))

    def ranked(
        self, query: str, *, top_k: int, keys: Iterable[Hashable] | None = None, ceiling: bool = False
    ) -> tuple[list[Hashable], np.ndarray, float]:
        """``(keys, scores, ceiling)``: what :meth:`search` finds as a key list and a float64 array, best first.

        With ``ceiling=True`` the third item is :meth:`ceiling` of the query (the
        query analysed once for both), else 0.
        """
        tokens = self.analyzer.tokens(query)
        top = self._ceiling(tokens) if ceiling else 0.0
        if top_k <= 0:
            return [], np.zeros(0), top
        vocab = self._vocab
        scores = self._scores([vocab[t] for t in tokens if t in vocab])
        if scores is None:
            return [], np.zeros(0), top
        if keys is not None:
            allowed = np.zeros(len(scores), dtype=bool)
            slot_of = self._slot_of
            picked = [slot_of[k] for k in keys if k in slot_of]
            allowed[picked] = True
            scores = np.where(allowed, scores, 0.0)
        candidates = np.flatnonzero(scores > 0)
        if len(candidates) == 0:
            return [], np.zeros(0), top
        values = scores[candidates]
        if top_k < len(candidates):
            candidates = self._best(candidates, values, top_k)
            values = scores[candidates]
        order = np.lexsort((self._tie_keys(candidates, values), -values))
        slots = self._keys
        return [slots[s] for s in candidates[order].tolist()], values[order], top  # type: ignore[misc]

    def _best(self, candidates: np.ndarray, values: np.ndarray, top_k: int) -> np.ndarray:
        """The ``top_k`` best candidates; among equal scores at the cut, the first in tie order."""
        kth = np.partition(values, len(values) - top_k)[len(values) - top_k]
        above, tied = candidates[values > kth], candidates[values == kth]
        wanted = top_k - len(above)
        if wanted < len(tied):
            tied = tied[np.argsort(self._tie_keys(tied), kind="stable")[:wanted]]
        return np.concatenate([above, tied])

    def _tie_keys(self, slots: np.ndarray, values: np.ndarray | None = None) -> np.ndarray:
        """What orders equal scores: the slot itself (insertion order), or with ``ties_by_key`` the slot's key
        (looked up only when two of ``values`` are equal)."""
        if not self.ties_by_key or (values is not None and len(np.unique(values)) == len(values)):
            return slots
        keys = self._keys
        return np.asarray([keys[s] for s in slots.tolist()])
