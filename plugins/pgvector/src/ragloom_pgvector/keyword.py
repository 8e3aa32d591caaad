"""BM25 kept in PostgreSQL: postings written with binary COPY, scored in numpy (or in SQL with a filter).

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

An unfiltered query reads the query terms' postings as packed arrays (one row
per term, ``array_send`` of ``array_agg`` over the ``term_key`` index: no
per-posting work in SQL beyond the index scan) and scores them in numpy;
:data:`BM25_SQL` scores in SQL and is kept for filtered queries and as the
fallback when a top row was deleted between the two statements.
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


#: The query terms' postings, one row per term (``df`` = the array length), with ``N`` and the total length.
POSTINGS_SQL = """
SELECT (SELECT coalesce(sum(chunks), 0)::float8 FROM {s}.sources WHERE namespace = %(namespace)s),
       (SELECT coalesce(sum(total_length), 0)::float8 FROM {s}.sources WHERE namespace = %(namespace)s),
       p.term_key, array_send(array_agg(p.row_id)), array_send(array_agg(p.tf)), array_send(array_agg(p.dl))
FROM {s}.postings p WHERE p.term_key = ANY(%(terms)s::bigint[]) GROUP BY p.term_key
"""

_ARRAY_HEADER = 20  # array_send of a one-dimensional array without NULLs: ndim, flags, element type, size, lower bound
_INT8_ITEM = np.dtype([("length", ">i4"), ("value", ">i8")])
_FLOAT4_ITEM = np.dtype([("length", ">i4"), ("value", ">f4")])


def _unpack(data: bytes, item: np.dtype) -> np.ndarray:
    """The values of a one-dimensional binary array (``array_send``)."""
    return np.frombuffer(data, dtype=item, offset=_ARRAY_HEADER)["value"] if len(data) > 12 else np.zeros(0, item["value"])


def score_postings(
    rows: Sequence[tuple[float, float, int, bytes, bytes, bytes]],
    weights: dict[int, float],
    *,
    k1: float,
    b: float,
    top_k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """BM25 (see the module docstring) of the rows of :data:`POSTINGS_SQL`: the best ``top_k``
    ``(row_ids, scores)``, by score descending, then row id (the order of :data:`BM25_SQL`)."""
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    n, total = float(rows[0][0]), float(rows[0][1])
    avgdl = max(total / max(n, 1.0), 1e-9)
    ids = [_unpack(r[3], _INT8_ITEM) for r in rows]
    tf = np.concatenate([_unpack(r[4], _FLOAT4_ITEM) for r in rows]).astype(np.float64)
    dl = np.concatenate([_unpack(r[5], _FLOAT4_ITEM) for r in rows]).astype(np.float64)
    df = np.array([len(a) for a in ids], dtype=np.float64)
    idf = np.array([weights[int(r[2])] for r in rows]) * np.log(1 + (n - df + 0.5) / (df + 0.5))
    part = np.repeat(idf, df.astype(np.int64)) * tf / (tf + k1 * (1 - b + b * dl / avgdl))
    candidates, inverse = np.unique(np.concatenate(ids), return_inverse=True)
    scores = np.bincount(inverse, weights=part, minlength=len(candidates))
    if len(scores) > top_k:
        keep = scores >= np.partition(scores, len(scores) - top_k)[len(scores) - top_k]  # ties at the cut stay
        candidates, scores = candidates[keep], scores[keep]
    order = np.lexsort((candidates, -scores))[:top_k]
    return candidates[order], scores[order]


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
SELECT {columns}, t.score FROM top t JOIN {s}.chunks c ON c.row_id = t.row_id AND c.source_type = 'document'
ORDER BY t.score DESC, c.row_id
"""
)

#: Top-k BM25 with a filter (``{where}`` on ``c``) applied before the limit.
BM25_FILTERED_SQL = (
    _SCORED
    + """
SELECT {columns}, s.score FROM scored s JOIN {s}.chunks c ON c.row_id = s.row_id
WHERE c.namespace = %(namespace)s AND c.source_type = 'document' AND {where}
ORDER BY s.score DESC, c.row_id LIMIT %(top_k)s
"""
)
