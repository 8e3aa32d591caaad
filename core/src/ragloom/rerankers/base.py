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

_logger = logging.getLogger("ragloom.rerankers")


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


def fallback_results(results: Sequence[Result], top_n: int) -> list[Result]:
    """The first ``top_n`` results in retrieval order, marked ``metadata["rerank_fallback"] = True``."""
    return [reranked(r, r.metadata.get("retrieval_score", r.score), rerank_fallback=True) for r in results[:top_n]]


def rerank_or_fallback(
    score: Callable[[], list[Result]],
    results: Sequence[Result],
    top_n: int,
    *,
    strict: bool = False,
    on_error: Callable[[RerankError], object] | None = None,
    logger: logging.Logger | None = None,
    what: str = "reranker",
) -> list[Result]:
    """``score()``, or the retrieval order when it fails: the one fallback policy of every reranker.

    Any exception (a :class:`RerankError`, or a bug such as a ``KeyError`` in a plugin,
    which becomes a RerankError naming ``what``, chained to it) is handled alike. With
    ``strict`` it is raised. Otherwise a warning naming ``what`` is logged, ``on_error``
    gets the RerankError, and the first ``top_n`` results come back with their
    retrieval score and ``metadata["rerank_fallback"] = True``
    (:func:`fallback_results`). A ``score`` that returns something other than a list
    of Results counts as a failure too.
    """
    try:
        out = score()
        if not isinstance(out, list) or not all(isinstance(r, Result) for r in out):
            raise RerankError(f"{what} returned {type(out).__name__}, not a list of Results")
        return out
    except Exception as exc:  # noqa: BLE001 - the policy: any reranker failure falls back (or raises when strict)
        error = exc if isinstance(exc, RerankError) else RerankError(f"{what} failed: {type(exc).__name__}: {exc}")
        if error is not exc:
            error.__cause__ = exc
        if strict:
            if error is exc:
                raise
            raise error from exc
        (logger or _logger).warning("%s failed, keeping retrieval order: %s", what, error)
        if on_error is not None:
            on_error(error)
        return fallback_results(results, top_n)
