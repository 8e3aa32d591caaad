"""The ``hybrid`` retriever: BM25 and vector search, fused.

Three fusion modes:

- ``"auto"`` (default): query-adaptive fusion on absolute scores
  (:mod:`ragloom.retrievers.fusion`): BM25 divided by the query's ceiling and
  the cosine, each weighted per query by how far its best hit stands above the
  rest; scores mean the same for every query. ``threshold`` abstains: a query
  whose *relevance* (its best vector similarity, see
  :func:`ragloom.retrievers.fusion.query_relevance`) is below it returns
  nothing; an answered query drops only results whose fused score is below
  ``TAIL_RATIO`` x ``threshold``;
- ``"convex"``: each side's scores min-max normalised over its candidates to
  [0, 1], then ``w_bm25 * bm25 + w_vector * vector`` (missing side: 0);
- ``"rrf"``: weighted reciprocal-rank fusion (``k = rrf_k``, default 60),
  ``score = w_bm25 / (k + rank_bm25) + w_vector / (k + rank_vector)`` (a side
  that did not return the chunk adds nothing).

Every result carries ``vector_score`` and ``keyword_score`` (None when that side
did not find it) and both ranks in its metadata. Keyword-only hits come from
the store's keyword search, so they carry their chunk, document and metadata.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs
import numpy as np

from ragloom.analysis import Analyzer, AnalyzerConfig
from ragloom.embedders.base import Embedder
from ragloom.filters import FilterNode
from ragloom.retrievers import fusion
from ragloom.retrievers.base import RetrieverOptions, Scope, embed_query, keyword_searcher
from ragloom.stores.base import Candidates, HybridCandidates, Store
from ragloom.types import Result

SHARPNESS = 1.0
"""``mode = "auto"``: a member's per-query weight is prior x separation ** SHARPNESS (0: fixed weights)."""

RELEVANCE_THRESHOLD = 0.325
"""The documented ``threshold`` for ``mode = "auto"`` (and for cosine similarity): below it, probably irrelevant.

Chosen with all-MiniLM-L6-v2 on SciFact train queries and the fitting set of
out-of-domain questions (bench/models/fusion_analysis.py): the smallest value at
which >= 90 % of those questions return nothing while train nDCG@10 drops <= 0.01.
"""

TAIL_RATIO = 0.5
"""``mode = "auto"`` with a ``threshold``: an answered query drops results whose fused score is below this x ``threshold``."""

_WORDS = Analyzer(AnalyzerConfig(lowercase=True, stopwords=None, stemmer=None))


def keyword_ceiling(store: Any, namespace: str, query: str) -> float:
    """The query's best reachable BM25 score: ``store.keyword_ceiling``, else one keyword search per query word."""
    method = getattr(store, "keyword_ceiling", None)
    if method is not None:
        return float(method(namespace, query))
    total = 0.0
    for word in _WORDS.tokens(query):
        hits = store.keyword_search(namespace, word, top_k=1)
        total += hits[0].score if hits else 0.0
    return total


@attrs.frozen(kw_only=True)
class HybridWeights:
    """Weight of each side in the fusion."""

    bm25: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    vector: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))

    def __attrs_post_init__(self) -> None:
        if self.bm25 == 0 and self.vector == 0:
            raise ValueError("'weights' must not both be 0")


@attrs.frozen(kw_only=True)
class HybridConfig(RetrieverOptions):
    """Fuse ``candidates`` BM25 hits and ``candidates`` vector hits into ``top_k`` results."""

    mode: Literal["auto", "rrf", "convex"] = "auto"
    rrf_k: int = attrs.field(default=60, validator=attrs.validators.ge(0))
    weights: HybridWeights = attrs.field(factory=HybridWeights)
    candidates: int = attrs.field(default=100, validator=attrs.validators.gt(0))
    sharpness: float = attrs.field(default=SHARPNESS, validator=attrs.validators.ge(0))


def _normalise(scores: np.ndarray) -> np.ndarray:
    """Min-max over the candidates to [0, 1] (all 1 when they tie)."""
    if len(scores) == 0:
        return scores
    low, high = float(scores.min()), float(scores.max())
    if high == low:
        return np.ones_like(scores)
    return (scores - low) / (high - low)


