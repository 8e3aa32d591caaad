"""BM25 kept in PostgreSQL: postings written with binary COPY, scores summed in SQL.

Documents are analysed in Python with ragloom's :class:`~ragloom.analysis.Analyzer`
(the terms of the ``bm25`` retriever and the other stores). A posting is
``(term_key, row_id, tf, dl)`` where ``term_key`` is a 64-bit hash of
``(namespace, term)``: one index on ``term_key`` serves every namespace and no
vocabulary table has to be kept in step by concurrent writers. ``N`` and
``avgdl`` come from the per-source counts in ``sources``; ``df`` from the
postings of the query terms, so every statistic describes exactly the
committed chunks a reader's snapshot sees (Lucene's BM25, as
:mod:`ragloom.keyword`)::

    score(q, d) = sum over query terms t of idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))
    idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import attrs
import numpy as np

from ragloom.plugin import Analyzer

COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
COPY_TRAILER = b"\xff\xff"

_POSTING = np.dtype(
    [
        ("fields", ">i2"),
        ("l_term", ">i4"),
        ("term", ">i8"),
        ("l_row", ">i4"),
        ("row", ">i8"),
        ("l_tf", ">i4"),
        ("tf", ">f4"),
        ("l_dl", ">i4"),
        ("dl", ">f4"),
    ]
)


class TermKeys:
    """``(namespace, term) -> signed 64-bit key``, cached."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], int] = {}

    def key(self, namespace: str, term: str) -> int:
        cached = self._cache.get((namespace, term))
        if cached is None:
            digest = hashlib.blake2b(f"{namespace}\x00{term}".encode(), digest_size=8).digest()
            cached = int.from_bytes(digest, "big", signed=True)
            if len(self._cache) > 1_000_000:
                self._cache.clear()
            self._cache[(namespace, term)] = cached
        return cached

    def keys(self, namespace: str, terms: Sequence[str]) -> np.ndarray:
        return np.fromiter((self.key(namespace, t) for t in terms), dtype=np.int64, count=len(terms))


@attrs.frozen
class Postings:
    """Postings as four parallel arrays."""

    terms: np.ndarray
    rows: np.ndarray
    tfs: np.ndarray
    lengths: np.ndarray

    def __len__(self) -> int:
        return len(self.terms)

    @staticmethod
    def concat(parts: Sequence[Postings]) -> Postings:
        return Postings(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("terms", "rows", "tfs", "lengths")))

    def copy_data(self) -> bytes:
        """The postings as binary COPY data (header, rows, trailer), built in numpy."""
        records = np.empty(len(self), dtype=_POSTING)
        records["fields"] = 4
        records["l_term"] = 8
        records["term"] = self.terms
        records["l_row"] = 8
        records["row"] = self.rows
        records["l_tf"] = 4
        records["tf"] = self.tfs
        records["l_dl"] = 4
        records["dl"] = self.lengths
        return COPY_HEADER + records.tobytes() + COPY_TRAILER


def postings(
    analyzer: Analyzer, keys: TermKeys, namespace: str, texts: Sequence[str], row_ids: np.ndarray
) -> tuple[Postings, np.ndarray]:
    """The postings of ``texts`` (row ``row_ids[i]`` holds ``texts[i]``) and each text's length in terms."""
    token_lists = analyzer.tokens_many(texts)
    lengths = np.fromiter((len(t) for t in token_lists), dtype=np.int64, count=len(token_lists))
    vocab: dict[str, int] = {}
    flat = [vocab.setdefault(t, len(vocab)) for tokens in token_lists for t in tokens]
    if not flat:
        empty = np.zeros(0, dtype=np.int64)
        return Postings(empty, empty, empty.astype(np.float32), empty.astype(np.float32)), lengths
    ids = np.asarray(flat, dtype=np.int64)
    docs = np.repeat(np.arange(len(token_lists), dtype=np.int64), lengths)
    width = len(vocab)
    combined, counts = np.unique(docs * width + ids, return_counts=True)
    doc_of, term_of = np.divmod(combined, width)
    term_keys = keys.keys(namespace, list(vocab))
    return Postings(term_keys[term_of], row_ids[doc_of], counts.astype(np.float32), lengths[doc_of].astype(np.float32)), lengths


def query_terms(analyzer: Analyzer, keys: TermKeys, namespace: str, query: str) -> tuple[list[int], list[float]]:
    """Distinct term keys of a query and how often each occurs (a repeated term counts again)."""
    counts: dict[str, int] = {}
    for term in analyzer.tokens(query):
        counts[term] = counts.get(term, 0) + 1
    return [keys.key(namespace, t) for t in counts], [float(c) for c in counts.values()]


#: BM25 of every chunk holding a query term: one pass over the query terms' postings (``df`` by a
#: window count; term keys are per namespace, so the postings are the namespace's).
_SCORED = """
WITH q AS (SELECT * FROM unnest(%(terms)s::bigint[], %(weights)s::float8[]) AS q(term_key, qtf)),
stats AS (SELECT coalesce(sum(chunks), 0)::float8 AS n, coalesce(sum(total_length), 0)::float8 / greatest(coalesce(sum(chunks), 0), 1) AS avgdl
          FROM {s}.sources WHERE namespace = %(namespace)s),
hits AS MATERIALIZED (SELECT p.row_id, p.tf, p.dl, q.qtf, count(*) OVER (PARTITION BY p.term_key)::float8 AS df
                      FROM {s}.postings p JOIN q USING (term_key)),
scored AS (SELECT h.row_id, sum(h.qtf * ln(1 + (stats.n - h.df + 0.5) / (h.df + 0.5))
                                * h.tf / (h.tf + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * h.dl / greatest(stats.avgdl, 1e-9)))) AS score
           FROM hits h CROSS JOIN stats GROUP BY h.row_id)
"""

#: Top-k BM25 of a namespace without a filter: the top k first, then their rows.
BM25_SQL = (
    _SCORED
    + """, top AS (SELECT row_id, score FROM scored ORDER BY score DESC, row_id LIMIT %(top_k)s)
SELECT {columns}, t.score FROM top t JOIN {s}.chunks c ON c.row_id = t.row_id ORDER BY t.score DESC, c.row_id
"""
)

#: Top-k BM25 with a filter (``{where}`` on ``c``) applied before the limit.
BM25_FILTERED_SQL = (
    _SCORED
    + """
SELECT {columns}, s.score FROM scored s JOIN {s}.chunks c ON c.row_id = s.row_id
WHERE c.namespace = %(namespace)s AND {where}
ORDER BY s.score DESC, c.row_id LIMIT %(top_k)s
"""
)
