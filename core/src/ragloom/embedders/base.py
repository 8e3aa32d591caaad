"""The Embedder contract.

Many models treat queries and documents differently (prefixes, ``input_type``),
so an embedder has two methods. Both return float32 arrays; ``model_id`` takes
part in every stored chunk's content hash, so changing the model re-embeds.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ragloom.errors import EmbeddingError

DEFAULT_BATCH_SIZE = 96


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors."""

    model_id: str
    dim: int
    batch_size: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One float32 row per text, shape ``(len(texts), dim)``."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One float32 vector of shape ``(dim,)``."""
        ...


def batched(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """Consecutive slices of at most ``size`` items."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def embed_in_batches(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Embed documents ``embedder.batch_size`` texts per call and check the shape.

    With more texts than one batch holds, the batches are cut from the texts
    sorted by length (rows come back in the given order): a model pads every
    text of a batch to its longest, so mixing a long chunk with short ones
    spends most of the batch on padding.
    """
    size = max(1, int(getattr(embedder, "batch_size", DEFAULT_BATCH_SIZE) or DEFAULT_BATCH_SIZE))
    if len(texts) <= size:
        if not texts:
            return np.zeros((0, embedder.dim), dtype=np.float32)
        return check_vectors(embedder, embedder.embed_documents(texts), len(texts))
    order = np.argsort(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), kind="stable")
    vectors = np.empty((len(texts), embedder.dim), dtype=np.float32)
    for start in range(0, len(texts), size):
        rows = order[start : start + size]
        vectors[rows] = check_vectors(embedder, embedder.embed_documents([texts[i] for i in rows]), len(rows))
    return vectors


def check_vectors(embedder: Embedder, vectors: object, expected_rows: int) -> np.ndarray:
    """A float32 ``(rows, dim)`` array, or EmbeddingError naming what came back."""
    return check_embeddings(vectors, count=expected_rows, dim=embedder.dim, where=f"embedder {embedder.model_id!r}")


def check_embeddings(rows: object, *, count: int, dim: int, where: str) -> np.ndarray:
    """The one check of an embedding answer: ``rows`` as a finite float32 ``(count, dim)`` array.

    Anything else is an EmbeddingError starting with ``where`` (the endpoint or
    the embedder) and naming what came back — never stored garbage.
    """
    try:
        array = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{where}: the vectors hold non-numeric values (not a numeric matrix): {exc}") from exc
    if array.ndim != 2:
        raise EmbeddingError(f"{where}: the answer has shape {array.shape}, expected ({count}, {dim})")
    if array.shape[0] != count:
        raise EmbeddingError(f"{where}: {array.shape[0]} embeddings came back for {count} texts (asked for {count})")
    if array.shape[1] != dim:
        raise EmbeddingError(
            f"{where}: returned vectors of dimension {array.shape[1]}, expected {dim} "
            f"(the embedder is configured for dimension {dim}; set 'dim' to the model's dimension)"
        )
    if not np.isfinite(array).all():
        raise EmbeddingError(f"{where}: returned NaN or infinite values")
    return array
