"""The ``bm25`` retriever: keyword search alone, through the store's own BM25 index."""

from __future__ import annotations

from typing import Any

import attrs

from ragloom.retrievers.base import RetrieverOptions, Scope, require_keyword_search
from ragloom.stores.base import KeywordSearchStore, Store
from ragloom.types import Result


@attrs.frozen(kw_only=True)
class BM25RetrieverConfig(RetrieverOptions):
    """``top_k`` chunks by BM25 with score >= ``threshold`` (if set), restricted by ``filter``."""


class BM25Retriever:
    """Keyword search through ``store.keyword_search``."""

    def __init__(self, config: BM25RetrieverConfig, *, store: Store, namespace: str):
        require_keyword_search(store, "bm25")
        self.config = config
        self.store: KeywordSearchStore = store  # type: ignore[assignment]  # the capability is checked above
        self.namespace = namespace
        self._scope = Scope(config)

    def retrieve(self, query: str, *, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> list[Result]:
        """Chunks containing query terms, best BM25 score first."""
        request = self._scope(top_k, threshold, filter)
        return request.keep(self.store.keyword_search(self.namespace, query, top_k=request.top_k, filter=request.filter))