class HybridRetriever:
    """BM25 (the store's own keyword search) + vector search, fused by RRF or a convex combination."""

    def __init__(self, config: HybridConfig, *, store: Store, embedder: Embedder, namespace: str):
        self.config = config
        self.store = store
        self.keyword = keyword_searcher(store, namespace, "hybrid")
        self.embedder = embedder
        self._vector_informative = not fusion.lexical(embedder)
        self.namespace = namespace
        self._scope = Scope(config)

    def retrieve(self, query: str, *, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> list[Result]:
        """Fused results, best first."""
        c = self.config
        request = self._scope(top_k, threshold, filter)
        fetch = max(c.candidates, request.top_k)
        found = self._candidates(query, fetch, request.filter)
        fused = self._fuse(found, limit=request.top_k, complete_keyword=len(found.keyword.keys) < fetch)
        if c.mode != "auto" or request.threshold is None or not fused:
            return request.keep(fused)
        return abstain(fused, request.threshold)

    def _candidates(self, query: str, fetch: int, where: FilterNode | None) -> HybridCandidates:
        """Both members' candidates: from the store's ``hybrid_candidates`` in one call when it has one, else two searches."""
        c = self.config
        want_keyword, want_vector = c.weights.bm25 > 0, c.weights.vector > 0
        vector = embed_query(self.embedder, self.store, query) if want_vector else None
        method = getattr(self.store, "hybrid_candidates", None) if self.keyword is self.store else None
        if method is not None:
            found = method(self.namespace, vector, query if want_keyword else None, top_k=fetch, filter=where)
            if found is not None:
                return found  # type: ignore[no-any-return]
        keyword = list(self.keyword.keyword_search(self.namespace, query, top_k=fetch, filter=where)) if want_keyword else []
        nearest = list(self.store.search(self.namespace, vector, top_k=fetch, filter=where)) if vector is not None else []
        ceiling = keyword_ceiling(self.keyword, self.namespace, query) if c.mode == "auto" and keyword else 0.0
        return from_results(keyword, nearest, ceiling)

    def fuse(
        self,
        keyword: list[Result],
        vector: list[Result],
        *,
        limit: int | None = None,
        keyword_ceiling: float = 0.0,
        complete_keyword: bool = False,
    ) -> list[Result]:
        """Fuse two ranked lists (best first) into one, best first (the first ``limit``).

        ``keyword_ceiling`` (mode ``"auto"``): the query's best reachable BM25
        score; ``complete_keyword``: the keyword list holds every chunk that
        matches a query term (a chunk missing from it scores 0 there).
        """
        return self._fuse(from_results(keyword, vector, keyword_ceiling), limit=limit, complete_keyword=complete_keyword)

    def _fuse(self, found: HybridCandidates, *, limit: int | None, complete_keyword: bool) -> list[Result]:
        """The fusion on arrays; a ``Result`` is built only for each of the first ``limit`` candidates."""
        c = self.config
        kpos, size = _union(found.keyword.keys, found.vector.keys)
        kscores, vscores = found.keyword.scores, found.vector.scores
        nv = len(vscores)
        extra: dict[str, Any] = {}
        if c.mode == "auto":
            fused, weights = self._fuse_auto(size, kpos, kscores, vscores, found.keyword_ceiling, complete_keyword)
            extra = {"keyword_weight": weights[0], "vector_weight": weights[1], "query_relevance": fusion.query_relevance(vscores, fused)}
            order = fusion.best_first(fused, kpos, weights)[:limit]
        else:
            fused = np.zeros(size)
            if c.mode == "rrf":
                fused[:nv] = c.weights.vector / (c.rrf_k + np.arange(1, nv + 1))
                fused[kpos] += c.weights.bm25 / (c.rrf_k + np.arange(1, len(kpos) + 1))
            else:
                fused[:nv] = c.weights.vector * _normalise(vscores)
                fused[kpos] += c.weights.bm25 * _normalise(kscores)
            order = np.argsort(-fused, kind="stable")[:limit]  # ties: first seen (vector list first, then keyword)
        # each picked position's index in the keyword list (-1: not there); in the vector list it is the position itself
        in_keyword = np.full(size, -1, dtype=np.intp)
        in_keyword[kpos] = np.arange(len(kpos))
        ki = in_keyword[order]
        vector_payloads, keyword_payloads = found.vector.payloads, found.keyword.payloads
        results = []
        for p, k, score in zip(order.tolist(), ki.tolist(), fused[order].tolist(), strict=True):
            in_vector = p < nv
            result = found.result(vector_payloads[p] if in_vector else keyword_payloads[k], score)
            result.metadata.update(
                vector_score=float(vscores[p]) if in_vector else None,
                keyword_score=float(kscores[k]) if k >= 0 else None,
                vector_rank=p + 1 if in_vector else None,
                keyword_rank=k + 1 if k >= 0 else None,
                **extra,
            )
            results.append(result)
        return results

    def _fuse_auto(
        self, size: int, kpos: np.ndarray, kscores: np.ndarray, vscores: np.ndarray, ceiling: float, complete_keyword: bool
    ) -> tuple[np.ndarray, tuple[float, float]]:
        c = self.config
        kw = fusion.keyword_values(kscores, ceiling)
        vec = fusion.vector_values(vscores)
        kw_floor = fusion.floor_value(kw, complete=complete_keyword)
        vec_floor = fusion.floor_value(vec, complete=False)
        weights = fusion.query_weights(
            kw, kw_floor, vec, vec_floor, prior=(c.weights.bm25, c.weights.vector), sharpness=c.sharpness, vector_informative=self._vector_informative
        )
        return fusion.fuse_union(size, kpos, kw, kw_floor, vec, vec_floor, weights), weights


def abstain(results: list[Result], threshold: float) -> list[Result]:
    """``mode = "auto"``: nothing when the query's relevance is below ``threshold``, else the results above its tail cut."""
    if results[0].metadata["query_relevance"] < threshold:
        return []
    tail = TAIL_RATIO * threshold
    return [r for r in results if r.score >= tail]


def from_results(keyword: list[Result], vector: list[Result], ceiling: float) -> HybridCandidates:
    """Two members' Result lists as :class:`HybridCandidates` (keys: the chunk ids numbered in first-seen order, vector first)."""
    numbers: dict[str, int] = {}
    sides = []
    for results in (vector, keyword):
        first = {r.chunk_id: i for i, r in reversed(list(enumerate(results)))}  # a ranking names a chunk once: at its best place
        distinct = [r for i, r in enumerate(results) if first[r.chunk_id] == i]
        keys = np.fromiter((numbers.setdefault(r.chunk_id, len(numbers)) for r in distinct), dtype=np.int64, count=len(distinct))
        sides.append(Candidates(keys, np.fromiter((r.score for r in distinct), dtype=np.float64, count=len(distinct)), distinct))
    return HybridCandidates(sides[0], sides[1], ceiling, _rescored)


def _rescored(result: Result, score: float) -> Result:
    """A copy of ``result`` with ``score`` and a metadata dict of its own."""
    return attrs.evolve(result, score=score, metadata=dict(result.metadata))


def _union(keyword: np.ndarray, vector: np.ndarray) -> tuple[np.ndarray, int]:
    """Number the union of both members' keys in first-seen order: the vector list first, then the keyword list's new keys.

    Each member's keys are distinct (a ranking). The vector candidate ``i`` is
    at position ``i``; returns each keyword candidate's position and the union's size.
    """
    nv = len(vector)
    position = np.empty(len(keyword), dtype=np.intp)
    shared = np.zeros(len(keyword), dtype=bool)
    if nv and len(keyword):
        by_key = np.argsort(vector, kind="stable")
        at = np.minimum(np.searchsorted(vector[by_key], keyword), nv - 1)
        shared = vector[by_key[at]] == keyword
        position[shared] = by_key[at[shared]]
    new = ~shared
    count = int(np.count_nonzero(new))
    position[new] = nv + np.arange(count)
    return position, nv + count
