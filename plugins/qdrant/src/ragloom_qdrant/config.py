"""Options of the ``qdrant`` store."""

from __future__ import annotations

import re

import attrs

from ragloom.plugin import BM25Config, Secret

_COLLECTION = re.compile(r"^[A-Za-z0-9_-]{1,200}$")


def _check_collection(_instance: object, _attribute: object, value: str) -> None:
    if not _COLLECTION.match(value):
        raise ValueError(f"collection must be 1-200 letters, digits, '_' or '-', got {value!r}")


@attrs.frozen(kw_only=True)
class QdrantStoreConfig:
    """``[store]`` options of ``type = "qdrant"``.

    With ``url`` the store talks to a Qdrant server; the API key is read from
    the environment variable ``api_key`` names (default ``QDRANT_API_KEY``; a
    server without authentication needs the variable unset). Without ``url``
    it runs qdrant-client's embedded local mode in ``path`` (relative to the
    config file's folder; ``":memory:"`` keeps nothing), one process at a time.
    One ``collection`` holds every namespace (a ``ns`` payload field with a
    payload index); a second one, ``<collection>_sources``, holds each source's
    committed generation. Vectors use cosine distance (local mode: the dot
    product, equal for the unit vectors the store writes) and the embedder's
    dimension (fixed when the first chunks are written).

    ``vectors = false`` stops the store from declaring the ``vectors``
    capability (``get_vectors``): retrievers that need stored vectors (``mmr``)
    then re-embed the candidates' texts instead, as for a store that cannot
    return them. ``bm25`` configures the keyword index ragloom keeps of the
    chunks for the ``bm25`` and ``hybrid`` retrievers (Qdrant has no BM25 of
    its own); in local mode it is saved in ``<path>.keyword/``.
    """

    url: str | None = None
    api_key: Secret = attrs.field(factory=lambda: Secret("QDRANT_API_KEY"))
    path: str = attrs.field(default=".ragloom/qdrant", validator=attrs.validators.min_len(1))
    collection: str = attrs.field(default="ragloom", validator=_check_collection)
    timeout: float = attrs.field(default=10.0, validator=attrs.validators.gt(0))
    prefer_grpc: bool = False
    batch_size: int = attrs.field(default=256, validator=attrs.validators.gt(0))
    vectors: bool = True
    bm25: BM25Config = attrs.field(factory=BM25Config)
