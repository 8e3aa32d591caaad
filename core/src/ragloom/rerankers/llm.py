"""The ``llm`` reranker: an LLM scores each candidate 0-10, in batches.

Each batch of ``batch_size`` passages (default 10) goes into one prompt; the
model answers a JSON object ``{"1": 7, "2": 0, ...}`` (also understood: a JSON
list of numbers, or lines like ``1: 7``).

Failures degrade per candidate: a passage the model does not score (a partial or
garbled answer, or a batch whose call failed) keeps its retrieval score,
min-max normalised over the candidates onto the reranker's 0-10 scale so the two
kinds sort together, and is marked ``metadata["rerank_fallback"] = True``. Each
such failure logs a warning and calls ``on_error`` (a Python callback) with a
:class:`RerankError`. When no candidate at all gets a score, the retrieval order
is kept (:func:`~ragloom.rerankers.base.rerank_or_fallback`). With
``strict = true`` any failure raises the RerankError instead. The error carries
``raw_response`` (what the model answered, when it did) and is chained to the cause.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Sequence

import attrs

from ragloom.errors import RerankError
from ragloom.rerankers.base import rerank_or_fallback, reranked, resolve_top_n
from ragloom.types import Result

logger = logging.getLogger(__name__)

DEFAULT_PROMPT = (
    "Rate how well each passage answers the query, from 0 (irrelevant) to 10 (answers it fully).\n"
    'Answer only with a JSON object mapping each passage number to its score, e.g. {"1": 7, "2": 0}.\n\n'
    "Query: {query}\n\nPassages:\n{passages}"
)

_LINE_SCORE = re.compile(r"^\s*(?:passage\s*)?\[?(\d+)\]?\s*[:=\-)]\s*(-?\d+(?:\.\d+)?)", re.IGNORECASE | re.MULTILINE)


def _check_prompt(_instance: object, attribute: attrs.Attribute, value: str) -> None:  # type: ignore[type-arg]
    for field in ("{query}", "{passages}"):
        if field not in value:
            raise ValueError(f"'{attribute.name}' must contain {field}")


@attrs.frozen(kw_only=True)
class LLMRerankerConfig:
    """Score candidates with the pipeline's LLM, ``batch_size`` passages per call."""

    top_n: int = attrs.field(default=5, validator=attrs.validators.gt(0))
    batch_size: int = attrs.field(default=10, validator=attrs.validators.gt(0))
    max_chars: int = attrs.field(default=1500, validator=attrs.validators.gt(0))
    strict: bool = False
    prompt: str = attrs.field(default=DEFAULT_PROMPT, validator=_check_prompt)


def parse_scores(answer: str, count: int) -> list[float] | None:
    """Scores for passages 1..count from an answer, or None when it holds no complete ranking."""
    found = parse_partial_scores(answer, count)
    if len(found) < count:
        return None
    return [found[i] for i in range(1, count + 1)]


def parse_partial_scores(answer: str, count: int) -> dict[int, float]:
    """``{passage number: score in 0..10}`` for the passages 1..count an answer scores (maybe none)."""
    found: dict[int, float] = {}
    start, end = answer.find("{"), answer.rfind("}")
    decoded: object = None
    if start != -1 and end > start:
        try:
            decoded = json.loads(answer[start : end + 1])
        except ValueError:
            decoded = None
    if decoded is None:
        start, end = answer.find("["), answer.rfind("]")
        if start != -1 and end > start:
            try:
                decoded = json.loads(answer[start : end + 1])
            except ValueError:
                decoded = None
    if isinstance(decoded, dict):
        for key, value in decoded.items():
            if isinstance(value, dict):
                value = value.get("score")
            number = re.sub(r"\D", "", str(key))
            if number and isinstance(value, (int, float)) and not isinstance(value, bool):
                found[int(number)] = float(value)
    elif isinstance(decoded, list) and len(decoded) == count and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in decoded
    ):
        found = {i: float(v) for i, v in enumerate(decoded, start=1)}
    else:
        for match in _LINE_SCORE.finditer(answer):
            found.setdefault(int(match.group(1)), float(match.group(2)))
    return {i: min(10.0, max(0.0, found[i])) for i in range(1, count + 1) if i in found and math.isfinite(found[i])}


