"""The ``mmr`` retriever: maximal marginal relevance over the nearest ``fetch_k`` chunks.

Iteratively picks the candidate maximising
``lambda * sim(query, c) - (1 - lambda) * max(sim(c, s) for s already picked)``:
``lambda = 1`` is plain similarity order, ``lambda = 0`` pure diversity. The MMR
value is the result's ``score``; the similarity to the query stays in
``metadata["original_score"]``. Candidate vectors come from the store when it
declares the ``"vectors"`` capability and are re-embedded otherwise.
``threshold`` drops candidates whose similarity is below it, before selection.
TOML spells the trade-off ``lambda``; Python ``lambda_mult``.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ragloom.embedders.base import Embedder, embed_in_batches
from ragloom.errors import ConfigError
from ragloom.retrievers.base import RetrieverOptions, Scope, embed_query
from ragloom.stores.base import Store, normalize_rows, vector_store
from ragloom.types import Result


def _unit_interval(_instance: Any, attribute: Any, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"'lambda' must be between 0 and 1, got {value!r}")


@attrs.frozen(kw_only=True)
class MMRConfig(RetrieverOptions):
    """``top_k`` diverse results chosen among the ``fetch_k`` nearest (default 3 x top_k)."""

    fetch_k: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.gt(0)))
    lambda_mult: float = attrs.field(default=0.5, validator=_unit_interval, metadata={"aliases": ("lambda",)})


def mmr_select(relevance: np.ndarray, vectors: np.ndarray, k: int, lambda_mult: float) -> list[tuple[int, float]]:
    """Indices picked by MMR with their MMR scores, in pick order.

    ``relevance[i]`` is candidate i's similarity to the query; ``vectors`` are
    L2-normalised rows. Ties go to the earlier candidate.
    """
    n = len(relevance)
    k = min(k, n)
    if k <= 0:
        return []
    similarity = vectors @ vectors.T
    picked: list[tuple[int, float]] = []
    redundancy = np.full(n, -np.inf)
    available = np.ones(n, dtype=bool)
    for _ in range(k):
        penalty = np.where(np.isfinite(redundancy), redundancy, 0.0)
        score = lambda_mult * relevance - (1.0 - lambda_mult) * penalty
        score = np.where(available, score, -np.inf)
        best = int(np.argmax(score))
        picked.append((best, float(score[best])))
        available[best] = False
        redundancy = np.maximum(redundancy, similarity[best])
    return picked


class MMRRetriever:
    """Similarity search, then maximal-marginal-relevance re-selection."""

    def __init__(self, config: MMRConfig, *, store: Store, embedder: Embedder, namespace: str):
        self.config = config
        self.store = store
        self.embedder = embedder
        self.namespace = namespace
        self._scope = Scope(config)

    def _vectors(self, candidates: list[Result]) -> np.ndarray:
        ids = [r.chunk_id for r in candidates]
        with_vectors = vector_store(self.store)
        if with_vectors is not None:
            vectors = with_vectors.get_vectors(self.namespace, ids)
        else:
            vectors = embed_in_batches(self.embedder, [r.text for r in candidates])
        return normalize_rows(np.asarray(vectors, dtype=np.float32))

    def retrieve(
        self,
        query: str,
        *,
        top_k: int | None = None,
        threshold: float | None = None,
        filter: Any = None,
        lambda_mult: float | None = None,
    ) -> list[Result]:
        """``top_k`` results balancing relevance and diversity (``lambda_mult`` overrides the config)."""
        c = self.config
        request = self._scope(top_k, threshold, filter)
        k = request.top_k
        lam = c.lambda_mult if lambda_mult is None else float(lambda_mult)
        if not 0.0 <= lam <= 1.0:
            raise ConfigError(f"lambda must be between 0 and 1, got {lam!r}")
        fetch = max(c.fetch_k if c.fetch_k is not None else 3 * k, k)
        query_vector = embed_query(self.embedder, self.store, query)
        candidates = request.keep(self.store.search(self.namespace, query_vector, top_k=fetch, filter=request.filter))
        if not candidates:
            return []
        relevance = np.asarray([r.score for r in candidates], dtype=np.float64)
        picked = mmr_select(relevance, self._vectors(candidates).astype(np.float64), k, lam)
        return [candidates[i].with_score(score, original_score=candidates[i].score) for i, score in picked]
