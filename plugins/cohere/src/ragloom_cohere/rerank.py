"""The ``cohere`` reranker: Cohere's v2 Rerank endpoint.

``POST {base_url}/v2/rerank`` with ``{model, query, documents, top_n,
max_tokens_per_doc}``; the answer's ``results[{index, relevance_score}]``
reorder the candidates. More candidates than ``max_documents_per_call`` are
sent in several calls and the scores merged (relevance scores are absolute, so
they compare across calls). The relevance score becomes the result score; the
retrieval score is kept in ``metadata["retrieval_score"]``.

When a call fails or its answer is unusable: with ``strict = true`` a
``RerankError`` (status code, Cohere's message, raw answer) is raised;
otherwise the retrieval order is kept (``metadata["rerank_fallback"] = True``),
a warning is logged and ``on_error`` (Python only) is called with the error —
the shared policy of every reranker (``ragloom.plugin.rerank_or_fallback``). An
answer scoring fewer candidates than asked keeps the scored ones first; the
rest follow in retrieval order (score: the lowest relevance returned,
``metadata["rerank_fallback"] = True``).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from ragloom.plugin import RerankError, Result, rerank_or_fallback, reranked, resolve_top_n
from ragloom_cohere.api import CohereAPI, ConnectionConfig

if TYPE_CHECKING:  # httpx is imported when a component is built: plugin discovery stays light
    import httpx

logger = logging.getLogger(__name__)

MAX_DOCUMENTS_PER_CALL = 10_000  # Cohere's documented ceiling per request


@attrs.frozen(kw_only=True)
class CohereRerankConfig(ConnectionConfig):
    """Cohere Rerank v2: model, top_n, per-document token cap, documents per call, fallback policy."""

    model: str = attrs.field(default="rerank-v3.5", validator=attrs.validators.min_len(1))
    top_n: int = attrs.field(default=5, validator=attrs.validators.gt(0))
    max_tokens_per_doc: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.gt(0)))
    max_documents_per_call: int = attrs.field(
        default=1000, validator=[attrs.validators.gt(0), attrs.validators.le(MAX_DOCUMENTS_PER_CALL)]
    )
    strict: bool = False
    on_error: Any = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.is_callable()))


def _raw(answer: Any) -> str:
    try:
        return json.dumps(answer)[:2000]
    except (TypeError, ValueError):
        return repr(answer)[:2000]


def parse_rerank_answer(answer: Any, count: int, url: str) -> list[tuple[int, float]]:
    """``(index, relevance_score)`` pairs from a v2 rerank answer, or RerankError with the raw answer."""
    results = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(results, list):
        raise RerankError(f"POST {url}: the answer has no 'results' list", raw_response=_raw(answer))
    pairs: list[tuple[int, float]] = []
    seen: set[int] = set()
    for item in results:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score") if isinstance(item, dict) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count or index in seen:
            raise RerankError(
                f"POST {url}: result {item!r:.100} has no valid 'index' (0..{count - 1}, each once)", raw_response=_raw(answer)
            )
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise RerankError(f"POST {url}: result {item!r:.100} has no numeric 'relevance_score'", raw_response=_raw(answer))
        seen.add(index)
        pairs.append((index, float(score)))
    return pairs


class CohereReranker:
    """Reorders results by Cohere's relevance scores; accepts an injected httpx.Client."""

    def __init__(
        self,
        config: CohereRerankConfig,
        *,
        client: httpx.Client | None = None,
        async_client: httpx.AsyncClient | None = None,
        on_error: Callable[[RerankError], Any] | None = None,
    ):
        self.config = config
        self.top_n = config.top_n
        self.on_error = on_error if on_error is not None else config.on_error
        self.api = CohereAPI(config, client=client, async_client=async_client)

    def scores(self, query: str, texts: Sequence[str], top_n: int) -> list[tuple[int, float]]:
        """The ``top_n`` best ``(index, relevance_score)`` over all texts, best first (RerankError on failure)."""
        c = self.config
        url = self.api.url("rerank")
        merged: list[tuple[int, float]] = []
        for offset in range(0, len(texts), c.max_documents_per_call):
            batch = list(texts[offset : offset + c.max_documents_per_call])
            body: dict[str, Any] = {"model": c.model, "query": query, "documents": batch, "top_n": min(top_n, len(batch))}
            if c.max_tokens_per_doc is not None:
                body["max_tokens_per_doc"] = c.max_tokens_per_doc
            answer = self.api.post("rerank", body, error=RerankError)
            merged.extend((offset + index, score) for index, score in parse_rerank_answer(answer, len(batch), url))
        merged.sort(key=lambda pair: (-pair[1], pair[0]))
        return merged[:top_n]

    def rerank(self, query: str, results: Sequence[Result], top_n: int | None = None) -> list[Result]:
        """The ``top_n`` results Cohere scores highest, best first (or retrieval order on a tolerated failure)."""
        n = resolve_top_n(self.top_n, top_n)
        if not results or n == 0:
            return []

        def score() -> list[Result]:
            pairs = self.scores(query, [r.text for r in results], n)
            out = [reranked(results[i], relevance) for i, relevance in pairs]
            wanted = min(n, len(results))
            if len(out) < wanted:  # a partial answer: the unscored candidates follow in retrieval order
                scored = {i for i, _ in pairs}
                floor = min((relevance for _, relevance in pairs), default=0.0)
                rest = [i for i in range(len(results)) if i not in scored][: wanted - len(out)]
                logger.warning("cohere rerank scored %d of %d candidates asked; the rest keep retrieval order", len(out), wanted)
                out += [reranked(results[i], floor, rerank_fallback=True) for i in rest]
            return out

        return rerank_or_fallback(
            score, results, n, strict=self.config.strict, on_error=self.on_error, logger=logger, what="cohere rerank"
        )

    def close(self) -> None:
        """Close the HTTP connection pool if this reranker opened it."""
        self.api.close()

    async def aclose(self) -> None:
        """Close this event loop's async connection pool (the async path of ragloom.aio)."""
        await self.api.aclose()

    def __repr__(self) -> str:
        return f"CohereReranker(model={self.config.model!r}, base_url={self.config.base_url!r}, top_n={self.top_n})"
