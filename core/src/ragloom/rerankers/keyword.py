"""The ``keyword`` reranker: how many distinct query terms each candidate contains.

``coverage`` = the fraction of the query's distinct terms (after text analysis:
stop words dropped, stemmed) present in the candidate; the new score is
``weight * coverage + (1 - weight) * retrieval``, where ``retrieval`` is the
retrieval score min-max normalised over the candidates (1.0 when all are equal).
Ties keep retrieval order. Cheap, offline, deterministic. A failure (a bug in a
custom analyzer, say) keeps the retrieval order like every reranker
(:func:`~ragloom.rerankers.base.rerank_or_fallback`); ``strict = true`` raises.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import attrs

from ragloom.analysis import Analyzer, AnalyzerConfig
from ragloom.rerankers.base import rerank_or_fallback, reranked, resolve_top_n
from ragloom.types import Result

logger = logging.getLogger(__name__)


@attrs.frozen(kw_only=True)
class KeywordRerankerConfig:
    """Blend query-term coverage (``weight``) with the normalised retrieval score."""

    top_n: int = attrs.field(default=5, validator=attrs.validators.gt(0))
    weight: float = attrs.field(default=0.5, validator=[attrs.validators.ge(0), attrs.validators.le(1)])
    analyzer: AnalyzerConfig = attrs.field(factory=AnalyzerConfig)
    strict: bool = False


class KeywordReranker:
    """Reorders candidates by query-term coverage blended with the retrieval score."""

    def __init__(self, config: KeywordRerankerConfig | None = None):
        self.config = config or KeywordRerankerConfig()
        self.top_n = self.config.top_n
        self.analyzer = Analyzer(self.config.analyzer)

    def rerank(self, query: str, results: Sequence[Result], top_n: int | None = None) -> list[Result]:
        """The best ``top_n`` candidates by blended score."""
        n = resolve_top_n(self.top_n, top_n)
        if not results or n == 0:
            return []
        return rerank_or_fallback(
            lambda: self._score(query, results, n), results, n, strict=self.config.strict, logger=logger, what="keyword reranker"
        )

    def _score(self, query: str, results: Sequence[Result], n: int) -> list[Result]:
        terms = self.analyzer.terms(query)
        scores = [float(r.metadata.get("retrieval_score", r.score)) for r in results]
        low, high = min(scores), max(scores)
        weight = self.config.weight
        blended = []
        for position, (result, retrieval) in enumerate(zip(results, scores, strict=True)):
            coverage = len(terms & self.analyzer.terms(result.text)) / len(terms) if terms else 0.0
            normalised = 1.0 if high == low else (retrieval - low) / (high - low)
            score = weight * coverage + (1.0 - weight) * normalised
            blended.append((score, position, coverage))
        blended.sort(key=lambda item: (-item[0], item[1]))
        return [reranked(results[pos], score, keyword_coverage=coverage) for score, pos, coverage in blended[:n]]
