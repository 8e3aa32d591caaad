"""The Retriever contract and what every retriever shares.

``retrieve(query, *, top_k=None, threshold=None, filter=None)`` returns Results
best first. ``None`` means "use the configured value". A per-call filter is
combined (``$and``) with the filter from config. Scores are higher-is-better;
``threshold`` drops results scoring below it.

Configs subclass :class:`RetrieverOptions` (``top_k``, ``threshold``,
``filter``); :class:`Scope` resolves the per-call values over them, in one place.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs
import numpy as np

from ragloom.errors import ConfigError, DimensionMismatchError
from ragloom.filters import FilterNode, combine, parse_filter
from ragloom.stores.base import CHUNKS, KEYWORD_SEARCH, Store
from ragloom.stores.keyword_index import KeywordSearcher, keyword_index_for
from ragloom.types import Result

if TYPE_CHECKING:
    from ragloom.embedders.base import Embedder


@runtime_checkable
class Retriever(Protocol):
    """Finds the chunks that answer a query."""

    def retrieve(self, query: str, *, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> list[Result]:
        """Results, best first."""
        ...


def check_filter(_instance: Any, _attribute: Any, value: Any) -> None:
    """attrs validator: a config's ``filter`` must parse (errors at config time, not at the first query)."""
    parse_filter(value)


@attrs.frozen(kw_only=True)
class RetrieverOptions:
    """``top_k`` results with score >= ``threshold`` (if set), restricted by ``filter``."""

    top_k: int = attrs.field(default=5, validator=attrs.validators.gt(0))
    threshold: float | None = None
    filter: dict[str, Any] | None = attrs.field(default=None, validator=check_filter)


@attrs.frozen
class Request:
    """One call's resolved values: ``top_k``, ``threshold`` and the combined filter."""

    top_k: int
    threshold: float | None
    filter: FilterNode | None

    def keep(self, results: Iterable[Result]) -> list[Result]:
        """The results scoring at least ``threshold`` (all of them without one)."""
        if self.threshold is None:
            return list(results)
        cutoff = self.threshold
        return [r for r in results if r.score >= cutoff]


class Scope:
    """Resolves per-call ``top_k`` / ``threshold`` / ``filter`` over a retriever's configured ones."""

    def __init__(self, options: RetrieverOptions):
        self.options = options
        self.filter = parse_filter(options.filter)

    def __call__(self, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> Request:
        return Request(
            top_k=top_k if top_k is not None else self.options.top_k,
            threshold=threshold if threshold is not None else self.options.threshold,
            filter=combine(self.filter, filter),
        )


def embed_query(embedder: Embedder, store: Store, query: str) -> np.ndarray:
    """The query's vector; DimensionMismatchError when it does not fit the store's vectors."""
    vector = embedder.embed_query(query)
    store_dim = store.dimension()
    if store_dim is not None and store_dim != len(vector):
        raise DimensionMismatchError(store_dim=store_dim, embedder_dim=len(vector))
    return vector


def require_keyword_search(store: Store, what: str) -> None:
    """ConfigError unless the store has keyword search of its own or enumerates its chunks (``chunks``)."""
    capabilities: frozenset[str] = getattr(store, "capabilities", frozenset())
    if KEYWORD_SEARCH not in capabilities and CHUNKS not in capabilities:
        raise ConfigError(
            f"the {what} retriever needs a store with keyword search or one that lists its chunks; {type(store).__name__} "
            "declares neither the 'keyword_search' nor the 'chunks' capability"
        )


def keyword_searcher(store: Store, namespace: str, what: str) -> KeywordSearcher:
    """The store itself when it has keyword search, else the keyword index ragloom keeps of its chunks."""
    require_keyword_search(store, what)
    if KEYWORD_SEARCH in store.capabilities:
        return store  # type: ignore[return-value]  # the capability is checked above
    return keyword_index_for(store, namespace)
