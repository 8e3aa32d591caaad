"""The ``bm25`` retriever: keyword search alone, through the store's own BM25 index or ragloom's index of its chunks."""

from __future__ import annotations

from typing import Any

import attrs

from ragloom.retrievers.base import RetrieverOptions, Scope, keyword_searcher
from ragloom.stores.base import Store
from ragloom.types import Result


@attrs.frozen(kw_only=True)
class BM25RetrieverConfig(RetrieverOptions):
    """``top_k`` chunks by BM25 with score >= ``threshold`` (if set), restricted by ``filter``."""


class BM25Retriever:
    """Keyword search through ``store.keyword_search`` (or ragloom's keyword index of the store's chunks)."""

    def __init__(self, config: BM25RetrieverConfig, *, store: Store, namespace: str):
        self.config = config
        self.store = store
        self.keyword = keyword_searcher(store, namespace, "bm25")
        self.namespace = namespace
        self._scope = Scope(config)

    def retrieve(self, query: str, *, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> list[Result]:
        """Chunks containing query terms, best BM25 score first."""
        request = self._scope(top_k, threshold, filter)
        return request.keep(self.keyword.keyword_search(self.namespace, query, top_k=request.top_k, filter=request.filter))