def normalised_retrieval(results: Sequence[Result], high: float = 10.0) -> list[float]:
    """Retrieval scores min-max normalised over the candidates onto ``0..high`` (all ``high / 2`` when equal)."""
    scores = [float(r.metadata.get("retrieval_score", r.score)) for r in results]
    finite = [v for v in scores if math.isfinite(v)]
    low, top = (min(finite), max(finite)) if finite else (0.0, 0.0)
    if top == low:
        return [high / 2] * len(scores)
    return [high * (v - low) / (top - low) if math.isfinite(v) else 0.0 for v in scores]


class LLMReranker:
    """Reorders candidates by an LLM's 0-10 relevance scores."""

    def __init__(
        self,
        config: LLMRerankerConfig,
        *,
        generate: Callable[[str], str],
        on_error: Callable[[RerankError], None] | None = None,
    ):
        self.config = config
        self.top_n = config.top_n
        self.generate = generate
        self.on_error = on_error

    def _prompt(self, query: str, batch: Sequence[Result]) -> str:
        limit = self.config.max_chars
        passages = "\n\n".join(f"[{i}] {' '.join(r.text.split())[:limit]}" for i, r in enumerate(batch, start=1))
        values = {"query": query, "passages": passages}
        return re.sub(r"\{(query|passages)\}", lambda m: values[m.group(1)], self.config.prompt)

    def _score_batch(self, query: str, batch: Sequence[Result]) -> tuple[dict[int, float], RerankError | None]:
        """``({position in batch: score}, the failure or None)``: what the model scored of one batch."""
        raw: str | None = None
        try:
            raw = self.generate(self._prompt(query, batch))
            if not isinstance(raw, str):
                raise TypeError(f"the LLM returned {type(raw).__name__}, not text")
        except Exception as exc:  # noqa: BLE001 - any LLM failure becomes a RerankError
            error = RerankError(f"llm reranker: the LLM call failed: {type(exc).__name__}: {exc}", raw_response=None)
            error.__cause__ = exc
            return {}, error
        found = parse_partial_scores(raw, len(batch))
        if len(found) == len(batch):
            return {i - 1: v for i, v in found.items()}, None
        missing = len(batch) - len(found)
        error = RerankError(
            f"llm reranker: the answer scores {len(found)} of {len(batch)} passages ({missing} keep their retrieval score): {raw[:200]!r}",
            raw_response=raw,
        )
        return {i - 1: v for i, v in found.items()}, error

    def _report(self, error: RerankError) -> None:
        if self.config.strict:
            raise error
        logger.warning("%s", error)
        if self.on_error is not None:
            self.on_error(error)

    def rerank(self, query: str, results: Sequence[Result], top_n: int | None = None) -> list[Result]:
        """The best ``top_n`` by LLM score (ties: retrieval order); unscored candidates keep their normalised retrieval score."""
        n = resolve_top_n(self.top_n, top_n)
        results = list(results)
        if not results or n == 0:
            return []
        size = self.config.batch_size

        def score() -> list[Result]:
            scores: dict[int, float] = {}
            errors: list[RerankError] = []
            for start in range(0, len(results), size):
                found, error = self._score_batch(query, results[start : start + size])
                scores.update({start + i: v for i, v in found.items()})
                if error is not None:
                    errors.append(error)
            if not scores:  # nothing scored: the retrieval order, through the shared fallback
                raise errors[0] if len(errors) == 1 else RerankError(
                    f"llm reranker: no candidate was scored ({len(errors)} batches failed; first: {errors[0]})",
                    raw_response=errors[0].raw_response,
                )
            for error in errors:
                self._report(error)
            fallback = normalised_retrieval(results)
            final = [scores.get(i, fallback[i]) for i in range(len(results))]
            order = sorted(range(len(results)), key=lambda i: (-final[i], i))
            return [
                reranked(results[i], final[i]) if i in scores else reranked(results[i], final[i], rerank_fallback=True)
                for i in order[:n]
            ]

        return rerank_or_fallback(
            score, results, n, strict=self.config.strict, on_error=self.on_error, logger=logger, what="llm reranker"
        )
