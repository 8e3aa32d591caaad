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


def reranked(result: Result, score: float, **extra_metadata: object) -> Result:
    """``result`` with the reranker's ``score``; the retrieval score kept in ``metadata["retrieval_score"]``."""
    retrieval = result.metadata.get("retrieval_score", result.score)
    return result.with_score(score, retrieval_score=retrieval, **extra_metadata)


def resolve_top_n(configured: int, top_n: int | None) -> int:
    """The per-call ``top_n`` when given, else the configured one."""
    return configured if top_n is None else max(0, int(top_n))
