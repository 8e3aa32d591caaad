"""The ``duckdb`` store: one DuckDB file holding chunks, vectors and generations.

Writes follow the Store contract of :mod:`ragloom.stores.base`: ``write``
inserts a batch as invisible rows of a generation in one Arrow bulk insert;
``commit_source`` relabels the kept documents, deletes every other row of the
source and makes the new generation visible in one transaction, so a crash
leaves each source entirely old or entirely new.

Searches: exact search scores the in-memory :class:`~ragloom_duckdb.mirror.VectorMirror`
(loaded from the file on the first search, changed under the same lock as the
transactions that change the file) and reads the top rows back from DuckDB;
``index = "hnsw"`` answers large unfiltered searches through the vss HNSW
index instead (row ids from the index, records and scores from the mirror). Keyword search is BM25 (:class:`ragloom.keyword.BM25Index`)
over the visible chunk texts of the namespace, built from the file on the
first keyword query and kept in step with every commit and delete.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ragloom.errors import DimensionMismatchError, RagloomError, StoreError
from ragloom.filters import FilterNode
from ragloom.keyword import BM25Index
from ragloom.stores.base import KEYWORD_SEARCH, VECTORS, SourceState, check_write, normalize_rows
from ragloom.types import Chunk, Result
from ragloom_duckdb.config import DuckDBStoreConfig
from ragloom_duckdb.database import SCHEMA_VERSION, Database, StagedRows, acquire, release
from ragloom_duckdb.mirror import Payload, VectorMirror
from ragloom_duckdb.schema import CHUNK_COLUMNS, VISIBLE_VIEW_DDL, chunks_ddl, open_schema
from ragloom_duckdb.sqlfilter import filter_sql

__all__ = ["SCHEMA_VERSION", "DuckDBStore"]

_PAYLOAD_COLUMNS = "chunk_id, document_id, text, source, metadata, start_offset, end_offset, tags"


class DuckDBStore:
    """A Store backed by one DuckDB file (or ``:memory:``)."""

    capabilities: frozenset[str] = frozenset({VECTORS, KEYWORD_SEARCH})

    def __init__(self, config: DuckDBStoreConfig | None = None, *, path: str | os.PathLike[str] | None = None):
        self.config = config or DuckDBStoreConfig()
        self.path = os.fspath(path) if path is not None else self.config.path
        self._closed = False
        self._db: Database = acquire(self.path, read_only=self.config.read_only, threads=self.config.threads)
        try:
            with self._db.lock, self._errors("open"):
                if self._db.refs == 1:
                    cursor = self._db.cursor()
                    self._db.dim, has_chunks = open_schema(cursor, self.path, read_only=self.config.read_only)
                    # the hnsw marker exists only in a file that has a chunks table
                    indexed = has_chunks and cursor.execute("SELECT count(*) FROM ragloom_meta WHERE key = 'hnsw'").fetchone()[0]
                    if self.config.index == "hnsw" or indexed:
                        self._db.load_vss()
                    if has_chunks:
                        self._db.next_row_id = int(cursor.execute("SELECT coalesce(max(row_id), -1) + 1 FROM chunks").fetchone()[0])
                        self._ensure_hnsw(cursor)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ plumbing

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        import duckdb

        try:
            yield
        except RagloomError:
            raise
        except duckdb.Error as exc:
            raise StoreError(f"DuckDB store {self.path}: {action} failed: {exc}") from exc

    def _cursor(self) -> Any:
        if self._closed:
            raise StoreError(f"DuckDB store {self.path} is closed")
        return self._db.cursor()

    def _writable(self, action: str) -> None:
        if self.config.read_only:
            raise StoreError(f"DuckDB store {self.path} is open read-only; cannot {action}")

    @contextmanager
    def _transaction(self, cursor: Any) -> Iterator[None]:
        cursor.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
        cursor.execute("COMMIT")

    def _has_chunks(self) -> bool:
        return self._db.dim is not None

    def _ensure_hnsw(self, cursor: Any) -> None:
        if self.config.index != "hnsw" or self._db.hnsw_ready or not self._has_chunks():
            return
        self._db.load_vss()
        cursor.execute(f"SET GLOBAL hnsw_ef_search = {int(self.config.ef_search)}")
        exists = cursor.execute("SELECT count(*) FROM ragloom_meta WHERE key = 'hnsw'").fetchone()[0]
        if not exists and not self.config.read_only:
            with self._transaction(cursor):
                cursor.execute(
                    "CREATE INDEX chunks_hnsw ON chunks USING HNSW (vector) "
                    f"WITH (metric = 'cosine', M = {int(self.config.m)}, ef_construction = {int(self.config.ef_construction)})"
                )
                cursor.execute("INSERT INTO ragloom_meta VALUES ('hnsw', 'chunks_hnsw')")
        self._db.hnsw_ready = True

    def _mirror(self, cursor: Any) -> VectorMirror:
        db = self._db
        if db.mirror is None:
            mirror = VectorMirror(db.dim or 0)
            if db.dim is not None:
                qualified = ", ".join(f"c.{name}" for name in _PAYLOAD_COLUMNS.split(", "))
                table = cursor.execute(
                    f"SELECT c.row_id, c.namespace, s.generation IS NOT NULL AS visible, c.vector, {qualified} FROM chunks c "
                    "LEFT JOIN sources s ON c.namespace = s.namespace AND c.source = s.source AND c.generation = s.generation "
                    "ORDER BY c.row_id"
                ).arrow()
                table = table.read_all() if hasattr(table, "read_all") else table
                if table.num_rows:
                    columns = [table.column(name).to_pylist() for name in _PAYLOAD_COLUMNS.split(", ")]
                    columns[-1] = [tuple(tags or ()) for tags in columns[-1]]
                    mirror.load(
                        table.column("row_id").to_numpy(),
                        table.column("namespace").to_pylist(),
                        table.column("visible").to_numpy(zero_copy_only=False),
                        table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False),
                        list(zip(*columns, strict=True)),
                    )
            db.mirror = mirror
        return db.mirror

    def _keyword_index(self, cursor: Any, namespace: str) -> BM25Index:
        db = self._db
        index = db.keyword.get(namespace)
        if index is None:
            mirror = self._mirror(cursor)
            index = BM25Index(self.config.bm25)
            positions = np.flatnonzero(mirror.allowed(namespace)).tolist()
            if positions:
                index.add(mirror.row_ids[positions].tolist(), [mirror.payloads[p][2] for p in positions])  # type: ignore[index]
            db.keyword[namespace] = index
        return index

    def _apply(self, namespace: str, shown: Sequence[int], dropped: Sequence[int]) -> None:
        """Bring the mirror and the keyword index in step with a committed change."""
        db = self._db
        if db.mirror is not None:
            if dropped:
                db.mirror.drop(np.asarray(dropped, dtype=np.int64))
            if shown:
                db.mirror.show(np.asarray(shown, dtype=np.int64))
        index = db.keyword.get(namespace)
        if index is not None:
            if dropped:
                index.remove(dropped)
            if shown:
                mirror = db.mirror
                assert mirror is not None  # a keyword index implies a loaded mirror
                positions = mirror.positions(np.asarray(shown, dtype=np.int64)).tolist()
                index.add(mirror.row_ids[positions].tolist(), [mirror.payloads[p][2] for p in positions])  # type: ignore[index]

    def _check_query(self, vector: np.ndarray) -> np.ndarray:
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self._db.dim is not None and query.shape[0] != self._db.dim:
            raise DimensionMismatchError(store_dim=self._db.dim, embedder_dim=query.shape[0], where=f"DuckDB store {self.path}")
        return normalize_rows(query)

    @staticmethod
    def _result(payload: Payload | tuple[Any, ...], score: float) -> Result:
        chunk_id, document_id, text, source, metadata, start, end, tags = payload
        return Result(
            chunk_id=chunk_id,
            document_id=document_id,
            text=text,
            score=float(score),
            source=source,
            metadata=json.loads(metadata) if metadata else {},
            span=(int(start), int(end)),
            tags=tuple(tags or ()),
        )

    def _filtered_row_ids(self, cursor: Any, namespace: str, filter: FilterNode) -> np.ndarray:
        where, params = filter_sql(filter)
        rows = cursor.execute(
            f"SELECT row_id FROM visible_chunks WHERE namespace = ? AND {where}", [namespace, *params]
        ).fetchnumpy()
        return np.asarray(rows["row_id"], dtype=np.int64)

    # ------------------------------------------------------------------ contract: reads

    def dimension(self) -> int | None:
        """Dimension of the stored vectors, or None while the store is empty."""
        return self._db.dim

    def source_state(self, namespace: str, source: str) -> SourceState:
        """Committed generation and ``{document_id: content_hash}`` of a source."""
        with self._db.lock, self._errors(f"reading source {source}"):
            cursor = self._cursor()
            row = cursor.execute(
                "SELECT generation, max_generation FROM sources WHERE namespace = ? AND source = ?", [namespace, source]
            ).fetchone() if self._sources_table(cursor) else None
            generation, highest = (int(row[0]), int(row[1])) if row else (0, 0)
            documents: dict[str, str] = {}
            if self._has_chunks() and generation:  # nothing committed, nothing visible: no scan
                documents = dict(
                    cursor.execute(
                        "SELECT document_id, any_value(content_hash) FROM visible_chunks "
                        "WHERE namespace = ? AND source = ? GROUP BY document_id",
                        [namespace, source],
                    ).fetchall()
                )
            return SourceState(generation=generation, next_generation=max(generation, highest) + 1, documents=documents)

    def _sources_table(self, cursor: Any) -> bool:
        # a read-only store opened on a fresh file has no tables at all
        return not self.config.read_only or self._has_chunks()

    def search(self, namespace: str, vector: np.ndarray, *, top_k: int, filter: FilterNode | None = None) -> list[Result]:
        """Top-k visible chunks by cosine similarity, best first."""
        with self._db.lock, self._errors("search"):
            if not self._has_chunks():
                return []
            query = self._check_query(vector)
            if top_k <= 0:
                return []
            cursor = self._cursor()
            if self.config.index == "hnsw" and filter is None:
                results = self._search_hnsw(cursor, namespace, query, top_k)
                if results is not None:
                    return results
            mirror = self._mirror(cursor)
            allowed = mirror.allowed(namespace)
            if filter is not None:
                matching = np.zeros(mirror.size, dtype=bool)
                matching[mirror.positions(self._filtered_row_ids(cursor, namespace, filter))] = True
                allowed &= matching
            positions, scores = mirror.top_k(query, allowed, top_k)
            payloads = mirror.payloads
            return [self._result(payloads[p], s) for p, s in zip(positions.tolist(), scores.tolist(), strict=True)]  # type: ignore[arg-type]

    def plan(self, namespace: str, filter: FilterNode | None = None) -> str:
        """Which path ``search`` takes for this namespace and filter: ``"hnsw"`` or ``"exact"``."""
        if self.config.index != "hnsw" or filter is not None:
            return "exact"
        total = self.count(namespace)
        return "hnsw" if total and total >= self.config.hnsw_min_chunks else "exact"

    def _search_hnsw(self, cursor: Any, namespace: str, query: np.ndarray, top_k: int) -> list[Result] | None:
        """HNSW answer, or None when exact search should answer (small namespace, too few hits)."""
        mirror = self._mirror(cursor)
        allowed = mirror.allowed(namespace)
        total = int(allowed.sum())
        if total < self.config.hnsw_min_chunks or total == 0:
            return None
        self._ensure_hnsw(cursor)
        dim = self._db.dim
        limit = top_k
        rows_in_table = mirror.size - mirror.dead
        # the query vector becomes a session variable, cast from one text parameter: a constant for
        # the optimizer (so the HNSW scan is planned) at ~1.5 ms, where a list parameter costs ~80 ms
        cursor.execute(f"SET VARIABLE ragloom_query = ?::FLOAT[{int(dim or 0)}]", ["[" + ",".join(map(repr, query.tolist())) + "]"])
        literal = "getvariable('ragloom_query')"
        for _ in range(6):
            ids = cursor.execute(
                f"SELECT row_id FROM chunks ORDER BY array_cosine_distance(vector, {literal}) LIMIT {int(limit)}"
            ).fetchnumpy()["row_id"]
            positions = mirror.positions(np.asarray(ids, dtype=np.int64))
            positions = positions[allowed[positions]]
            if len(positions) >= min(top_k, total):
                scores = mirror.vectors[positions] @ query
                order = np.lexsort((positions, -scores))[:top_k]
                payloads = mirror.payloads
                return [self._result(payloads[p], s) for p, s in zip(positions[order].tolist(), scores[order].tolist(), strict=True)]  # type: ignore[arg-type]
            if limit >= rows_in_table:
                break
            limit *= 4
        return None

    def keyword_search(self, namespace: str, query: str, *, top_k: int, filter: FilterNode | None = None) -> list[Result]:
        """Top-k visible chunks by BM25, best first (only chunks containing a query term)."""
        with self._db.lock, self._errors("keyword search"):
            if top_k <= 0 or not self._has_chunks():
                return []
            cursor = self._cursor()
            index = self._keyword_index(cursor, namespace)
            keys = self._filtered_row_ids(cursor, namespace, filter).tolist() if filter is not None else None
            hits = index.search(query, top_k=top_k, keys=keys)
            if not hits:
                return []
            mirror = self._mirror(cursor)
            positions = mirror.positions(np.asarray([k for k, _ in hits], dtype=np.int64)).tolist()
            return [self._result(mirror.payloads[p], s) for p, (_, s) in zip(positions, hits, strict=True)]  # type: ignore[arg-type]

    def keyword_ceiling(self, namespace: str, query: str) -> float:
        """The query's best reachable BM25 score in the namespace (see ``BM25Index.ceiling``)."""
        with self._db.lock, self._errors("keyword search"):
            if not self._has_chunks():
                return 0.0
            return self._keyword_index(self._cursor(), namespace).ceiling(query)

    def get_vectors(self, namespace: str, chunk_ids: Sequence[str]) -> np.ndarray:
        """Stored (normalised) vectors of visible chunks, in the order asked."""
        with self._db.lock, self._errors("reading vectors"):
            wanted = list(chunk_ids)
            if not self._has_chunks():
                if wanted:
                    raise StoreError(f"unknown chunk id(s): {', '.join(wanted[:5])}")
                return np.zeros((0, 0), dtype=np.float32)
            table = self._cursor().execute(
                "SELECT chunk_id, vector FROM visible_chunks WHERE namespace = ? AND list_contains(?::VARCHAR[], chunk_id)",
                [namespace, wanted],
            ).arrow()
            table = table.read_all() if hasattr(table, "read_all") else table
            ids = table.column("chunk_id").to_pylist()
            flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
            vectors = np.asarray(flat, dtype=np.float32).reshape(len(ids), self._db.dim or 0)
            position = {cid: i for i, cid in enumerate(ids)}
            missing = [cid for cid in wanted if cid not in position]
            if missing:
                raise StoreError(f"unknown chunk id(s) in namespace {namespace!r}: {', '.join(missing[:5])}")
            return vectors[[position[cid] for cid in wanted]].copy()

    def sources(self, namespace: str) -> list[str]:
        """Sources with visible chunks, sorted."""
        with self._db.lock, self._errors("listing sources"):
            if not self._has_chunks():
                return []
            rows = self._cursor().execute(
                "SELECT DISTINCT source FROM visible_chunks WHERE namespace = ? ORDER BY source", [namespace]
            ).fetchall()
            return [r[0] for r in rows]

    def _count(self, cursor: Any, namespace: str) -> int:
        return int(cursor.execute("SELECT count(*) FROM visible_chunks WHERE namespace = ?", [namespace]).fetchone()[0])

    def count(self, namespace: str) -> int:
        """Visible chunks in the namespace."""
        with self._db.lock, self._errors("counting"):
            return self._count(self._cursor(), namespace) if self._has_chunks() else 0

    def stats(self, namespace: str) -> dict[str, Any]:
        """Chunks, sources and documents of the namespace; dimension, index and file size."""
        with self._db.lock, self._errors("stats"):
            chunks = sources = documents = 0
            if self._has_chunks():
                chunks, sources, documents = self._cursor().execute(
                    "SELECT count(*), count(DISTINCT source), count(DISTINCT document_id) FROM visible_chunks WHERE namespace = ?",
                    [namespace],
                ).fetchone()
            size = 0
            if self.path != ":memory:":
                for name in (self.path, self.path + ".wal"):
                    if os.path.exists(name):
                        size += os.path.getsize(name)
            return {
                "chunks": int(chunks),
                "sources": int(sources),
                "documents": int(documents),
                "dimension": self._db.dim,
                "path": self.path,
                "file_size": size,
                "index": self.config.index,
                "schema_version": SCHEMA_VERSION,
            }

    # ------------------------------------------------------------------ contract: writes

    def write(self, namespace: str, generation: int, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Stage chunks (one Arrow bulk insert); invisible until ``commit_source``."""
        import pyarrow as pa

        array = check_write(chunks, vectors)
        if not chunks:
            return
        self._writable("write")
        dim = int(array.shape[1])
        with self._db.lock, self._errors(f"writing {len(chunks)} chunks of {chunks[0].source}"):
            db = self._db
            if db.dim is not None and db.dim != dim:
                raise DimensionMismatchError(store_dim=db.dim, embedder_dim=dim, where=f"DuckDB store {self.path}")
            cursor = self._cursor()
            normalized = normalize_rows(array)
            metadata_json = [json.dumps(c.metadata, ensure_ascii=False, default=str) for c in chunks]
            row_ids = np.arange(db.next_row_id, db.next_row_id + len(chunks), dtype=np.int64)
            batch = pa.table(
                {
                    "row_id": row_ids,
                    "namespace": pa.array([namespace] * len(chunks), type=pa.string()),
                    "source": [c.source for c in chunks],
                    "document_id": [c.document_id for c in chunks],
                    "chunk_id": [c.id for c in chunks],
                    "chunk_index": pa.array([c.index for c in chunks], type=pa.int32()),
                    "generation": pa.array(np.full(len(chunks), generation, dtype=np.int64)),
                    "text": [c.text for c in chunks],
                    "start_offset": pa.array([c.start for c in chunks], type=pa.int64()),
                    "end_offset": pa.array([c.end for c in chunks], type=pa.int64()),
                    "metadata": metadata_json,
                    "tags": pa.array([list(c.tags) for c in chunks], type=pa.list_(pa.string())),
                    "content_hash": [c.content_hash for c in chunks],
                    "vector": pa.FixedSizeListArray.from_arrays(pa.array(normalized.reshape(-1)), dim),
                }
            )
            staged = {c.source for c in chunks}
            with self._db.single_threaded(cursor), self._transaction(cursor):
                if db.dim is None:
                    cursor.execute(chunks_ddl(dim))
                    cursor.execute(VISIBLE_VIEW_DDL)
                    cursor.execute("INSERT INTO ragloom_meta VALUES ('dimension', ?)", [str(dim)])
                cursor.register("ragloom_batch", batch)
                try:
                    cursor.execute(f"INSERT INTO chunks SELECT {', '.join(CHUNK_COLUMNS)} FROM ragloom_batch")
                finally:
                    cursor.unregister("ragloom_batch")
                created = [source for source in sorted(staged) if self._bump_generation(cursor, namespace, source, generation)]
            batch_sources = np.asarray([c.source for c in chunks], dtype=object)
            for source in staged:
                record = db.staged.setdefault((namespace, source, generation), StagedRows(created_source=source in created))
                record.row_ids.append(row_ids if len(staged) == 1 else row_ids[batch_sources == source])
            if db.dim is None:
                db.dim = dim
                self._ensure_hnsw(cursor)
            db.next_row_id += len(chunks)
            if db.mirror is not None:
                payloads = [
                    (c.id, c.document_id, c.text, c.source, metadata, c.start, c.end, tuple(c.tags))
                    for c, metadata in zip(chunks, metadata_json, strict=True)
                ]
                db.mirror.append(row_ids, namespace, False, normalized, payloads)

    def _bump_generation(self, cursor: Any, namespace: str, source: str, generation: int, *, commit: bool = False) -> bool:
        """Record ``generation`` in the source's row; True when the row had to be created."""
        assignment = "generation = ?, " if commit else ""
        params = [generation] if commit else []
        updated = cursor.execute(
            f"UPDATE sources SET {assignment}max_generation = greatest(max_generation, ?) "
            "WHERE namespace = ? AND source = ? RETURNING 1",
            [*params, generation, namespace, source],
        ).fetchall()
        if updated:
            return False
        cursor.execute("INSERT INTO sources VALUES (?, ?, ?, ?)", [namespace, source, generation if commit else 0, generation])
        return True

    def commit_source(self, namespace: str, source: str, generation: int, keep_document_ids: Collection[str] = ()) -> int:
        """Atomically make ``generation`` visible, keep the listed documents, delete the rest of the source."""
        self._writable("commit")
        keep = sorted(set(keep_document_ids))
        with self._db.lock, self._errors(f"committing {source}"):
            cursor = self._cursor()
            dropped: list[int] = []
            shown: list[int] = []
            removed = 0
            db = self._db
            written = db.staged.pop((namespace, source, generation), None)
            with self._transaction(cursor):
                if self._has_chunks() and written is not None and written.created_source:
                    # the source's first rows came from these writes: nothing older to relabel or delete
                    shown = np.concatenate(written.row_ids).tolist()
                elif self._has_chunks():
                    row = cursor.execute(
                        "SELECT generation FROM sources WHERE namespace = ? AND source = ?", [namespace, source]
                    ).fetchone()
                    current = int(row[0]) if row else 0
                    # the file, not this process's record: rows of this generation may have been
                    # written through an earlier opening of the file
                    shown = [
                        r[0]
                        for r in cursor.execute(
                            "SELECT row_id FROM chunks WHERE namespace = ? AND source = ? AND generation = ?",
                            [namespace, source, generation],
                        ).fetchall()
                    ]
                    if keep and current:
                        cursor.execute(
                            "UPDATE chunks SET generation = ? WHERE namespace = ? AND source = ? AND generation = ? "
                            "AND list_contains(?::VARCHAR[], document_id)",
                            [generation, namespace, source, current, keep],
                        )
                    gone = cursor.execute(
                        "DELETE FROM chunks WHERE namespace = ? AND source = ? AND generation <> ? RETURNING row_id, generation",
                        [namespace, source, generation],
                    ).fetchall()
                    dropped = [r[0] for r in gone]
                    removed = sum(1 for r in gone if current and r[1] == current)
                self._bump_generation(cursor, namespace, source, generation, commit=True)
            self._apply(namespace, shown, dropped)
            return removed

    def abort_source(self, namespace: str, source: str, generation: int) -> None:
        """Drop the staged rows of a failed ingest."""
        if self.config.read_only or not self._has_chunks():
            return
        with self._db.lock, self._errors(f"aborting {source}"):
            self._db.staged.pop((namespace, source, generation), None)
            cursor = self._cursor()
            gone = cursor.execute(
                "DELETE FROM chunks WHERE namespace = ? AND source = ? AND generation = ? AND generation <> coalesce("
                "(SELECT s.generation FROM sources s WHERE s.namespace = ? AND s.source = ?), 0) RETURNING row_id",
                [namespace, source, generation, namespace, source],
            ).fetchall()
            self._apply(namespace, (), [r[0] for r in gone])

    def delete(self, namespace: str, filter: FilterNode | None) -> int:
        """Delete visible chunks matching ``filter`` (None: the whole namespace); return the count."""
        self._writable("delete")
        if not self._has_chunks():
            return 0
        where, params = filter_sql(filter)
        with self._db.lock, self._errors("delete"):
            cursor = self._cursor()
            with self._transaction(cursor):
                gone = cursor.execute(
                    f"DELETE FROM chunks WHERE row_id IN (SELECT row_id FROM visible_chunks WHERE namespace = ? AND {where}) "
                    "RETURNING row_id, source",
                    [namespace, *params],
                ).fetchall()
                emptied = sorted({r[1] for r in gone})
                if emptied:
                    cursor.execute(
                        "UPDATE sources SET generation = 0 WHERE namespace = ? AND list_contains(?::VARCHAR[], source) "
                        "AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.namespace = sources.namespace "
                        "AND c.source = sources.source AND c.generation = sources.generation)",
                        [namespace, emptied],
                    )
            self._apply(namespace, (), [r[0] for r in gone])
            return len(gone)

    def checkpoint(self) -> None:
        """Write the WAL into the database file."""
        if self.config.read_only or self.path == ":memory:":
            return
        with self._db.lock, self._errors("checkpoint"):
            cursor = self._cursor()
            with self._db.single_threaded(cursor):
                cursor.execute("CHECKPOINT")

    def close(self) -> None:
        """Release the file (the last store object of the process closes it)."""
        if self._closed:
            return
        self._closed = True
        release(self._db)

    def __enter__(self) -> DuckDBStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DuckDBStore(path={self.path!r}, index={self.config.index!r}, read_only={self.config.read_only})"
