"""The ``memory`` store: numpy matrix, exact cosine search, BM25 keyword search, nothing persisted."""

from __future__ import annotations

import threading
from collections.abc import Collection, Hashable, Iterator, Sequence
from typing import Any

import attrs
import numpy as np

from ragloom.errors import DimensionMismatchError, StoreError
from ragloom.filters import FilterNode, compile_predicate
from ragloom.keyword import BM25Config, BM25Index
from ragloom.stores.base import (
    CHUNKS,
    KEYWORD_SEARCH,
    VECTORS,
    Candidates,
    HybridCandidates,
    SourceState,
    check_write,
    normalize_rows,
)
from ragloom.types import DOCUMENT_SOURCE_TYPE, Chunk, Result, chunk_result


@attrs.frozen(kw_only=True)
class MemoryStoreConfig:
    """Options of the memory store."""

    initial_capacity: int = attrs.field(default=1024, validator=attrs.validators.gt(0))
    bm25: BM25Config = attrs.field(factory=BM25Config)


class MemoryStore:
    """Exact cosine search over an in-process float32 matrix.

    Rows are appended; deleted rows are masked and compacted when they are the
    majority. Only rows whose ``source_type`` is ``"document"`` are read back
    (searched, counted, listed as sources); rows of other kinds are stored beside
    them and never returned. One lock guards writes and the snapshot a search takes, so a
    commit is atomic for readers. A BM25 index per namespace holds exactly the
    visible chunks: rows enter it when committed and leave it when deleted.
    """

    capabilities: frozenset[str] = frozenset({VECTORS, KEYWORD_SEARCH, CHUNKS})

    def __init__(self, config: MemoryStoreConfig | None = None):
        self.config = config or MemoryStoreConfig()
        self._lock = threading.RLock()
        self._dim: int | None = None
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._size = 0
        self._chunks: list[Chunk | None] = []
        self._namespace_codes: dict[str, int] = {}
        self._row_namespace = np.zeros(0, dtype=np.int32)
        self._row_generation = np.zeros(0, dtype=np.int64)
        self._visible = np.zeros(0, dtype=bool)
        self._document = np.zeros(0, dtype=bool)  # source_type == "document"
        self._alive = np.zeros(0, dtype=bool)
        self._committed: dict[tuple[str, str], int] = {}
        self._max_generation: dict[tuple[str, str], int] = {}
        self._rows_by_source: dict[tuple[str, str], set[int]] = {}
        self._keyword: dict[str, BM25Index] = {}
        self._analyzer: Any = None

    # ------------------------------------------------------------------ helpers

    def _code(self, namespace: str) -> int:
        code = self._namespace_codes.get(namespace)
        if code is None:
            code = self._namespace_codes[namespace] = len(self._namespace_codes)
        return code

    def _grow(self, extra: int, dim: int) -> None:
        needed = self._size + extra
        capacity = self._vectors.shape[0]
        if needed <= capacity and self._vectors.shape[1] == dim:
            return
        new_capacity = max(needed, capacity * 2, self.config.initial_capacity)
        vectors = np.zeros((new_capacity, dim), dtype=np.float32)
        if self._size:
            vectors[: self._size] = self._vectors[: self._size]
        self._vectors = vectors
        for name, dtype in (("_row_namespace", np.int32), ("_row_generation", np.int64), ("_visible", bool), ("_document", bool), ("_alive", bool)):
            old = getattr(self, name)
            new = np.zeros(new_capacity, dtype=dtype)
            new[: self._size] = old[: self._size]
            setattr(self, name, new)

    def _check_dim(self, dim: int) -> None:
        if self._dim is not None and dim != self._dim:
            raise DimensionMismatchError(store_dim=self._dim, embedder_dim=dim, where="memory store")

    def _keyword_index(self, namespace: str) -> BM25Index:
        index = self._keyword.get(namespace)
        if index is None:
            if self._analyzer is None:
                from ragloom.analysis import Analyzer

                self._analyzer = Analyzer(self.config.bm25.analyzer)
            index = self._keyword[namespace] = BM25Index(self.config.bm25, analyzer=self._analyzer)
        return index

    def _kill(self, rows: Collection[int]) -> None:
        by_namespace: dict[str, list[int]] = {}
        for row in rows:
            chunk = self._chunks[row]
            if chunk is None:
                continue
            self._alive[row] = False
            self._visible[row] = False
            namespace = self._namespace_of(row)
            by_namespace.setdefault(namespace, []).append(row)
            key = (namespace, chunk.source)
            bucket = self._rows_by_source.get(key)
            if bucket is not None:
                bucket.discard(row)
            self._chunks[row] = None
        for namespace, killed in by_namespace.items():
            index = self._keyword.get(namespace)
            if index is not None:
                index.remove(killed)

    def _namespace_of(self, row: int) -> str:
        code = int(self._row_namespace[row])
        for name, value in self._namespace_codes.items():
            if value == code:
                return name
        raise StoreError("corrupt memory store: unknown namespace code")  # pragma: no cover

    def _maybe_compact(self) -> None:
        alive = int(self._alive[: self._size].sum())
        if self._size < 4096 or alive * 2 > self._size:
            return
        keep = np.flatnonzero(self._alive[: self._size])
        renumber: dict[Hashable, Hashable] = {int(old): new for new, old in enumerate(keep.tolist())}
        for index in self._keyword.values():
            index.remap(renumber)
        self._vectors[: len(keep)] = self._vectors[keep]
        for name in ("_row_namespace", "_row_generation", "_visible", "_document", "_alive"):
            array = getattr(self, name)
            array[: len(keep)] = array[keep]
            array[len(keep) : self._size] = 0
        self._chunks = [self._chunks[i] for i in keep]
        self._size = len(keep)
        self._rows_by_source = {}
        for row, chunk in enumerate(self._chunks):
            assert chunk is not None
            self._rows_by_source.setdefault((self._namespace_of(row), chunk.source), set()).add(row)

    # ------------------------------------------------------------------ contract

    def dimension(self) -> int | None:
        """Dimension of the stored vectors, or None while empty."""
        return self._dim

    def _state(self, namespace: str, source: str) -> SourceState:
        key = (namespace, source)
        generation = self._committed.get(key, 0)
        documents: dict[str, str] = {}
        metadata: dict[str, str] = {}
        for row in self._rows_by_source.get(key, ()):
            chunk = self._chunks[row]
            if chunk is not None and self._visible[row] and self._document[row]:
                documents[chunk.document_id] = chunk.content_hash
                metadata[chunk.document_id] = chunk.metadata_hash
        return SourceState(
            generation=generation if documents or key in self._committed else 0,
            next_generation=max(generation, self._max_generation.get(key, 0)) + 1,
            documents=documents,
            metadata=metadata,
        )

    def source_states(self, namespace: str, sources: Sequence[str]) -> dict[str, SourceState]:
        """Committed state of each source (a source never stored maps to ``SourceState()``)."""
        with self._lock:
            return {source: self._state(namespace, source) for source in sources}

    def session(self, namespace: str) -> MemorySession:
        """A write session; commits are visible at once (nothing to make durable)."""
        return MemorySession(self, namespace)

    def _reserve(self, namespace: str, source: str, state: SourceState) -> int:
        """A generation above every one handed out for the source."""
        with self._lock:
            key = (namespace, source)
            generation = max(state.next_generation, self._committed.get(key, 0) + 1, self._max_generation.get(key, 0) + 1)
            self._max_generation[key] = generation
            return generation

    def _append(self, namespace: str, source: str, generation: int, chunks: Sequence[Chunk], normalized: np.ndarray) -> None:
        """Add invisible rows of a staged generation (``normalized``: unit float32 rows)."""
        self._check_dim(normalized.shape[1])
        self._dim = normalized.shape[1]
        self._grow(len(chunks), normalized.shape[1])
        start = self._size
        end = start + len(chunks)
        self._vectors[start:end] = normalized
        self._row_namespace[start:end] = self._code(namespace)
        self._row_generation[start:end] = generation
        self._visible[start:end] = False
        self._document[start:end] = [c.source_type == DOCUMENT_SOURCE_TYPE for c in chunks]
        self._alive[start:end] = True
        self._chunks.extend(chunks)
        self._size = end
        self._rows_by_source.setdefault((namespace, source), set()).update(range(start, end))

    def _stage_write(self, namespace: str, source: str, generation: int, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        array = check_write(chunks, vectors)
        if not chunks:
            return
        with self._lock:
            self._append(namespace, source, generation, chunks, normalize_rows(array))

    def _stage_update(self, namespace: str, source: str, generation: int, chunks: Sequence[Chunk]) -> None:
        """Stage copies of visible rows with new chunk records (same vectors)."""
        if not chunks:
            return
        with self._lock:
            by_id = {}
            for row in self._rows_by_source.get((namespace, source), ()):
                chunk = self._chunks[row]
                if chunk is not None and self._visible[row]:
                    by_id[chunk.id] = row
            missing = [c.id for c in chunks if c.id not in by_id]
            if missing:
                raise StoreError(f"update_metadata of {source}: no stored chunk {', '.join(missing[:5])}")
            rows = [by_id[c.id] for c in chunks]
            self._append(namespace, source, generation, chunks, self._vectors[rows].copy())

    def _commit(self, namespace: str, source: str, generation: int, keep: set[str], carried: set[str]) -> int:
        """Make ``generation`` visible, keep the listed documents, delete the rest of the source.

        Rows of ``carried`` documents (re-staged with new metadata) are dropped without counting as removed.
        """
        with self._lock:
            key = (namespace, source)
            doomed = []
            shown: list[int] = []
            removed = 0
            for row in list(self._rows_by_source.get(key, ())):
                chunk = self._chunks[row]
                if chunk is None:
                    continue
                if self._row_generation[row] == generation:
                    if not self._visible[row]:
                        shown.append(row)
                    self._visible[row] = True
                elif self._visible[row] and chunk.document_id in keep:
                    self._row_generation[row] = generation
                else:
                    removed += int(self._visible[row] and chunk.document_id not in carried)
                    doomed.append(row)
            self._kill(doomed)
            shown = [row for row in shown if self._document[row]]
            if shown:
                shown.sort()
                self._keyword_index(namespace).add(shown, [self._chunks[r].text for r in shown])  # type: ignore[union-attr]
            self._committed[key] = generation
            self._max_generation[key] = max(generation, self._max_generation.get(key, 0))
            self._maybe_compact()
            return removed

    def _abort(self, namespace: str, source: str, generation: int) -> None:
        """Drop the staged rows of a generation."""
        with self._lock:
            rows = [
                row
                for row in self._rows_by_source.get((namespace, source), ())
                if self._row_generation[row] == generation and not self._visible[row]
            ]
            self._kill(rows)

    def _matching_rows(self, namespace: str, filter: FilterNode | None) -> np.ndarray:
        code = self._namespace_codes.get(namespace)
        if code is None:
            return np.zeros(0, dtype=np.int64)
        size = self._size
        rows = np.flatnonzero(self._visible[:size] & self._document[:size] & (self._row_namespace[:size] == code))
        if filter is None or len(rows) == 0:
            return rows
        predicate = compile_predicate(filter)
        chunks = self._chunks
        keep = [row for row in rows.tolist() if predicate(chunks[row].metadata, chunks[row].source, chunks[row].document_id, chunks[row].tags)]  # type: ignore[union-attr]
        return np.asarray(keep, dtype=np.int64)

    def delete(self, namespace: str, filter: FilterNode | None) -> int:
        """Delete visible chunks that match ``filter``."""
        with self._lock:
            rows = self._matching_rows(namespace, filter)
            sources = {(namespace, self._chunks[row].source) for row in rows.tolist()}  # type: ignore[union-attr]
            self._kill(rows.tolist())
            for key in sources:
                if not any(self._visible[r] for r in self._rows_by_source.get(key, ())):
                    self._committed.pop(key, None)
            self._maybe_compact()
            return len(rows)

    def _nearest(self, rows: np.ndarray, vector: np.ndarray, top_k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cosines)`` of the exact top-k among ``rows``, best first (ties: row order); call with the lock held."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self._dim is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        self._check_dim(query.shape[0])
        if len(rows) == 0 or top_k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        # one matrix-vector product over every row, then pick the candidates:
        # avoids copying the candidate rows of the matrix on each query
        scores = self._vectors[: self._size] @ normalize_rows(query)
        if len(rows) < self._size:
            scores = scores[rows]
        k = min(top_k, len(scores))
        best = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        order = best[np.lexsort((best, -scores[best]))]
        return rows[order], scores[order]

    def search(self, namespace: str, vector: np.ndarray, *, top_k: int, filter: FilterNode | None = None) -> list[Result]:
        """Exact cosine top-k."""
        with self._lock:
            rows, scores = self._nearest(self._matching_rows(namespace, filter), vector, top_k)
            # only the top-k rows become Python objects (not every candidate row)
            chunks = self._chunks
            hits = [(chunks[row], score) for row, score in zip(rows.tolist(), scores.tolist(), strict=True)]
        return [chunk_result(chunk, score) for chunk, score in hits]  # type: ignore[arg-type]

    def keyword_search(self, namespace: str, query: str, *, top_k: int, filter: FilterNode | None = None) -> list[Result]:
        """Top-k visible chunks by BM25, best first (only chunks with a query term)."""
        with self._lock:
            index = self._keyword.get(namespace)
            if index is None or top_k <= 0:
                return []
            keys = self._matching_rows(namespace, filter).tolist() if filter is not None else None
            hits = index.search(query, top_k=top_k, keys=keys)
            return [chunk_result(self._chunks[row], score) for row, score in hits]  # type: ignore[index, arg-type, call-overload]

    def hybrid_candidates(
        self, namespace: str, vector: np.ndarray | None, query: str | None, *, top_k: int, filter: FilterNode | None = None
    ) -> HybridCandidates:
        """Both members of a hybrid query under one lock, as arrays (keys: row numbers); no ``Result`` built.

        ``vector`` None: no vector candidates; ``query`` None: no keyword
        candidates and a ceiling of 0.
        """
        with self._lock:
            chunks = self._chunks
            allowed = self._matching_rows(namespace, filter)
            nearest = Candidates.empty()
            if vector is not None:
                rows, cosines = self._nearest(allowed, vector, top_k)
                nearest = Candidates(rows, cosines.astype(np.float64), [chunks[r] for r in rows.tolist()])
            keyword, ceiling = Candidates.empty(), 0.0
            index = self._keyword.get(namespace)
            if query is not None and index is not None:
                keys = allowed.tolist() if filter is not None else None
                found, scores, ceiling = index.ranked(query, top_k=top_k, keys=keys, ceiling=True)
                keyword = Candidates(np.asarray(found, dtype=np.int64), scores, [chunks[r] for r in found])  # type: ignore[index, call-overload]
        return HybridCandidates(nearest, keyword, ceiling, chunk_result)  # type: ignore[arg-type]

    def keyword_ceiling(self, namespace: str, query: str) -> float:
        """The query's best reachable BM25 score in the namespace (see :meth:`BM25Index.ceiling`)."""
        with self._lock:
            index = self._keyword.get(namespace)
            return index.ceiling(query) if index is not None else 0.0

    def get_vectors(self, namespace: str, chunk_ids: Sequence[str]) -> np.ndarray:
        """Stored (normalised) vectors of visible chunks, in the order asked."""
        with self._lock:
            rows = self._matching_rows(namespace, None)
            position = {self._chunks[r].id: r for r in rows.tolist()}  # type: ignore[union-attr]
            missing = [cid for cid in chunk_ids if cid not in position]
            if missing:
                raise StoreError(f"unknown chunk id(s): {', '.join(missing[:5])}")
            return self._vectors[[position[cid] for cid in chunk_ids]].copy()

    def chunks(self, namespace: str, filter: FilterNode | None = None) -> list[Chunk]:
        """Visible chunks in insertion order (optionally filtered)."""
        with self._lock:
            return [self._chunks[r] for r in self._matching_rows(namespace, filter).tolist()]  # type: ignore[misc]

    def iter_chunks(self, namespace: str, *, batch_size: int = 1000) -> Iterator[list[Chunk]]:
        """Visible chunks in insertion order, in lists of at most ``batch_size`` (a snapshot taken at the first batch)."""
        snapshot = self.chunks(namespace)
        for start in range(0, len(snapshot), batch_size):
            yield snapshot[start : start + batch_size]

    def sources(self, namespace: str) -> list[str]:
        """Sources with visible chunks, sorted."""
        with self._lock:
            return sorted(
                source
                for (ns, source), rows in self._rows_by_source.items()
                if ns == namespace and any(self._visible[r] and self._document[r] for r in rows)
            )

    def source_counts(self, namespace: str) -> dict[str, int]:
        """Visible chunks per source, sorted by source."""
        with self._lock:
            counts: dict[str, int] = {}
            for row in self._matching_rows(namespace, None).tolist():
                source = self._chunks[row].source  # type: ignore[union-attr]
                counts[source] = counts.get(source, 0) + 1
            return dict(sorted(counts.items()))

    def count(self, namespace: str) -> int:
        """Visible chunks in the namespace."""
        with self._lock:
            return len(self._matching_rows(namespace, None))

    def stats(self, namespace: str) -> dict[str, Any]:
        """Chunk, source and document counts."""
        with self._lock:
            rows = self._matching_rows(namespace, None).tolist()
            return {
                "chunks": len(rows),
                "sources": len({self._chunks[r].source for r in rows}),  # type: ignore[union-attr]
                "documents": len({self._chunks[r].document_id for r in rows}),  # type: ignore[union-attr]
                "dimension": self._dim,
            }

    def close(self) -> None:
        """Nothing to release."""




class MemoryStage:
    """A staged generation of one source in the memory store."""

    def __init__(self, session: MemorySession, source: str, generation: int, state: SourceState):
        self.source = source
        self.generation = generation
        self.state = state
        self._session = session
        self._keep: set[str] = set()
        self._carried: set[str] = set()
        self._done = False

    def _check(self, action: str) -> None:
        if self._done:
            raise StoreError(f"cannot {action}: the stage of {self.source} (generation {self.generation}) is already closed")

    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Stage chunks; they stay invisible until :meth:`commit`."""
        self._check("write")
        _check_sources(self.source, chunks)
        store = self._session.store
        store._stage_write(self._session.namespace, self.source, self.generation, chunks, vectors)

    def keep(self, document_ids: Collection[str]) -> None:
        """Documents whose stored chunks stay in the new generation."""
        self._check("keep documents")
        self._keep.update(document_ids)

    def update_metadata(self, chunks: Sequence[Chunk]) -> None:
        """Carry stored chunks (and their vectors) into the new generation with new metadata."""
        self._check("update metadata")
        _check_sources(self.source, chunks)
        self._session.store._stage_update(self._session.namespace, self.source, self.generation, chunks)
        self._carried.update(c.document_id for c in chunks)

    def commit(self) -> int:
        """Make the new generation visible now; return the chunks removed."""
        self._check("commit")
        self._done = True
        self._session._open.pop(id(self), None)
        return self._session.store._commit(self._session.namespace, self.source, self.generation, self._keep, self._carried)

    def abort(self) -> None:
        """Drop the staged rows (a closed stage ignores it)."""
        if self._done:
            return
        self._done = True
        self._session._open.pop(id(self), None)
        self._session.store._abort(self._session.namespace, self.source, self.generation)


class MemorySession:
    """Write session of the memory store: commits are visible at once; flush has nothing to do."""

    def __init__(self, store: MemoryStore, namespace: str):
        self.store = store
        self.namespace = namespace
        self._open: dict[int, MemoryStage] = {}
        self._closed = False

    def stage(self, source: str, state: SourceState | None = None) -> MemoryStage:
        """Start a new generation of ``source``."""
        if self._closed:
            raise StoreError("the write session is closed")
        if state is None:
            state = self.store.source_states(self.namespace, [source])[source]
        stage = MemoryStage(self, source, self.store._reserve(self.namespace, source, state), state)
        self._open[id(stage)] = stage
        return stage

    def flush(self) -> None:
        """Nothing to make durable."""
        if self._closed:
            raise StoreError("the write session is closed")

    def close(self) -> None:
        """Abort the stages not committed."""
        if self._closed:
            return
        self._closed = True
        for stage in list(self._open.values()):
            stage.abort()

    def __enter__(self) -> MemorySession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_sources(source: str, chunks: Sequence[Chunk]) -> None:
    stray = next((c.source for c in chunks if c.source != source), None)
    if stray is not None:
        raise StoreError(f"a chunk of {stray!r} was staged for the source {source!r}")
