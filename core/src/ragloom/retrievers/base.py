"""The Retriever contract.

``retrieve(query, *, top_k=None, threshold=None, filter=None)`` returns Results
best first. ``None`` means "use the configured value". A per-call filter is
combined (``$and``) with the filter from config. Scores are higher-is-better;
``threshold`` drops results scoring below it.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ragloom.errors import DimensionMismatchError
from ragloom.filters import parse_filter
from ragloom.types import Result


@runtime_checkable
class Retriever(Protocol):
    """Finds the chunks that answer a query."""

    def retrieve(self, query: str, *, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> list[Result]:
        """Results, best first."""


def check_filter(_instance: Any, _attribute: Any, value: Any) -> None:
    """attrs validator: a config's ``filter`` must parse (errors at config time, not at the first query)."""
    parse_filter(value)


def embed_query(embedder: Any, store: Any, query: str) -> Any:
    """The query's vector; DimensionMismatchError when it does not fit the store's vectors."""
    vector = embedder.embed_query(query)
    store_dim = store.dimension()
    if store_dim is not None and store_dim != len(vector):
        raise DimensionMismatchError(store_dim=store_dim, embedder_dim=len(vector))
    return vector
