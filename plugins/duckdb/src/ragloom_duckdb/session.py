"""Write sessions of the DuckDB store: many small sources per transaction, each atomic.

A :class:`DuckDBSession` buffers the rows its stages write (normalised
vectors, Arrow-ready columns) and the stages committed since the last flush.
:meth:`DuckDBSession.flush` writes all of it in **one** transaction: one Arrow
bulk insert, then per group (never per source) the relabelling of kept
documents, the metadata updates, the deletion of every other row of the
committed sources and the upsert of their ``sources`` rows. A row is visible
exactly when its generation is its source's committed one, so each source
flips from its old generation to its new one when the transaction commits; a
kill -9 before the commit leaves every source of the group old (DuckDB rolls
the unfinished transaction back on replay), after it new.

The session flushes by itself when its buffer holds :data:`SPILL_ROWS` rows,
so memory stays bounded by a large source; rows of a stage still open then
reach the file invisible, and the source's ``max_generation`` is raised in the
same transaction so a later run never reuses their generation.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from ragloom.plugin import Chunk, DimensionMismatchError, SourceState, StoreError, check_write, normalize_rows
from ragloom_duckdb.schema import CHUNK_COLUMNS, VISIBLE_VIEW_DDL, chunks_ddl

if TYPE_CHECKING:
    from ragloom_duckdb.store import DuckDBStore

#: Buffered rows that make a session flush on its own (bounds memory for large sources).
SPILL_ROWS = 8192


@attrs.define
class _Written:
    """One ``write`` call's rows, waiting in the buffer."""

    source: str
    generation: int
    chunks: Sequence[Chunk]
    vectors: np.ndarray


@attrs.define
class _Commit:
    """A committed stage waiting for the flush that applies it."""

    source: str
    generation: int
    current: int
    fresh: bool  # nothing of the source can be in the file: no relabel, no delete
    keep: list[str]
    updates: list[Chunk]


class DuckDBStage:
    """A staged generation of one source (from :meth:`DuckDBSession.stage`)."""

    def __init__(self, session: DuckDBSession, source: str, generation: int, state: SourceState):
        self.source = source
        self.generation = generation
        self.state = state
        self._session = session
        self._keep: set[str] = set()
        self._updates: list[Chunk] = []
        self._done = False

    def _check(self, action: str) -> None:
        if self._done:
            raise StoreError(f"cannot {action}: the stage of {self.source} (generation {self.generation}) is already closed")

    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Buffer chunks with their normalised vectors; invisible until committed and flushed."""
        self._check("write")
        array = check_write(chunks, vectors)
        if not chunks:
            return
        _check_sources(self.source, chunks)
        self._session._buffer_rows(_Written(self.source, self.generation, list(chunks), normalize_rows(array)))

    def keep(self, document_ids: Collection[str]) -> None:
        """Documents whose stored chunks stay in the new generation."""
        self._check("keep documents")
        self._keep.update(document_ids)

    def update_metadata(self, chunks: Sequence[Chunk]) -> None:
        """Stored chunks carried into the new generation with new metadata (vectors untouched)."""
        self._check("update metadata")
        _check_sources(self.source, chunks)
        unknown = sorted({c.document_id for c in chunks if c.document_id not in self.state.documents})
        if unknown:
            raise StoreError(f"update_metadata of {self.source}: no stored document {', '.join(unknown[:5])}")
        self._updates.extend(chunks)

    def commit(self) -> int:
        """Queue the flip to the new generation (applied by the next flush); return the chunks removed."""
        self._check("commit")
        removed = self._session._count_removed(self)
        self._done = True
        self._session._committed(self)
        return removed

    def abort(self) -> None:
        """Drop this stage's rows (a closed stage ignores it)."""
        if self._done:
            return
        self._done = True
        self._session._aborted(self)


