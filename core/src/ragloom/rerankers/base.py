"""The Reranker contract.

``rerank(query, results, top_n)`` reorders retrieved candidates and returns at
most ``top_n`` of them, each with the reranker's score as ``score`` and the
retrieval score kept in ``metadata["retrieval_score"]``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from ragloom.errors import RerankError
from ragloom.types import Result


@runtime_checkable
class Reranker(Protocol):
    """Reorders candidates."""

    top_n: int

    def rerank(self, query: str, results: Sequence[Result], top_n: int | None = None) -> list[Result]:
        """The best ``top_n`` results, best first."""
        ...


def reranked(result: Result, score: float, **extra_metadata: object) -> Result:
    """``result`` with the reranker's ``score``; the retrieval score kept in ``metadata["retrieval_score"]``."""
    retrieval = result.metadata.get("retrieval_score", result.score)
    return result.with_score(score, retrieval_score=retrieval, **extra_metadata)


def resolve_top_n(configured: int, top_n: int | None) -> int:
    """The per-call ``top_n`` when given, else the configured one."""
    return configured if top_n is None else max(0, int(top_n))


def rerank_or_fallback(
    score: Callable[[], list[Result]],
    results: Sequence[Result],
    top_n: int,
    *,
    strict: bool,
    on_error: Callable[[RerankError], object] | None,
    logger: logging.Logger,
    what: str,
) -> list[Result]:
    """``score()``, or on a RerankError the retrieval order (the shared fallback policy).

    With ``strict`` the error is raised. Otherwise a warning naming ``what`` is
    logged, ``on_error`` gets the error, and the first ``top_n`` results come
    back with their retrieval score and ``metadata["rerank_fallback"] = True``.
    """
    try:
        return score()
    except RerankError as exc:
        if strict:
            raise
        logger.warning("%s failed, keeping retrieval order: %s", what, exc)
        if on_error is not None:
            on_error(exc)
        return [reranked(r, r.metadata.get("retrieval_score", r.score), rerank_fallback=True) for r in results[:top_n]]
