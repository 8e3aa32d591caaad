"""The Store contract.

A store keeps chunks with their vectors, per namespace. Writes go through a
:class:`WriteSession` (one per ingest call): each source is staged as a new
*generation* through a :class:`SourceStage` and becomes visible all at once
when the stage commits, which also drops everything else the source held
(except the documents explicitly kept or carried with new metadata). A query
never sees a source missing or doubled; a crashed ingest leaves every source
wholly old or wholly new; staged rows of an aborted or crashed stage never
become visible. A session may group many sources into one database
transaction (the store decides); every committed source is durable and
visible at the latest when :meth:`WriteSession.flush` or
:meth:`WriteSession.close` returns.

Required methods are in :class:`Store`. Optional capabilities are declared in
``capabilities`` (never guessed):

- ``"keyword_search"``: ``keyword_search(namespace, query, *, top_k, filter)``;
- ``"vectors"``: ``get_vectors(namespace, chunk_ids) -> float32 array``;
- ``"concurrent_writers"``: many processes may write sessions at once (a
  distributed ingest such as ragloom-ray then writes from its workers).
- ``"chunks"``: ``iter_chunks(namespace, *, batch_size) -> Iterator[list[Chunk]]``,
  the namespace's committed chunks streamed in batches (what the ``bm25`` and
  ``hybrid`` retrievers build their own keyword index from when the store has
  no ``keyword_search``).

A store whose data lives in a file or folder may expose it as ``location``
(a ``Path``); ragloom keeps files of its own beside it (``<location>.keyword/``).

A store may also offer ``source_counts(namespace) -> {source: chunks}`` (used
by ``ragloom sources``; without it the counts are left out), and
``hybrid_candidates(namespace, vector, query, *, top_k, filter) ->
HybridCandidates | None``: both members of a ``hybrid`` query from one
snapshot, as arrays (see :class:`HybridCandidates`; ``None``: "use
``search`` and ``keyword_search``").

``filter`` arguments are parsed trees from :mod:`ragloom.filters`; a store that
cannot evaluate an operator raises :class:`ragloom.errors.FilterError`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np

from ragloom.filters import FilterNode
from ragloom.types import Chunk, Result

KEYWORD_SEARCH = "keyword_search"
VECTORS = "vectors"
CONCURRENT_WRITERS = "concurrent_writers"
CHUNKS = "chunks"


def _frozen_mapping(value: Mapping[str, str] | None) -> Mapping[str, str]:
    return dict(value or {})


@attrs.frozen(kw_only=True)
class SourceState:
    """The committed state of one source, as a store reports it.

    ``generation``: the visible generation (0: nothing committed);
    ``next_generation``: greater than every generation ever staged for the source,
    crashed runs included; ``documents``: ``{document_id: content hash}``
    (text + chunker fingerprint + embedder model id); ``metadata``:
    ``{document_id: metadata hash}`` (document metadata + tags).
    """

    generation: int = 0
    next_generation: int = 1
    documents: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    metadata: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)

    @property
    def exists(self) -> bool:
        """True when the source has a committed generation."""
        return self.generation > 0


@attrs.frozen
class Candidates:
    """One member's ranked candidates as arrays, best first.

    ``keys``: int64 handles, equal for the same chunk in both members of one
    :class:`HybridCandidates` (and meaningless outside it); ``scores``: float64;
    ``payloads``: per candidate, what :attr:`HybridCandidates.result` builds a
    :class:`Result` from.
    """

    keys: np.ndarray
    scores: np.ndarray
    payloads: Sequence[Any]

    @classmethod
    def empty(cls) -> Candidates:
        """No candidates."""
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0), [])


@attrs.frozen
class HybridCandidates:
    """Both members of a hybrid query, taken from one snapshot of the store.

    ``keyword_ceiling``: the query's best reachable BM25 score (0 when the
    keyword side was not asked for); ``result(payload, score)``: a fresh
    :class:`Result` (its ``metadata`` a dict of its own) for one candidate —
    called only for the results the fusion returns.
    """

    vector: Candidates
    keyword: Candidates
    keyword_ceiling: float
    result: Callable[[Any, float], Result]


@runtime_checkable
class SourceStage(Protocol):
    """A new generation of one source, being written (from :meth:`WriteSession.stage`).

    Everything staged stays invisible until :meth:`commit`; :meth:`abort` (or a
    crash) leaves the old generation whole. A stage is used by one thread.
    """

    source: str
    generation: int
    state: SourceState

    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Stage chunks of this source with their vectors.

        :param chunks: chunks whose ``source`` is this stage's source.
        :param vectors: float array of shape ``(len(chunks), dim)``; row ``i`` belongs to chunk ``i``.
        :raises StoreError: on a vector count that does not match the chunks, or a closed stage.
        :raises DimensionMismatchError: when ``dim`` differs from the store's dimension.
        """

    def keep(self, document_ids: Collection[str]) -> None:
        """Carry documents whose stored chunks stay as they are into the new generation.

        :param document_ids: ids of committed documents of this source.
        :raises StoreError: on a closed stage.
        """

    def update_metadata(self, chunks: Sequence[Chunk]) -> None:
        """Carry stored chunks into the new generation with new metadata, nothing re-embedded.

        :param chunks: chunks with the ids and text of committed chunks of this source but
            new ``metadata`` / ``tags`` / ``metadata_hash``; their stored vectors are kept.
        :raises StoreError: on a chunk id the source does not hold, or a closed stage.
        """

    def commit(self) -> int:
        """Make the new generation the source's visible one, atomically.

        Everything else the source held (documents neither written, kept nor
        updated, rows of crashed runs) is dropped. The source is durable and
        visible at the latest when the session's ``flush`` or ``close`` returns.

        :returns: the number of previously visible chunks removed.
        :raises StoreError: on a closed stage or a database failure.
        """

    def abort(self) -> None:
        """Drop this stage's rows; the old generation stays whole. A closed stage ignores it."""


