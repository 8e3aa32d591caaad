"""The ``similarity`` retriever: embed the query, ask the store for the nearest chunks."""

from __future__ import annotations

from typing import Any

import attrs

from ragloom.embedders.base import Embedder
from ragloom.retrievers.base import RetrieverOptions, Scope, embed_query
from ragloom.stores.base import Store
from ragloom.types import Result


@attrs.frozen(kw_only=True)
class SimilarityConfig(RetrieverOptions):
    """``top_k`` results with score >= ``threshold`` (if set), restricted by ``filter``."""


class SimilarityRetriever:
    """Dense vector search through the store."""

    def __init__(self, config: SimilarityConfig, *, store: Store, embedder: Embedder, namespace: str):
        self.config = config
        self.store = store
        self.embedder = embedder
        self.namespace = namespace
        self._scope = Scope(config)

    def retrieve(self, query: str, *, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> list[Result]:
        """Nearest chunks by cosine similarity."""
        request = self._scope(top_k, threshold, filter)
        vector = embed_query(self.embedder, self.store, query)
        return request.keep(self.store.search(self.namespace, vector, top_k=request.top_k, filter=request.filter))
