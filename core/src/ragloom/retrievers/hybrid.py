"""The ``hybrid`` retriever: BM25 and vector search, fused.

Two fusion modes:

- ``"convex"`` (default; it beat RRF on SciFact, see docs/retrieval.md): each
  side's scores min-max normalised over its candidates to [0, 1], then
  ``w_bm25 * bm25 + w_vector * vector`` (missing side: 0);
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

from ragloom.embedders.base import Embedder
from ragloom.filters import FilterNode
from ragloom.retrievers.base import RetrieverOptions, Scope, embed_query, require_keyword_search
from ragloom.stores.base import KeywordSearchStore, Store
from ragloom.types import Result


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

    mode: Literal["rrf", "convex"] = "convex"
    rrf_k: int = attrs.field(default=60, validator=attrs.validators.ge(0))
    weights: HybridWeights = attrs.field(factory=HybridWeights)
    candidates: int = attrs.field(default=100, validator=attrs.validators.gt(0))


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
        require_keyword_search(store, "hybrid")
        self.config = config
        self.store: KeywordSearchStore = store  # type: ignore[assignment]  # the capability is checked above
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
        keyword = list(self.store.keyword_search(self.namespace, query, top_k=fetch, filter=where)) if c.weights.bm25 > 0 else []
        vector = self._vector_hits(query, fetch, where) if c.weights.vector > 0 else []
        return request.keep(self.fuse(keyword, vector, limit=request.top_k))

    def fuse(self, keyword: list[Result], vector: list[Result], *, limit: int | None = None) -> list[Result]:
        """Fuse two ranked lists (best first) into one, best first (the first ``limit``)."""
        c = self.config
        by_id: dict[str, Result] = {}
        keyword_rank = {r.chunk_id: i for i, r in enumerate(keyword, start=1)}
        vector_rank = {r.chunk_id: i for i, r in enumerate(vector, start=1)}
        keyword_score = {r.chunk_id: r.score for r in keyword}
        vector_score = {r.chunk_id: r.score for r in vector}
        for r in (*vector, *keyword):
            by_id.setdefault(r.chunk_id, r)
        fused: dict[str, float] = {}
        if c.mode == "rrf":
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
            )
            for cid in order
        ]
