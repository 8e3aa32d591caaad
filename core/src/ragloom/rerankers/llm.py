"""The ``llm`` reranker: an LLM scores each candidate 0-10, in batches.

Each batch of ``batch_size`` passages goes into one prompt; the model answers a
JSON object ``{"1": 7, "2": 0, ...}`` (also understood: a JSON list of numbers,
or lines like ``1: 7``). Every passage of a batch must get a score. When a call
fails or an answer holds no usable ranking, the candidates keep their
retrieval order, a warning is logged and ``on_error`` (a Python callback) gets
the :class:`RerankError`; with ``strict = true`` that error is raised instead.
The error carries ``raw_response`` (what the model answered, when it did) and
is chained to the cause.
"""

from __future__ import annotations

import json
import logging
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
    if not all(i in found for i in range(1, count + 1)):
        return None
    return [min(10.0, max(0.0, found[i])) for i in range(1, count + 1)]


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

    def _score_batch(self, query: str, batch: Sequence[Result]) -> list[float]:
        raw: str | None = None
        try:
            raw = self.generate(self._prompt(query, batch))
            if not isinstance(raw, str):
                raise TypeError(f"the LLM returned {type(raw).__name__}, not text")
        except Exception as exc:  # noqa: BLE001 - any LLM failure becomes a RerankError
            raise RerankError(f"llm reranker: the LLM call failed: {type(exc).__name__}: {exc}", raw_response=None) from exc
        scores = parse_scores(raw, len(batch))
        if scores is None:
            raise RerankError(
                f"llm reranker: the answer holds no score for each of the {len(batch)} passages: {raw[:200]!r}",
                raw_response=raw,
            )
        return scores

    def rerank(self, query: str, results: Sequence[Result], top_n: int | None = None) -> list[Result]:
        """The best ``top_n`` by LLM score (ties: retrieval order); retrieval order on failure."""
        n = resolve_top_n(self.top_n, top_n)
        results = list(results)
        if not results or n == 0:
            return []
        size = self.config.batch_size

        def score() -> list[Result]:
            scores: list[float] = []
            for start in range(0, len(results), size):
                scores.extend(self._score_batch(query, results[start : start + size]))
            order = sorted(range(len(results)), key=lambda i: (-scores[i], i))
            return [reranked(results[i], scores[i]) for i in order[:n]]

        return rerank_or_fallback(
            score, results, n, strict=self.config.strict, on_error=self.on_error, logger=logger, what="llm reranker"
        )
