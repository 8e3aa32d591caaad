"""The ``sentence-transformers`` embedder: a local SentenceTransformer model.

Queries and documents may get different prompts: ``query_prompt`` /
``document_prompt`` give the text, ``query_prompt_name`` /
``document_prompt_name`` pick one of the model's own prompts, and with neither
the model's ``"query"`` / ``"document"`` prompts are used when it defines them
(as ``encode_query`` / ``encode_document`` do). The resolved prompts, the model
and the normalisation are all part of ``model_id``, so changing one re-embeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from ragloom.plugin import ConfigError, EmbeddingError
from ragloom_sentence_transformers.blas import DEFAULT_THREADS, limit_numpy_blas
from ragloom_sentence_transformers.loading import import_sentence_transformers, load_model, resolve_model

_optional_positive = attrs.validators.optional(attrs.validators.gt(0))

#: Texts handed to sentence-transformers per call (core's ``embed_in_batches`` slices by ``batch_size``):
#: sentence-transformers sorts one call's texts by length before cutting forward passes of
#: ``config.batch_size``, so larger calls mean less padding — as when it is given a whole corpus.
TEXTS_PER_CALL = 256


@attrs.frozen(kw_only=True)
class SentenceTransformersConfig:
    """A SentenceTransformer model (hub name or local path) and how to call it."""

    model: str = attrs.field(default="all-MiniLM-L6-v2", validator=attrs.validators.min_len(1))
    device: str | None = None
    batch_size: int = attrs.field(default=32, validator=attrs.validators.gt(0))
    normalize: bool = True
    query_prompt: str | None = None
    document_prompt: str | None = None
    query_prompt_name: str | None = None
    document_prompt_name: str | None = None
    max_seq_length: int | None = attrs.field(default=None, validator=_optional_positive)
    blas_threads: int | None = attrs.field(default=DEFAULT_THREADS, validator=_optional_positive)
    """numpy's BLAS threads once a CPU model is loaded (1: none spin on the model's cores; None: left alone)."""
    allow_download: bool = False

    def __attrs_post_init__(self) -> None:
        for kind in ("query", "document"):
            if getattr(self, f"{kind}_prompt") is not None and getattr(self, f"{kind}_prompt_name") is not None:
                raise ValueError(f"give either '{kind}_prompt' or '{kind}_prompt_name', not both")


def _resolve_prompt(model: Any, text: str | None, name: str | None, default_name: str, *, key: str) -> str:
    prompts: dict[str, str] = dict(getattr(model, "prompts", None) or {})
    if text is not None:
        return text
    if name is not None:
        if name not in prompts:
            known = ", ".join(sorted(prompts)) or "none"
            raise ConfigError(f"the model has no prompt named {name!r} @ {key} (its prompts: {known})")
        return prompts[name]
    return prompts.get(default_name) or ""


class SentenceTransformersEmbedder:
    """Embeds with a loaded SentenceTransformer; float32 rows, optionally L2-normalised."""

    def __init__(self, config: SentenceTransformersConfig, *, model: Any, model_name: str):
        self.config = config
        self.model = model
        if config.max_seq_length is not None:
            model.max_seq_length = config.max_seq_length
        self.query_prompt = _resolve_prompt(model, config.query_prompt, config.query_prompt_name, "query", key="query_prompt_name")
        self.document_prompt = _resolve_prompt(
            model, config.document_prompt, config.document_prompt_name, "document", key="document_prompt_name"
        )
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = get_dim()
        if not dim:
            raise ConfigError(f"sentence-transformers model {model_name!r} does not declare its embedding dimension")
        self.dim = int(dim)
        self.batch_size = max(config.batch_size, TEXTS_PER_CALL)
        self.model_name = model_name
        parts = [
            f"sentence-transformers:{config.model}",
            f"normalize={config.normalize}",
            f"query_prompt={self.query_prompt!r}",
            f"document_prompt={self.document_prompt!r}",
        ]
        if config.max_seq_length is not None:
            parts.append(f"max_seq_length={config.max_seq_length}")
        self.model_id = ":".join(parts)

    def _encode(self, texts: Sequence[str], prompt: str, method: str) -> np.ndarray:
        encode = getattr(self.model, method, None) or self.model.encode
        try:
            vectors = encode(
                list(texts),
                prompt=prompt,
                batch_size=self.config.batch_size,
                normalize_embeddings=self.config.normalize,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as exc:  # noqa: BLE001 - torch/tokenizer failures surface as EmbeddingError
            raise EmbeddingError(f"sentence-transformers model {self.model_name!r} failed: {type(exc).__name__}: {exc}") from exc
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, with the document prompt."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._encode(texts, self.document_prompt, "encode_document")

    def embed_query(self, text: str) -> np.ndarray:
        """The query's vector, with the query prompt."""
        return self._encode([text], self.query_prompt, "encode_query")[0]

    def __repr__(self) -> str:
        return f"SentenceTransformersEmbedder(model={self.model_name!r}, dim={self.dim})"


def build_embedder(config: SentenceTransformersConfig, context: Any) -> SentenceTransformersEmbedder:
    """Load the model (local files only unless ``allow_download``) and wrap it."""
    st = import_sentence_transformers()
    name = resolve_model(config.model, context)
    model = load_model(
        st.SentenceTransformer,
        name,
        what="sentence-transformers",
        allow_download=config.allow_download,
        device=config.device,
    )
    limit_numpy_blas(config.blas_threads, model)
    return SentenceTransformersEmbedder(config, model=model, model_name=name)
