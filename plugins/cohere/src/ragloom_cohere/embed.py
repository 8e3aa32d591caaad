"""The ``cohere`` embedder: Cohere's v2 Embed endpoint.

``POST {base_url}/v2/embed`` with ``{model, texts, input_type,
embedding_types: ["float"]}``: ``input_type`` is ``search_document`` for
ingested chunks and ``search_query`` for queries, which is why embedders
distinguish the two. At most 96 texts go in one call (Cohere's limit); the
answer's ``embeddings.float`` rows are checked (count, dimension, finite).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs
import numpy as np

from ragloom.plugin import ConfigError, EmbeddingError, batched, check_embeddings
from ragloom_cohere.api import CohereAPI, ConnectionConfig

if TYPE_CHECKING:  # httpx is imported when a component is built: plugin discovery stays light
    import httpx

MAX_TEXTS_PER_CALL = 96

#: Output dimension of Cohere's embedding models (embed-v4.0: default of output_dimension).
KNOWN_DIMENSIONS = {
    "embed-v4.0": 1536,
    "embed-english-v3.0": 1024,
    "embed-multilingual-v3.0": 1024,
    "embed-english-light-v3.0": 384,
    "embed-multilingual-light-v3.0": 384,
}

_optional_positive = attrs.validators.optional(attrs.validators.gt(0))


@attrs.frozen(kw_only=True)
class CohereEmbedConfig(ConnectionConfig):
    """Cohere Embed v2: model, texts per call, optional output_dimension / dim / truncate."""

    model: str = attrs.field(default="embed-v4.0", validator=attrs.validators.min_len(1))
    batch_size: int = attrs.field(default=MAX_TEXTS_PER_CALL, validator=[attrs.validators.gt(0), attrs.validators.le(MAX_TEXTS_PER_CALL)])
    output_dimension: int | None = attrs.field(default=None, validator=_optional_positive)
    dim: int | None = attrs.field(default=None, validator=_optional_positive)
    truncate: Literal["NONE", "START", "END"] | None = None

    def __attrs_post_init__(self) -> None:
        if self.dim is not None and self.output_dimension is not None and self.dim != self.output_dimension:
            raise ValueError(f"'dim' ({self.dim}) and 'output_dimension' ({self.output_dimension}) disagree; give one")


def _dimension(config: CohereEmbedConfig) -> int:
    dim = config.output_dimension or config.dim or KNOWN_DIMENSIONS.get(config.model)
    if dim is None:
        known = ", ".join(sorted(KNOWN_DIMENSIONS))
        raise ConfigError(
            f"the dimension of Cohere model {config.model!r} is not known to ragloom-cohere ({known}); "
            "set dim = <its dimension> (or output_dimension) @ $.embedder"
        )
    return dim


class CohereEmbedder:
    """Embeds with Cohere's v2 Embed endpoint; accepts an injected httpx.Client."""

    def __init__(self, config: CohereEmbedConfig, *, client: httpx.Client | None = None):
        self.config = config
        self.dim = _dimension(config)
        self.batch_size = config.batch_size
        parts = [f"cohere:{config.model}"]
        if config.output_dimension is not None:
            parts.append(f"output_dimension={config.output_dimension}")
        if config.truncate is not None:
            parts.append(f"truncate={config.truncate}")
        self.model_id = ":".join(parts)
        self.api = CohereAPI(config, client=client)

    def _embed(self, texts: Sequence[str], input_type: str) -> np.ndarray:
        c = self.config
        body: dict[str, Any] = {"model": c.model, "texts": list(texts), "input_type": input_type, "embedding_types": ["float"]}
        if c.output_dimension is not None:
            body["output_dimension"] = c.output_dimension
        if c.truncate is not None:
            body["truncate"] = c.truncate
        answer = self.api.post("embed", body, error=EmbeddingError)
        url = self.api.url("embed")
        embeddings = answer.get("embeddings") if isinstance(answer, dict) else None
        rows = embeddings.get("float") if isinstance(embeddings, dict) else None
        if not isinstance(rows, list):
            raise EmbeddingError(f"POST {url}: the answer has no 'embeddings.float' list: {str(answer)[:200]}")
        return check_embeddings(rows, count=len(texts), dim=self.dim, where=f"POST {url} (model {c.model!r})")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text (``input_type = search_document``), at most 96 texts per call."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._embed(batch, "search_document") for batch in batched(texts, self.batch_size)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def embed_query(self, text: str) -> np.ndarray:
        """The query's vector (``input_type = search_query``)."""
        return self._embed([text], "search_query")[0]

    def close(self) -> None:
        """Close the HTTP connection pool if this embedder opened it."""
        self.api.close()

    def __repr__(self) -> str:
        return f"CohereEmbedder(model={self.config.model!r}, base_url={self.config.base_url!r}, dim={self.dim})"
