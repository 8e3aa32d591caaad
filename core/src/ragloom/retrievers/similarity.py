"""The ``similarity`` retriever: embed the query, ask the store for the nearest chunks."""

from __future__ import annotations

from typing import Any

import attrs

from ragloom.filters import combine, parse_filter
from ragloom.retrievers.base import check_filter, embed_query
from ragloom.types import Result


@attrs.frozen(kw_only=True)
class SimilarityConfig:
    """``top_k`` results with score >= ``threshold`` (if set), restricted by ``filter``."""

    top_k: int = attrs.field(default=5, validator=attrs.validators.gt(0))
    threshold: float | None = None
    filter: dict[str, Any] | None = attrs.field(default=None, validator=check_filter)


class SimilarityRetriever:
    """Dense vector search through the store."""

    def __init__(self, config: SimilarityConfig, *, store: Any, embedder: Any, namespace: str):
        self.config = config
        self.store = store
        self.embedder = embedder
        self.namespace = namespace
        self._filter = parse_filter(config.filter)

    def retrieve(self, query: str, *, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> list[Result]:
        """Nearest chunks by cosine similarity."""
        k = top_k if top_k is not None else self.config.top_k
        cutoff = threshold if threshold is not None else self.config.threshold
        vector = embed_query(self.embedder, self.store, query)
        results = self.store.search(self.namespace, vector, top_k=k, filter=combine(self._filter, filter))
        if cutoff is not None:
            results = [r for r in results if r.score >= cutoff]
        return results
