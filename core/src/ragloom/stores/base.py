"""The Store contract.

A store keeps chunks with their vectors, per namespace. Writes of a source are
staged under a *generation* number and become visible all at once in
:meth:`Store.commit_source`, which also deletes everything else the source
held (except the documents explicitly kept). So a query never sees a source
missing or doubled, a crashed ingest leaves only invisible staged rows (cleaned
by the next commit or abort of that source), and a store without transactions
can still honour it.

Required methods are in :class:`Store`. Optional capabilities are declared in
``capabilities`` (never guessed):

- ``"keyword_search"``: ``keyword_search(namespace, query, *, top_k, filter)``;
- ``"vectors"``: ``get_vectors(namespace, chunk_ids) -> float32 array``.

A store may also offer ``source_counts(namespace) -> {source: chunks}`` (used
by ``ragloom sources``; without it the counts are left out).

``filter`` arguments are parsed trees from :mod:`ragloom.filters`; a store that
cannot evaluate an operator raises :class:`ragloom.errors.FilterError`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np

from ragloom.filters import FilterNode
from ragloom.types import Chunk, Result

KEYWORD_SEARCH = "keyword_search"
VECTORS = "vectors"


@attrs.frozen(kw_only=True)
class SourceState:
    """What a store holds for one source: its visible generation and document hashes."""

    generation: int = 0
    next_generation: int = 1
    documents: dict[str, str] = attrs.field(factory=dict)

    @property
    def exists(self) -> bool:
        """True when the source has a committed generation."""
        return self.generation > 0


@runtime_checkable
class Store(Protocol):
    """A vector store. Every method is scoped to a namespace."""

    capabilities: frozenset[str]

    def dimension(self) -> int | None:
        """Dimension of the stored vectors, or None while the store is empty."""

    def source_state(self, namespace: str, source: str) -> SourceState:
        """Committed generation and ``{document_id: content_hash}`` of a source."""

    def write(self, namespace: str, generation: int, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Stage chunks (row i of ``vectors`` belongs to chunk i); invisible until committed."""

    def commit_source(self, namespace: str, source: str, generation: int, keep_document_ids: Collection[str] = ()) -> int:
        """Atomically make ``generation`` the source's visible one; return the chunks removed."""

    def abort_source(self, namespace: str, source: str, generation: int) -> None:
        """Drop staged rows of an ingest that failed."""

    def delete(self, namespace: str, filter: FilterNode | None) -> int:
        """Delete visible chunks matching ``filter`` (None: the whole namespace); return the count."""

    def search(self, namespace: str, vector: np.ndarray, *, top_k: int, filter: FilterNode | None = None) -> list[Result]:
        """Top-k visible chunks by cosine similarity, best first."""

    def sources(self, namespace: str) -> list[str]:
        """Sources with a committed generation, sorted."""

    def count(self, namespace: str) -> int:
        """Visible chunks in the namespace."""

    def stats(self, namespace: str) -> dict[str, Any]:
        """Counts and sizes for ``ragloom stats`` (at least ``chunks`` and ``sources``)."""

    def close(self) -> None:
        """Release files and connections."""


def chunk_metadata_for_result(chunk: Chunk) -> dict[str, Any]:
    """The metadata a Result carries for a stored chunk."""
    return dict(chunk.metadata)


def check_write(chunks: Sequence[Chunk], vectors: np.ndarray) -> np.ndarray:
    """The vectors of a ``write`` as float32 ``(len(chunks), dim)``, or StoreError."""
    from ragloom.errors import StoreError

    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != len(chunks):
        raise StoreError(f"write needs one vector per chunk: {len(chunks)} chunks, vectors of shape {array.shape}")
    return array


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """L2-normalised float32 copy (zero rows stay zero)."""
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return array / norms