class DuckDBSession:
    """A write session of :class:`~ragloom_duckdb.store.DuckDBStore` (one thread)."""

    def __init__(self, store: DuckDBStore, namespace: str):
        self.store = store
        self.namespace = namespace
        self._open: dict[int, DuckDBStage] = {}
        self._buffer: list[_Written] = []
        self._buffered = 0
        self._commits: list[_Commit] = []
        #: (source, generation) of stages with rows already in the file -> their row ids
        self._in_file: dict[tuple[str, int], list[np.ndarray]] = {}
        self._drop: list[tuple[str, int]] = []  # aborted stages whose rows reached the file
        self._abandoned: list[tuple[str, int]] = []  # aborted stages: their generation is never handed out again
        self._pending: set[str] = set()  # sources with work not yet flushed
        self._dim: int | None = None
        self._closed = False

    # ------------------------------------------------------------------ protocol

    def stage(self, source: str, state: SourceState | None = None) -> DuckDBStage:
        """Start a new generation of ``source`` (a source with unflushed work here is flushed first)."""
        if self._closed:
            raise StoreError("the write session is closed")
        self.store._writable(f"write {source}")
        if source in self._pending:
            self.flush()
            state = None  # what the caller read is older than this session's own commit
        if state is None:
            state = self.store.source_states(self.namespace, [source])[source]
        stage = DuckDBStage(self, source, max(state.next_generation, state.generation + 1), state)
        self._open[id(stage)] = stage
        self._pending.add(source)
        return stage

    def flush(self) -> None:
        """Write buffered rows and apply committed stages in one transaction."""
        if self._closed:
            raise StoreError("the write session is closed")
        self._flush()

    def close(self) -> None:
        """Abort uncommitted stages, flush, release."""
        if self._closed:
            return
        try:
            for stage in list(self._open.values()):
                stage.abort()
            self._flush()
        finally:
            self._closed = True

    def __enter__(self) -> DuckDBSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ called by stages

    def _buffer_rows(self, written: _Written) -> None:
        dim = int(written.vectors.shape[1])
        known = self.store._db.dim or self._dim
        if known is not None and dim != known:
            raise DimensionMismatchError(store_dim=known, embedder_dim=dim, where=f"DuckDB store {self.store.path}")
        self._dim = dim
        self._buffer.append(written)
        self._buffered += len(written.chunks)
        if self._buffered >= SPILL_ROWS:
            self._flush()

    def _count_removed(self, stage: DuckDBStage) -> int:
        """Visible chunks of the source neither kept nor carried with new metadata."""
        if not stage.state.exists:
            return 0
        carried = {c.document_id for c in stage._updates}
        survivors = sorted(stage._keep | carried)
        return self.store._count_source_rows(self.namespace, stage.source, stage.state.generation, survivors)

    def _committed(self, stage: DuckDBStage) -> None:
        self._open.pop(id(stage), None)
        state = stage.state
        fresh = not state.exists and state.next_generation <= 1 and (stage.source, stage.generation) not in self._in_file
        self._commits.append(
            _Commit(stage.source, stage.generation, state.generation, fresh, sorted(stage._keep), list(stage._updates))
        )

    def _aborted(self, stage: DuckDBStage) -> None:
        self._open.pop(id(stage), None)
        key = (stage.source, stage.generation)
        kept = [w for w in self._buffer if (w.source, w.generation) != key]
        self._buffered -= sum(len(w.chunks) for w in self._buffer) - sum(len(w.chunks) for w in kept)
        self._buffer = kept
        self._abandoned.append(key)
        if key in self._in_file:
            self._drop.append(key)

    # ------------------------------------------------------------------ the transaction

    def _flush(self) -> None:
        if not (self._buffer or self._commits or self._abandoned):
            return
        buffer, commits, drop, abandoned = self._buffer, self._commits, self._drop, self._abandoned
        # taken before the transaction: a failed group is dropped whole (its sources stay old), never retried
        self._buffer, self._buffered, self._commits, self._drop, self._abandoned = [], 0, [], [], []
        self._pending = {s.source for s in self._open.values()}
        # generations of open stages with rows in the file now, and of aborted stages, are recorded as used
        used = {(w.source, w.generation) for w in buffer} | set(abandoned)
        used -= {(c.source, c.generation) for c in commits}
        self.store._apply_session(self.namespace, buffer, commits, drop, self._in_file, sorted(used))
        for commit in commits:
            self._in_file.pop((commit.source, commit.generation), None)
        for key in drop:
            self._in_file.pop(key, None)


def batch_table(namespace: str, buffer: Sequence[_Written], first_row_id: int) -> tuple[Any, np.ndarray, list[str], np.ndarray]:
    """The Arrow table of buffered rows: ``(table, row_ids, metadata_json, vectors)``."""
    import pyarrow as pa

    chunks = [c for w in buffer for c in w.chunks]
    vectors = np.concatenate([w.vectors for w in buffer]) if len(buffer) > 1 else buffer[0].vectors
    count, dim = len(chunks), int(vectors.shape[1])
    generations = np.concatenate([np.full(len(w.chunks), w.generation, dtype=np.int64) for w in buffer])
    metadata_json = [json.dumps(c.metadata, ensure_ascii=False, default=str) for c in chunks]
    row_ids = np.arange(first_row_id, first_row_id + count, dtype=np.int64)
    table = pa.table(
        {
            "row_id": row_ids,
            "namespace": pa.array([namespace] * count, type=pa.string()),
            "source": [c.source for c in chunks],
            "document_id": [c.document_id for c in chunks],
            "chunk_id": [c.id for c in chunks],
            "chunk_index": pa.array([c.index for c in chunks], type=pa.int32()),
            "generation": pa.array(generations),
            "text": [c.text for c in chunks],
            "start_offset": pa.array([c.start for c in chunks], type=pa.int64()),
            "end_offset": pa.array([c.end for c in chunks], type=pa.int64()),
            "metadata": metadata_json,
            "tags": pa.array([list(c.tags) for c in chunks], type=pa.list_(pa.string())),
            "content_hash": [c.content_hash for c in chunks],
            "metadata_hash": [c.metadata_hash for c in chunks],
            "source_type": [c.source_type for c in chunks],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dim),
        }
    )
    return table, row_ids, metadata_json, vectors


def insert_sql() -> str:
    """INSERT of the registered ``ragloom_batch`` table into ``chunks`` (columns by name)."""
    columns = ", ".join(CHUNK_COLUMNS)
    return f"INSERT INTO chunks ({columns}) SELECT {columns} FROM ragloom_batch"


def create_chunks(cursor: Any, dim: int) -> None:
    """Create the chunks table and the visible view for vectors of ``dim`` floats."""
    cursor.execute(chunks_ddl(dim))
    cursor.execute(VISIBLE_VIEW_DDL)
    cursor.execute("INSERT INTO ragloom_meta VALUES ('dimension', ?)", [str(dim)])


def _check_sources(source: str, chunks: Sequence[Chunk]) -> None:
    stray = next((c.source for c in chunks if c.source != source), None)
    if stray is not None:
        raise StoreError(f"a chunk of {stray!r} was staged for the source {source!r}")
