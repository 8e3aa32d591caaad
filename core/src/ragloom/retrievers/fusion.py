"""Query-adaptive fusion of a keyword and a vector ranking on scores comparable across queries.

Each member's scores are first put on an absolute scale, the same for every query:

- keyword (BM25): the score divided by the query's *ceiling* — per query term,
  the best score any stored chunk reaches on that term, summed
  (``store.keyword_ceiling``). 1 means "matches every query term as well as the
  best chunk for that term"; a chunk matching only a common word scores near 0.
- vector: the cosine similarity, clipped to [0, 1].

Then each member gets a weight *for this query* from what it found: its prior
weight times its best calibrated score raised to ``sharpness``. A member whose
best hit matches the query poorly (BM25 finding only a few of an entity query's
words; a weak embedder whose best cosine is low) counts for little on that
query, whatever its scores' spread; when both match well they count equally.
The fused score is ``w_kw * keyword + w_vec * vector`` with the weights summing
to 1, so it stays on the members' absolute scale: a threshold means the same
for every query. A chunk one member did not return gets that member's lowest
returned value (its score is at most that), or 0 when the member returned every
chunk it matches.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def keyword_values(scores: Sequence[float] | np.ndarray, ceiling: float) -> np.ndarray:
    """BM25 scores divided by the query's ceiling, in [0, 1]."""
    values = np.asarray(scores, dtype=np.float64)
    if ceiling <= 0:
        return np.zeros_like(values)
    return np.minimum(np.maximum(values / ceiling, 0.0), 1.0)


def vector_values(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """Cosine similarities clipped to [0, 1]."""
    return np.minimum(np.maximum(np.asarray(scores, dtype=np.float64), 0.0), 1.0)


def floor_value(values: np.ndarray, *, complete: bool) -> float:
    """The value for a chunk the member did not return: its last value, or 0 if it returned all it matches."""
    if complete or len(values) == 0:
        return 0.0
    return float(values[-1])


def separation(values: np.ndarray, floor: float) -> float:
    """How far a member's best hit stands above what it gives a chunk it did not return (>= 0)."""
    return max(float(values[0]) - floor, 0.0) if len(values) else 0.0


def query_weights(
    keyword: np.ndarray,
    keyword_floor: float,
    vector: np.ndarray,
    vector_floor: float,
    *,
    prior: tuple[float, float],
    sharpness: float,
    vector_informative: bool = True,
) -> tuple[float, float]:
    """Per-query member weights (summing to 1): prior x separation ** sharpness.

    ``vector_informative=False`` (a lexical embedder: see :func:`lexical`) gives
    the keyword member all the weight whenever it has some prior weight.
    """
    if not vector_informative and prior[0] > 0:
        return 1.0, 0.0
    w_kw = prior[0] * separation(keyword, keyword_floor) ** sharpness
    w_vec = prior[1] * separation(vector, vector_floor) ** sharpness
    total = w_kw + w_vec
    if total <= 0:
        total_prior = prior[0] + prior[1]
        return prior[0] / total_prior, prior[1] / total_prior
    return w_kw / total, w_vec / total


def lexical(embedder: object) -> bool:
    """Whether an embedder declares itself lexical (``lexical = True``: its vectors see only the words' spelling, like ``hash``).

    Such a vector member tells nothing a keyword index over the same text does
    not: fused with BM25 on SciFact's train queries it gained +0.003 nDCG@10
    (p = 0.37), winning on 62 queries and losing on 65, and no query-time
    signal (its weight, either member's separation, its best cosine, the
    members' top-10 overlap) told the two apart (bench/models/fusion_analysis.py).
    """
    return bool(getattr(embedder, "lexical", False))


def best_first(fused: np.ndarray, keyword_positions: np.ndarray, weights: tuple[float, float]) -> np.ndarray:
    """The union's positions ordered best first: by fused score, ties in first-seen order (vector list first).

    When the vector member counts for nothing (weight 0), exactly the keyword
    member's order, ties included, then the candidates only the vector member
    found (in its order) — still a best-first order of the fused scores.
    """
    if weights[1] == 0 and weights[0] > 0:
        rest = np.ones(len(fused), dtype=bool)
        rest[keyword_positions] = False
        return np.concatenate([keyword_positions, np.flatnonzero(rest)])
    return np.argsort(-fused, kind="stable")


def query_relevance(vector_scores: np.ndarray, fused: np.ndarray) -> float:
    """How likely the corpus holds something relevant to the query, on one scale for every query.

    The best cosine among the vector member's candidates (clipped to [0, 1]):
    on SciFact it tells in-domain from out-of-domain questions far better than
    the best BM25 value or the best fused score (out-of-domain questions still
    share common words with the corpus). Without vector candidates: the best
    fused score.
    """
    if len(vector_scores):
        return min(max(float(vector_scores.max()), 0.0), 1.0)
    return float(np.max(fused)) if len(fused) else 0.0


def fuse_union(
    size: int,
    keyword_positions: np.ndarray,
    keyword: np.ndarray,
    keyword_floor: float,
    vector: np.ndarray,
    vector_floor: float,
    weights: tuple[float, float],
) -> np.ndarray:
    """Fused scores of the ``size`` candidates of the union, the vector list's first (in its order).

    Keyword values sit at ``keyword_positions``; a candidate a member did not
    return gets that member's floor. One pass of array arithmetic, no per-candidate Python.
    """
    kw = np.full(size, keyword_floor)
    kw[keyword_positions] = keyword
    fused = weights[0] * kw
    fused[: len(vector)] += weights[1] * vector
    fused[len(vector) :] += weights[1] * vector_floor
    return fused


def fuse_values(
    keyword_ids: Sequence[str],
    keyword: np.ndarray,
    keyword_floor: float,
    vector_ids: Sequence[str],
    vector: np.ndarray,
    vector_floor: float,
    weights: tuple[float, float],
) -> dict[str, float]:
    """``{chunk_id: fused score}`` over the union of both members' candidates (each list's ids distinct)."""
    vector_ids = list(vector_ids)
    seen = set(vector_ids)
    ids = vector_ids + [c for c in keyword_ids if c not in seen]
    position = {cid: i for i, cid in enumerate(ids)}
    fused = fuse_union(
        len(ids),
        np.fromiter((position[c] for c in keyword_ids), dtype=np.intp, count=len(keyword_ids)),
        keyword,
        keyword_floor,
        vector,
        vector_floor,
        weights,
    )
    return dict(zip(ids, fused.tolist(), strict=True))