@runtime_checkable
class WriteSession(Protocol):
    """A unit of durability that may group many sources into one database transaction.

    Each source stays atomic on its own: readers (other threads, processes) see
    its old generation or its new one, never a mix, never missing, never
    doubled. A source committed through the session is durable and visible at
    the latest when :meth:`flush` or :meth:`close` returns (a store may make it
    visible earlier). A crash (kill -9) at any point leaves every source wholly
    old or wholly new. Staged rows of an aborted or crashed source never become
    visible. A session is used by one thread.
    """

    def stage(self, source: str, state: SourceState | None = None) -> SourceStage:
        """Start a new generation of ``source``.

        :param source: the source to stage.
        :param state: the committed state the caller already read with
            :meth:`Store.source_states` (saves a lookup); None: the store reads it.
        :returns: the stage; its ``generation`` is at least ``state.next_generation``.
        :raises StoreError: on a closed session or a read-only store.
        """

    def flush(self) -> None:
        """Make every source committed so far durable and visible.

        :raises StoreError: on a database failure (the sources of the failed group stay old).
        """

    def close(self) -> None:
        """Flush, then release; stages not committed are aborted. Closing twice does nothing."""

    def __enter__(self) -> WriteSession:
        """The session itself."""

    def __exit__(self, *exc: object) -> None:
        """On an exception: abort uncommitted stages and flush the committed ones; then close."""


@runtime_checkable
class Store(Protocol):
    """A vector store. Every method is scoped to a namespace."""

    capabilities: frozenset[str]

    def dimension(self) -> int | None:
        """Dimension of the stored vectors, or None while the store is empty."""

    def source_states(self, namespace: str, sources: Sequence[str]) -> dict[str, SourceState]:
        """Committed state of many sources in one round trip.

        :param namespace: the namespace.
        :param sources: the sources to look up (duplicates allowed).
        :returns: ``{source: SourceState}`` for every source asked; a source never
            stored maps to ``SourceState()`` (or one with a higher ``next_generation``).
        :raises StoreError: on a database failure.
        """

    def session(self, namespace: str) -> WriteSession:
        """Open a write session (a context manager) for ``namespace``.

        :raises StoreError: on a read-only or closed store.
        """

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


def check_write(chunks: Sequence[Chunk], vectors: np.ndarray) -> np.ndarray:
    """The vectors of a stage's ``write`` as float32 ``(len(chunks), dim)``, or StoreError."""
    from ragloom.errors import StoreError

    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != len(chunks):
        raise StoreError(f"write needs one vector per chunk: {len(chunks)} chunks, vectors of shape {array.shape}")
    return array


#: The columns :func:`chunks_by_row_id` reads, in this order.
CHUNK_ROW_COLUMNS = (
    "row_id, chunk_id, document_id, chunk_index, text, start_offset, end_offset, source, metadata, tags, content_hash, metadata_hash"
)


def chunks_by_row_id(
    fetch: Callable[[int], Sequence[Sequence[Any]] | None], metadata: Callable[[Any], dict[str, Any]]
) -> Iterator[list[Chunk]]:
    """Keyset pagination for ``iter_chunks`` of an SQL store: ``fetch(last)`` returns the next batch
    of :data:`CHUNK_ROW_COLUMNS` rows with ``row_id > last`` in row order (None or empty: done);
    ``metadata`` turns the stored metadata column into a dict."""
    last = -1
    while True:
        rows = fetch(last)
        if not rows:
            return
        last = rows[-1][0]
        yield [
            Chunk(id=r[1], document_id=r[2], index=r[3], text=r[4], start=r[5], end=r[6], source=r[7],
                  metadata=metadata(r[8]), tags=tuple(r[9] or ()), content_hash=r[10], metadata_hash=r[11])
            for r in rows
        ]  # fmt: skip


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """L2-normalised float32 copy (zero rows stay zero)."""
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return array / norms


@runtime_checkable
class KeywordSearchStore(Store, Protocol):
    """A store declaring the ``keyword_search`` capability."""

    def keyword_search(self, namespace: str, query: str, *, top_k: int, filter: FilterNode | None = None) -> list[Result]:
        """Top-k visible chunks by BM25, best first."""
        ...


@runtime_checkable
class VectorStore(Store, Protocol):
    """A store declaring the ``vectors`` capability."""

    def get_vectors(self, namespace: str, chunk_ids: Sequence[str]) -> np.ndarray:
        """float32 vectors of the given chunks, one row per id, in order."""
        ...


@runtime_checkable
class ChunkStore(Store, Protocol):
    """A store declaring the ``chunks`` capability: its committed chunks can be enumerated."""

    def iter_chunks(self, namespace: str, *, batch_size: int = 1000) -> Iterator[list[Chunk]]:
        """The namespace's visible chunks, streamed in lists of at most ``batch_size`` (order unspecified)."""
        ...


def chunk_store(store: Store) -> ChunkStore | None:
    """``store`` typed as one that enumerates its chunks when it declares the capability, else None."""
    return store if CHUNKS in store.capabilities else None  # type: ignore[return-value]


def keyword_store(store: Store) -> KeywordSearchStore | None:
    """``store`` typed as a keyword-search store when it declares the capability, else None."""
    return store if KEYWORD_SEARCH in store.capabilities else None  # type: ignore[return-value]


def vector_store(store: Store) -> VectorStore | None:
    """``store`` typed as one that returns vectors when it declares the capability, else None."""
    return store if VECTORS in store.capabilities else None  # type: ignore[return-value]
