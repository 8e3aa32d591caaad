"""The ``openai`` embedder: any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, Ollama, vLLM, LM Studio …).

Texts go out ``batch_size`` per request, up to ``max_concurrency`` requests at
a time; 429/5xx answers and timeouts are retried with backoff honouring
``Retry-After``. Every answer is checked: one vector per input (matched by
``index``), each of dimension ``dim`` — anything else is an EmbeddingError, never
stored garbage. ``model_id`` (model, dimension, prefixes) is part of every
chunk's content hash, so switching models re-embeds.

Without ``api_key``, OpenAI's own endpoint (``api.openai.com``) uses the
``OPENAI_API_KEY`` environment variable, read when the embedder is built: a
missing key is a ConfigError then, not a failure at the first ingest. Other
endpoints (Ollama, vLLM …) get no key unless one is configured, so the OpenAI
key is never sent to another server.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from ragloom.embedders.base import DEFAULT_BATCH_SIZE, batched, check_embeddings
from ragloom.errors import ConfigError, EmbeddingError
from ragloom.httpclient import HTTPOptions, JSONClient
from ragloom.structuring import Secret

if TYPE_CHECKING:  # imported when an embedder is built: ``import ragloom`` stays light
    import httpx

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
OPENAI_HOST = "api.openai.com"

#: Native dimensions of well-known models (``dim`` may be omitted for them).
KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
}


@attrs.frozen(kw_only=True)
class OpenAIEmbedderConfig(HTTPOptions):
    """An OpenAI-compatible embeddings endpoint."""

    model: str = attrs.field(default="text-embedding-3-small", validator=attrs.validators.min_len(1))
    dim: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.gt(0)))
    dimensions: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.gt(0)))
    batch_size: int = attrs.field(default=DEFAULT_BATCH_SIZE, validator=attrs.validators.gt(0))
    max_concurrency: int = attrs.field(default=4, validator=attrs.validators.gt(0))
    query_prefix: str = ""
    document_prefix: str = ""

    def __attrs_post_init__(self) -> None:
        if self.dim is None and self.dimensions is None and self.model not in KNOWN_DIMENSIONS:
            raise ValueError(f"'dim' is required for model {self.model!r} (the dimension of its vectors)")
        if self.dim is not None and self.dimensions is not None and self.dim != self.dimensions:
            raise ValueError(f"'dim' ({self.dim}) and 'dimensions' ({self.dimensions}) disagree")

    @property
    def resolved_dim(self) -> int:
        """The dimension vectors must have."""
        return self.dim or self.dimensions or KNOWN_DIMENSIONS[self.model]


def _api_key(config: OpenAIEmbedderConfig) -> str | None:
    """The configured key; for OpenAI's endpoint without one, ``OPENAI_API_KEY`` (ConfigError when unset)."""
    if config.api_key is not None:
        return config.api_key.get()
    from urllib.parse import urlsplit

    if (urlsplit(config.base_url).hostname or "").lower() != OPENAI_HOST:
        return None
    try:
        return Secret(DEFAULT_API_KEY_ENV).get()
    except ConfigError:
        raise ConfigError(
            f"the openai embedder needs an API key for {config.base_url}: set {DEFAULT_API_KEY_ENV}, "
            'or api_key = { env = "NAME" } in [embedder] (a local OpenAI-compatible server: set base_url)'
        ) from None


class OpenAIEmbedder:
    """Embeddings over HTTP; accepts an injected httpx.Client."""

    def __init__(self, config: OpenAIEmbedderConfig, *, client: httpx.Client | None = None):
        self.config = config
        self.dim = config.resolved_dim
        # the pipeline hands over this many texts per call; they go out in
        # ``max_concurrency`` concurrent requests of ``config.batch_size``
        self.batch_size = config.batch_size * config.max_concurrency
        prefixes = f":q={config.query_prefix!r}:d={config.document_prefix!r}" if config.query_prefix or config.document_prefix else ""
        self.model_id = f"openai:{config.model}:dim={self.dim}{prefixes}"
        self._api_key = _api_key(config)
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else None
        self._http = JSONClient(config, client=client, headers=headers, max_connections=config.max_concurrency)
        self._url = self._http.url("embeddings")

    def _request(self, texts: Sequence[str]) -> np.ndarray:
        c = self.config
        body: dict[str, Any] = {"model": c.model, "input": list(texts), "encoding_format": "float"}
        if c.dimensions is not None:
            body["dimensions"] = c.dimensions
        return self._parse(self._http.post("embeddings", body, error=EmbeddingError), len(texts))

    def _parse(self, answer: Any, count: int) -> np.ndarray:
        where = f"{self._url} (model {self.config.model!r})"
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise EmbeddingError(f"{where}: the answer has no 'data' list: {str(answer)[:200]}")
        if len(data) != count:
            raise EmbeddingError(f"{where}: asked for {count} embeddings, got {len(data)}")
        rows: list[Any] = [None] * count
        for position, item in enumerate(data):
            if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
                raise EmbeddingError(f"{where}: item {position} has no 'embedding' list")
            index = item.get("index", position)
            if not isinstance(index, int) or not 0 <= index < count or rows[index] is not None:
                raise EmbeddingError(f"{where}: item {position} has an invalid index {index!r}")
            rows[index] = item["embedding"]
        return check_embeddings(rows, count=count, dim=self.dim, where=where)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text; batches run concurrently."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        prefix = self.config.document_prefix
        items = [prefix + t for t in texts] if prefix else list(texts)
        batches = list(batched(items, self.config.batch_size))
        if len(batches) == 1 or self.config.max_concurrency == 1:
            return np.concatenate([self._request(b) for b in batches])
        with ThreadPoolExecutor(max_workers=min(self.config.max_concurrency, len(batches))) as pool:
            return np.concatenate(list(pool.map(self._request, batches)))

    def embed_query(self, text: str) -> np.ndarray:
        """The query's vector (with ``query_prefix``)."""
        return self._request([self.config.query_prefix + text])[0]

    def close(self) -> None:
        """Close the HTTP connection pool if this embedder opened it."""
        self._http.close()
