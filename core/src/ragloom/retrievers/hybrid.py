"""The ``hybrid`` retriever: BM25 and vector search, fused.

Three fusion modes:

- ``"auto"`` (default): query-adaptive fusion on absolute scores
  (:mod:`ragloom.retrievers.fusion`): BM25 divided by the query's ceiling and
  the cosine, each weighted per query by how far its best hit stands above the
  rest; scores mean the same for every query, so ``threshold`` works;
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
from ragloom.stores.base import Store
from ragloom.types import Result

SHARPNESS = 1.0
"""``mode = "auto"``: a member's per-query weight is prior x separation ** SHARPNESS (0: fixed weights)."""

RELEVANCE_THRESHOLD = 0.3
"""The documented ``threshold`` for ``mode = "auto"`` (and for cosine similarity): below it, probably irrelevant."""

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


def _normalise(scores: dict[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high == low:
        return {key: 1.0 for key in scores}
    return {key: (value - low) / (high - low) for key, value in scores.items()}


class HybridRetriever:
    """BM25 (the store's own keyword search) + vector search, fused by RRF or a convex combination."""

    def __init__(self, config: HybridConfig, *, store: Store, embedder: Embedder, namespace: str):
        self.config = config
        self.store = store
        self.keyword = keyword_searcher(store, namespace, "hybrid")
        self.embedder = embedder
        self.namespace = namespace
        self._scope = Scope(config)

    def _vector_hits(self, query: str, fetch: int, filter: FilterNode | None) -> list[Result]:
        vector = embed_query(self.embedder, self.store, query)
        return list(self.store.search(self.namespace, vector, top_k=fetch, filter=filter))

    def retrieve(self, query: str, *, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> list[Result]:
        """Fused results, best first."""
        c = self.config
        request = self._scope(top_k, threshold, filter)
        fetch = max(c.candidates, request.top_k)
        where = request.filter
        keyword = list(self.keyword.keyword_search(self.namespace, query, top_k=fetch, filter=where)) if c.weights.bm25 > 0 else []
        vector = self._vector_hits(query, fetch, where) if c.weights.vector > 0 else []
        ceiling = keyword_ceiling(self.keyword, self.namespace, query) if c.mode == "auto" and keyword else 0.0
        return request.keep(
            self.fuse(keyword, vector, limit=request.top_k, keyword_ceiling=ceiling, complete_keyword=len(keyword) < fetch)
        )

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
        c = self.config
        extra: dict[str, Any] = {}
        by_id: dict[str, Result] = {}
        keyword_rank = {r.chunk_id: i for i, r in enumerate(keyword, start=1)}
        vector_rank = {r.chunk_id: i for i, r in enumerate(vector, start=1)}
        keyword_score = {r.chunk_id: r.score for r in keyword}
        vector_score = {r.chunk_id: r.score for r in vector}
        for r in (*vector, *keyword):
            by_id.setdefault(r.chunk_id, r)
        fused: dict[str, float] = {}
        if c.mode == "auto":
            fused, weights = self._fuse_auto(keyword, vector, keyword_ceiling, complete_keyword)
            extra = {"keyword_weight": weights[0], "vector_weight": weights[1]}
        elif c.mode == "rrf":
            for cid in by_id:
                score = 0.0
                if cid in keyword_rank:
                    score += c.weights.bm25 / (c.rrf_k + keyword_rank[cid])
                if cid in vector_rank:
                    score += c.weights.vector / (c.rrf_k + vector_rank[cid])
                fused[cid] = score
        else:
            kw, vec = _normalise(keyword_score), _normalise(vector_score)
            for cid in by_id:
                fused[cid] = c.weights.bm25 * kw.get(cid, 0.0) + c.weights.vector * vec.get(cid, 0.0)
        first_seen = {cid: i for i, cid in enumerate(by_id)}
        order = sorted(by_id, key=lambda cid: (-fused[cid], first_seen[cid]))[:limit]
        return [
            by_id[cid].with_score(
                fused[cid],
                vector_score=vector_score.get(cid),
                keyword_score=keyword_score.get(cid),
                vector_rank=vector_rank.get(cid),
                keyword_rank=keyword_rank.get(cid),
                **extra,
            )
            for cid in order
        ]

    def _fuse_auto(
        self, keyword: list[Result], vector: list[Result], ceiling: float, complete_keyword: bool
    ) -> tuple[dict[str, float], tuple[float, float]]:
        c = self.config
        kw = fusion.keyword_values(np.fromiter((r.score for r in keyword), dtype=np.float64, count=len(keyword)), ceiling)
        vec = fusion.vector_values(np.fromiter((r.score for r in vector), dtype=np.float64, count=len(vector)))
        kw_floor = fusion.floor_value(kw, complete=complete_keyword)
        vec_floor = fusion.floor_value(vec, complete=False)
        weights = fusion.query_weights(kw, kw_floor, vec, vec_floor, prior=(c.weights.bm25, c.weights.vector), sharpness=c.sharpness)
        fused = fusion.fuse_values([r.chunk_id for r in keyword], kw, kw_floor, [r.chunk_id for r in vector], vec, vec_floor, weights)
        return fused, weights
