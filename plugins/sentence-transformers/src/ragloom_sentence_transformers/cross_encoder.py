"""The ``cross-encoder`` reranker: a local CrossEncoder scores (query, passage) pairs.

The model's score becomes the result score; the retrieval score is kept in
``metadata["retrieval_score"]``. Equal scores keep retrieval order. When the
model fails, the retrieval order is kept (``metadata["rerank_fallback"] = True``)
and a warning logged, through the shared fallback helper; ``strict = true``
raises the :class:`RerankError` instead.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from ragloom.plugin import RerankError, Result, rerank_or_fallback, reranked, resolve_top_n
from ragloom_sentence_transformers.blas import DEFAULT_THREADS, limit_numpy_blas
from ragloom_sentence_transformers.loading import import_sentence_transformers, load_model, resolve_model

logger = logging.getLogger(__name__)


@attrs.frozen(kw_only=True)
class CrossEncoderConfig:
    """A CrossEncoder model (hub name or local path), scored ``batch_size`` pairs at a time."""

    model: str = attrs.field(default="cross-encoder/ms-marco-MiniLM-L6-v2", validator=attrs.validators.min_len(1))
    top_n: int = attrs.field(default=5, validator=attrs.validators.gt(0))
    batch_size: int = attrs.field(default=32, validator=attrs.validators.gt(0))
    device: str | None = None
    max_length: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.gt(0)))
    blas_threads: int | None = attrs.field(default=DEFAULT_THREADS, validator=attrs.validators.optional(attrs.validators.gt(0)))
    """numpy's BLAS threads once a CPU model is loaded (1: none spin on the model's cores; None: left alone)."""
    allow_download: bool = False
    strict: bool = False


class CrossEncoderReranker:
    """Reorders results by a cross-encoder's relevance scores."""

    def __init__(self, config: CrossEncoderConfig, *, model: Any, model_name: str):
        self.config = config
        self.model = model
        self.model_name = model_name
        self.top_n = config.top_n

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """One relevance score per text (higher is more relevant)."""
        pairs = [(query, text) for text in texts]
        try:
            raw = self.model.predict(pairs, batch_size=self.config.batch_size, show_progress_bar=False, convert_to_numpy=True)
        except Exception as exc:  # noqa: BLE001 - torch/tokenizer failures surface as RerankError
            raise RerankError(f"cross-encoder {self.model_name!r} failed: {type(exc).__name__}: {exc}") from exc
        scores = np.asarray(raw, dtype=np.float64)
        if scores.ndim == 2 and scores.shape[1] == 1:
            scores = scores[:, 0]
        if scores.shape != (len(texts),):
            raise RerankError(
                f"cross-encoder {self.model_name!r} returned scores of shape {scores.shape}; "
                f"a reranker needs one score per passage ({len(texts)}): use a model with one output label"
            )
        return scores

    def rerank(self, query: str, results: Sequence[Result], top_n: int | None = None) -> list[Result]:
        """The ``top_n`` results the model scores highest, best first."""
        n = resolve_top_n(self.top_n, top_n)
        if not results or n == 0:
            return []

        def score() -> list[Result]:
            scores = self.scores(query, [r.text for r in results])
            order = sorted(range(len(results)), key=lambda i: (-scores[i], i))
            return [reranked(results[i], float(scores[i])) for i in order[:n]]

        return rerank_or_fallback(score, results, n, strict=self.config.strict, logger=logger, what=f"cross-encoder {self.model_name!r}")

    def __repr__(self) -> str:
        return f"CrossEncoderReranker(model={self.model_name!r}, top_n={self.top_n})"


def build_cross_encoder(config: CrossEncoderConfig, context: Any) -> CrossEncoderReranker:
    """Load the CrossEncoder (local files only unless ``allow_download``) and wrap it."""
    st = import_sentence_transformers()
    name = resolve_model(config.model, context)
    model = load_model(
        st.CrossEncoder,
        name,
        what="cross-encoder",
        allow_download=config.allow_download,
        device=config.device,
        max_length=config.max_length,
    )
    limit_numpy_blas(config.blas_threads, model)
    return CrossEncoderReranker(config, model=model, model_name=name)
