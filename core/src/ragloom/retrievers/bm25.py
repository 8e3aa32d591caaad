"""The ``bm25`` retriever: keyword search alone, through the store's own BM25 index."""

from __future__ import annotations

from typing import Any

import attrs

from ragloom.errors import ConfigError
from ragloom.filters import combine, parse_filter
from ragloom.retrievers.base import check_filter
from ragloom.stores.base import KEYWORD_SEARCH
from ragloom.types import Result


def require_keyword_search(store: Any, what: str) -> None:
    """ConfigError unless the store declares the ``keyword_search`` capability."""
    if KEYWORD_SEARCH not in getattr(store, "capabilities", frozenset()):
        raise ConfigError(
            f"the {what} retriever needs a store with keyword search; {type(store).__name__} does not declare "
            "the 'keyword_search' capability (the memory and duckdb stores do)"
        )


@attrs.frozen(kw_only=True)
class BM25RetrieverConfig:
    """``top_k`` chunks by BM25 with score >= ``threshold`` (if set), restricted by ``filter``."""

    top_k: int = attrs.field(default=5, validator=attrs.validators.gt(0))
    threshold: float | None = None
    filter: dict[str, Any] | None = attrs.field(default=None, validator=check_filter)


class BM25Retriever:
    """Keyword search through ``store.keyword_search``."""

    def __init__(self, config: BM25RetrieverConfig, *, store: Any, namespace: str):
        require_keyword_search(store, "bm25")
        self.config = config
        self.store = store
        self.namespace = namespace
        self._filter = parse_filter(config.filter)

    def retrieve(self, query: str, *, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> list[Result]:
        """Chunks containing query terms, best BM25 score first."""
        k = top_k if top_k is not None else self.config.top_k
        cutoff = threshold if threshold is not None else self.config.threshold
        results = self.store.keyword_search(self.namespace, query, top_k=k, filter=combine(self._filter, filter))
        if cutoff is not None:
            results = [r for r in results if r.score >= cutoff]
        return list(results)
