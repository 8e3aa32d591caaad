"""The Reranker contract.

``rerank(query, results, top_n)`` reorders retrieved candidates and returns at
most ``top_n`` of them, each with the reranker's score as ``score`` and the
retrieval score kept in ``metadata["retrieval_score"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ragloom.types import Result


@runtime_checkable
class Reranker(Protocol):
    """Reorders candidates."""

    top_n: int

    def rerank(self, query: str, results: Sequence[Result], top_n: int | None = None) -> list[Result]:
        """The best ``top_n`` results, best first."""
