"""The Retriever contract.

``retrieve(query, *, top_k=None, threshold=None, filter=None)`` returns Results
best first. ``None`` means "use the configured value". A per-call filter is
combined (``$and``) with the filter from config. Scores are higher-is-better;
``threshold`` drops results scoring below it.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ragloom.types import Result


@runtime_checkable
class Retriever(Protocol):
    """Finds the chunks that answer a query."""

    def retrieve(self, query: str, *, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> list[Result]:
        """Results, best first."""
