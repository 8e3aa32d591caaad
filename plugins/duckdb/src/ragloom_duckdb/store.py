"""The ``duckdb`` store: one DuckDB file holding chunks, vectors and generations.

Writes follow the Store contract of :mod:`ragloom.stores.base` through a
:class:`~ragloom_duckdb.session.DuckDBSession`: its stages buffer rows, and a
flush writes the rows and the commits of many sources in one transaction (one
Arrow bulk insert; kept documents relabelled, metadata updated, every other row
of the committed sources deleted, their ``sources`` rows upserted — each as one
statement for the whole group), so a crash leaves each source entirely old or
entirely new.

Searches: exact search scores the in-memory :class:`~ragloom_duckdb.mirror.VectorMirror`
(loaded from the file on the first search, changed under the same lock as the
transactions that change the file) and reads the top rows back from DuckDB;
``index = "hnsw"`` answers large unfiltered searches through an in-process HNSW
graph instead (:mod:`ragloom_duckdb.hnsw`: row ids from the graph, records and
scores from the mirror; the graph is never stored in the database file). Keyword search is BM25 (:class:`ragloom.keyword.BM25Index`)
over the visible chunk texts of the namespace, built from the file on the
first keyword query and kept in step with every commit and delete.
"""

from __future__ import annotations

import json
import os
import warnings
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ragloom.plugin import (
    CHUNK_ROW_COLUMNS,
    CHUNKS,
    DOCUMENT_SOURCE_TYPE,
    KEYWORD_SEARCH,
    VECTORS,
    BM25Index,
    Candidates,
    Chunk,
    DimensionMismatchError,
    FilterError,
    FilterNode,
    HybridCandidates,
    RagloomError,
    Result,
    SourceState,
    StoreError,
    chunks_by_row_id,
    normalize_rows,
)
from ragloom_duckdb.config import DuckDBStoreConfig
from ragloom_duckdb.database import SCHEMA_VERSION, Database, acquire, release
from ragloom_duckdb.hnsw import HnswIndex, drop_persisted_index, persisted_index, side_path
from ragloom_duckdb.mirror import Payload, VectorMirror
from ragloom_duckdb.schema import open_schema
from ragloom_duckdb.session import DuckDBSession, _Commit, _Written, batch_table, create_chunks, insert_sql
from ragloom_duckdb.sqlfilter import filter_sql

__all__ = ["SCHEMA_VERSION", "DuckDBStore"]

_PAYLOAD_COLUMNS = "chunk_id, document_id, text, source, metadata, start_offset, end_offset, tags"
#: rows per Arrow batch when the mirror is loaded from the file
_MIRROR_BATCH = 65_536


class DuckDBStore:
    """A Store backed by one DuckDB file (or ``:memory:``)."""

    capabilities: frozenset[str] = frozenset({VECTORS, KEYWORD_SEARCH, CHUNKS})

    def __init__(self, config: DuckDBStoreConfig | None = None, *, path: str | os.PathLike[str] | None = None):
        self.config = config or DuckDBStoreConfig()
        self.path = os.fspath(path) if path is not None else self.config.path
        self._closed = False
        self._db: Database = acquire(
            self.path, read_only=self.config.read_only, threads=self.config.threads, memory_limit=self.config.memory_limit
        )
        # a store dropped without close() releases the file when collected, or at interpreter exit
        self._release = weakref.finalize(self, release, self._db)
        try:
            with self._db.lock, self._errors("open"):
                if self._db.refs == 1:
                    cursor = self._db.cursor()
                    self._db.dim, has_chunks = open_schema(cursor, self.path, read_only=self.config.read_only)
                    if has_chunks and not self.config.read_only and persisted_index(cursor):
                        drop_persisted_index(cursor, self._db.checkpoint)  # an earlier version's index inside the file
                    if has_chunks:
                        self._db.next_row_id = int(cursor.execute("SELECT coalesce(max(row_id), -1) + 1 FROM chunks").fetchone()[0])
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
        except (duckdb.Error, OverflowError) as exc:
            raise StoreError(f"DuckDB store {self.path}: {action} failed: {exc}") from exc
        except (ValueError, TypeError) as exc:
            # Arrow refusing a value of a written row (a chunk index past int32, a namespace that is not text,
            # text with a lone surrogate: Arrow raises Python's own UnicodeEncodeError for it)
            if not (type(exc).__module__.startswith("pyarrow") or isinstance(exc, UnicodeEncodeError)):
                raise
            raise StoreError(f"DuckDB store {self.path}: {action} failed: a value does not fit its column ({exc})") from exc

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

    def _hnsw(self, mirror: VectorMirror) -> HnswIndex:
        """The HNSW index of the file's visible rows (its side file reconciled, or built, on first use)."""
        db = self._db
        if db.hnsw is None:
            config = self.config
            db.hnsw = HnswIndex.open(
                side_path(self.path), mirror, m=config.m, ef_construction=config.ef_construction,
                ef_search=config.ef_search, threads=db.threads,
            )
        return db.hnsw

    def _mirror(self, cursor: Any) -> VectorMirror:
        db = self._db
        if db.mirror is None:
            mirror = VectorMirror(db.dim or 0)
            if db.dim is not None:
                _load_mirror(cursor, mirror)
            db.mirror = mirror
        return db.mirror

    def _keyword_index(self, cursor: Any, namespace: str) -> BM25Index:
        db = self._db
        index = db.keyword.get(namespace)
        if index is None:
            mirror = self._mirror(cursor)
            index = BM25Index(self.config.bm25, ties_by_key=True)
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
            if shown:  # rows of another source_type are never shown, indexed or searched
                shown = db.mirror.show(np.asarray(shown, dtype=np.int64)).tolist()
        if db.hnsw is not None and db.mirror is not None:
            db.hnsw.apply(db.mirror, np.asarray(shown, dtype=np.int64), np.asarray(dropped, dtype=np.int64))
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
        where, params = _checked_filter_sql(filter)
        rows = cursor.execute(
            f"SELECT row_id FROM visible_chunks WHERE namespace = ? AND {where}", [namespace, *params]
        ).fetchnumpy()
        return np.asarray(rows["row_id"], dtype=np.int64)

    # ------------------------------------------------------------------ contract: reads

    def dimension(self) -> int | None:
        """Dimension of the stored vectors, or None while the store is empty."""
        return self._db.dim

    def source_states(self, namespace: str, sources: Sequence[str]) -> dict[str, SourceState]:
        """Committed generation and document hashes of many sources: two queries for all of them."""
        wanted = list(dict.fromkeys(sources))
        states = {source: SourceState() for source in wanted}
        if not wanted:
            return states
        with self._db.lock, self._errors(f"reading the state of {len(wanted)} sources"):
            cursor = self._cursor()
            if not self._sources_table(cursor):
                return states
            # the names travel as a registered Arrow table: a Python list parameter costs DuckDB's
            # client several failed module imports per element (~1 ms per source in bench/ingest_sources)
            rows = self._with_names(
                cursor,
                wanted,
                "SELECT s.source, s.generation, s.max_generation FROM sources s "
                "JOIN ragloom_names w ON s.source = w.name WHERE s.namespace = ?",
                [namespace],
            )
            committed = {source: (int(generation), int(highest)) for source, generation, highest in rows}
            documents: dict[str, dict[str, str]] = {}
            metadata: dict[str, dict[str, str]] = {}
            live = [source for source, (generation, _) in committed.items() if generation]
            if self._has_chunks() and live:  # nothing committed, nothing visible: no scan
                found = self._with_names(
                    cursor,
                    live,
                    "SELECT c.source, c.document_id, any_value(c.content_hash), any_value(c.metadata_hash) FROM visible_chunks c "
                    "JOIN ragloom_names w ON c.source = w.name WHERE c.namespace = ? GROUP BY c.source, c.document_id",
                    [namespace],
                )
                for source, document_id, content, meta in found:
                    documents.setdefault(source, {})[document_id] = content
                    metadata.setdefault(source, {})[document_id] = meta
            for source, (generation, highest) in committed.items():
                states[source] = SourceState(
                    generation=generation,
                    next_generation=max(generation, highest) + 1,
                    documents=documents.get(source, {}),
                    metadata=metadata.get(source, {}),
                )
            return states

    @staticmethod
    def _with_names(cursor: Any, names: Sequence[str], sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        """Run ``sql`` with ``names`` registered as the table ``ragloom_names(name)``."""
        import pyarrow as pa

        cursor.register("ragloom_names", pa.table({"name": pa.array(list(names), type=pa.string())}))
        try:
            return cursor.execute(sql, params).fetchall()
        finally:
            cursor.unregister("ragloom_names")

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
            row_ids = self._filtered_row_ids(cursor, namespace, filter) if filter is not None else None
            positions, scores = mirror.top_k(query, _allowed(mirror, namespace, row_ids), top_k)
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
        index = self._hnsw(mirror)
        limit = top_k
        indexed = len(index)
        for _ in range(6):
            positions = mirror.positions(index.search(query, limit, self.config.ef_search))
            positions = positions[allowed[positions]]
            if len(positions) >= min(top_k, total):
                scores = mirror.vectors[positions] @ query
                order = np.lexsort((positions, -scores))[:top_k]
                payloads = mirror.payloads
                return [self._result(payloads[p], s) for p, s in zip(positions[order].tolist(), scores[order].tolist(), strict=True)]  # type: ignore[arg-type]
            if limit >= indexed:
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

    def hybrid_candidates(
        self, namespace: str, vector: np.ndarray | None, query: str | None, *, top_k: int, filter: FilterNode | None = None
    ) -> HybridCandidates | None:
        """Both members of a hybrid query from the in-process mirror under one lock (keys: mirror positions).

        None when the vector side would take the HNSW path (the retriever then
        calls ``search`` and ``keyword_search``).
        """
        if vector is not None and self.plan(namespace, filter) == "hnsw":
            return None
        with self._db.lock, self._errors("hybrid search"):
            if not self._has_chunks() or top_k <= 0:
                return HybridCandidates(Candidates.empty(), Candidates.empty(), 0.0, self._result)
            cursor = self._cursor()
            mirror = self._mirror(cursor)
            payloads = mirror.payloads
            nearest = Candidates.empty()
            row_ids = self._filtered_row_ids(cursor, namespace, filter) if filter is not None else None
            if vector is not None:
                positions, scores = mirror.top_k(self._check_query(vector), _allowed(mirror, namespace, row_ids), top_k)
                nearest = Candidates(positions.astype(np.int64), scores.astype(np.float64), [payloads[p] for p in positions.tolist()])
            keyword, ceiling = Candidates.empty(), 0.0
            if query is not None:
                index = self._keyword_index(cursor, namespace)
                found, values, ceiling = index.ranked(query, top_k=top_k, keys=row_ids.tolist() if row_ids is not None else None, ceiling=True)
                if found:
                    positions = mirror.positions(np.asarray(found, dtype=np.int64)).astype(np.int64)
                    keyword = Candidates(positions, values, [payloads[p] for p in positions.tolist()])
            return HybridCandidates(nearest, keyword, ceiling, self._result)

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

    def iter_chunks(self, namespace: str, *, batch_size: int = 1000) -> Iterator[list[Chunk]]:
        """Visible chunks of the namespace in row order, one query of ``batch_size`` rows per batch."""

        def fetch(last: int) -> list[Any] | None:
            with self._db.lock, self._errors("listing chunks"):
                if not self._has_chunks():
                    return None
                return self._cursor().execute(
                    f"SELECT {CHUNK_ROW_COLUMNS} FROM visible_chunks WHERE namespace = ? AND row_id > ? ORDER BY row_id LIMIT ?",
                    [namespace, last, batch_size],
                ).fetchall()

        return chunks_by_row_id(fetch, lambda meta: json.loads(meta) if meta else {})

    def sources(self, namespace: str) -> list[str]:
        """Sources with visible chunks, sorted."""
        with self._db.lock, self._errors("listing sources"):
            if not self._has_chunks():
                return []
            rows = self._cursor().execute(
                "SELECT DISTINCT source FROM visible_chunks WHERE namespace = ? ORDER BY source", [namespace]
            ).fetchall()
            return [r[0] for r in rows]

    def source_counts(self, namespace: str) -> dict[str, int]:
        """Visible chunks per source, sorted by source."""
        with self._db.lock, self._errors("counting sources"):
            if not self._has_chunks():
                return {}
            rows = self._cursor().execute(
                "SELECT source, count(*) FROM visible_chunks WHERE namespace = ? GROUP BY source ORDER BY source", [namespace]
            ).fetchall()
            return {source: int(n) for source, n in rows}

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

    def session(self, namespace: str) -> DuckDBSession:
        """A write session: many small sources per transaction, each source atomic (a read-only store refuses its first stage)."""
        if self._closed:
            raise StoreError(f"DuckDB store {self.path} is closed")
        return DuckDBSession(self, namespace)

    def _count_source_rows(self, namespace: str, source: str, generation: int, survivors: Sequence[str]) -> int:
        """Rows of a source's generation whose document is not among ``survivors``."""
        if not self._has_chunks():
            return 0
        with self._db.lock, self._errors(f"committing {source}"):
            rows = self._with_names(
                self._cursor(),
                survivors,
                "SELECT count(*) FROM chunks WHERE namespace = ? AND source = ? AND generation = ? AND source_type = 'document' "
                "AND document_id NOT IN (SELECT name FROM ragloom_names)",
                [namespace, source, generation],
            )
            return int(rows[0][0])

    def _apply_session(
        self,
        namespace: str,
        buffer: list[_Written],
        commits: list[_Commit],
        drop: list[tuple[str, int]],
        in_file: dict[tuple[str, int], list[np.ndarray]],
        used: list[tuple[str, int]],
    ) -> None:
        """One transaction: insert the buffered rows, apply the commits of a group of sources, drop aborted rows.

        ``in_file`` (row ids of stages whose rows reached the file in earlier flushes) gains the rows
        inserted now for stages still open; ``used``: generations of stages not committed (open ones with
        rows in the file, aborted ones) that ``max_generation`` must cover.
        """
        import pyarrow as pa

        self._writable("write")
        db = self._db
        what = f"committing {commits[0].source}" if len(commits) == 1 else f"committing {len(commits)} sources"
        with db.lock, self._errors(what):
            cursor = self._cursor()
            created = None
            inserted: tuple[np.ndarray, list[str], np.ndarray] | None = None
            dropped: list[int] = []
            updated: list[tuple[Any, ...]] = []
            committed = {(c.source, c.generation) for c in commits}

            def run(name: str, table: Any, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
                cursor.register(name, table)
                try:
                    return cursor.execute(sql, params).fetchall()
                finally:
                    cursor.unregister(name)

            with db.single_threaded(cursor), self._transaction(cursor):
                if buffer:
                    table, row_ids, metadata_json, vectors = batch_table(namespace, buffer, db.next_row_id)
                    if db.dim is None:
                        created = int(vectors.shape[1])
                        create_chunks(cursor, created)
                    run("ragloom_batch", table, insert_sql(), [])
                    inserted = (row_ids, metadata_json, vectors)
                has_chunks = db.dim is not None or created is not None
                keeps = [(c.source, d, c.generation, c.current) for c in commits if c.current for d in c.keep]
                if keeps and has_chunks:
                    source, document, generation, current = zip(*keeps, strict=True)
                    run(
                        "ragloom_keep",
                        pa.table({"source": source, "document_id": document, "generation": generation, "current": current}),
                        "UPDATE chunks SET generation = k.generation FROM ragloom_keep k WHERE chunks.namespace = ? "
                        "AND chunks.source = k.source AND chunks.document_id = k.document_id AND chunks.generation = k.current",
                        [namespace],
                    )
                updates = [(c.source, c.generation, c.current, chunk) for c in commits for chunk in c.updates]
                if updates and has_chunks:
                    updated = run(
                        "ragloom_updates",
                        pa.table(
                            {
                                "source": [u[0] for u in updates],
                                "generation": [u[1] for u in updates],
                                "current": [u[2] for u in updates],
                                "chunk_id": [u[3].id for u in updates],
                                "metadata": [json.dumps(u[3].metadata, ensure_ascii=False, default=str) for u in updates],
                                "tags": pa.array([list(u[3].tags) for u in updates], type=pa.list_(pa.string())),
                                "content_hash": [u[3].content_hash for u in updates],
                                "metadata_hash": [u[3].metadata_hash for u in updates],
                            }
                        ),
                        "UPDATE chunks SET generation = u.generation, metadata = u.metadata, tags = u.tags, "
                        "content_hash = u.content_hash, metadata_hash = u.metadata_hash FROM ragloom_updates u "
                        "WHERE chunks.namespace = ? AND chunks.source = u.source AND chunks.chunk_id = u.chunk_id "
                        "AND chunks.generation = u.current RETURNING chunks.row_id, chunks.metadata, chunks.tags",
                        [namespace],
                    )
                if len(updated) != len(updates):  # also without a chunks table: none of them is stored
                    raise StoreError(f"update_metadata: {len(updates) - len(updated)} of {len(updates)} chunks are not stored")
                stale = [(c.source, c.generation) for c in commits if not c.fresh]
                if stale and has_chunks:
                    source, generation = zip(*stale, strict=True)
                    dropped += [
                        r[0]
                        for r in run(
                            "ragloom_commits",
                            pa.table({"source": source, "generation": generation}),
                            "DELETE FROM chunks USING ragloom_commits t WHERE chunks.namespace = ? AND chunks.source = t.source "
                            "AND chunks.generation <> t.generation RETURNING chunks.row_id",
                            [namespace],
                        )
                    ]
                if drop and has_chunks:
                    source, generation = zip(*drop, strict=True)
                    dropped += [
                        r[0]
                        for r in run(
                            "ragloom_aborted",
                            pa.table({"source": source, "generation": generation}),
                            "DELETE FROM chunks USING ragloom_aborted t WHERE chunks.namespace = ? AND chunks.source = t.source "
                            "AND chunks.generation = t.generation RETURNING chunks.row_id",
                            [namespace],
                        )
                    ]
                # sources rows: committed ones flip their generation; open stages with rows in the file raise
                # max_generation, so a later run never reuses the generation of rows it cannot see
                bumps: dict[str, tuple[int | None, int]] = {}
                for source_name, generation_used in used:
                    bumps[source_name] = (None, max(generation_used, bumps.get(source_name, (None, 0))[1]))
                for commit in commits:
                    bumps[commit.source] = (commit.generation, max(commit.generation, bumps.get(commit.source, (None, 0))[1]))
                if bumps:
                    names = list(bumps)
                    table = pa.table(
                        {
                            "source": names,
                            "generation": pa.array([bumps[n][0] for n in names], type=pa.int64()),
                            "max_generation": pa.array([bumps[n][1] for n in names], type=pa.int64()),
                        }
                    )
                    cursor.register("ragloom_sources", table)
                    try:
                        cursor.execute(
                            "UPDATE sources SET generation = coalesce(t.generation, sources.generation), "
                            "max_generation = greatest(sources.max_generation, t.max_generation) FROM ragloom_sources t "
                            "WHERE sources.namespace = ? AND sources.source = t.source",
                            [namespace],
                        )
                        cursor.execute(
                            "INSERT INTO sources SELECT ?, t.source, coalesce(t.generation, 0), t.max_generation "
                            "FROM ragloom_sources t WHERE NOT EXISTS "
                            "(SELECT 1 FROM sources s WHERE s.namespace = ? AND s.source = t.source)",
                            [namespace, namespace],
                        )
                    finally:
                        cursor.unregister("ragloom_sources")
            # committed: bring the process's caches in step (under the same lock)
            if created is not None:
                db.dim = created
            shown: list[np.ndarray] = [ids for key in committed for ids in in_file.get(key, ())]
            if inserted is not None:
                row_ids, metadata_json, vectors = inserted
                db.next_row_id += len(row_ids)
                offset = 0
                for written in buffer:
                    ids = row_ids[offset : offset + len(written.chunks)]
                    offset += len(written.chunks)
                    key = (written.source, written.generation)
                    if key in committed:
                        shown.append(ids)
                    else:
                        in_file.setdefault(key, []).append(ids)
                if db.mirror is not None:
                    chunks = [c for w in buffer for c in w.chunks]
                    payloads = [
                        (c.id, c.document_id, c.text, c.source, meta, c.start, c.end, tuple(c.tags))
                        for c, meta in zip(chunks, metadata_json, strict=True)
                    ]
                    documents = np.fromiter((c.source_type == DOCUMENT_SOURCE_TYPE for c in chunks), dtype=bool, count=len(chunks))
                    db.mirror.append(row_ids, namespace, False, vectors, payloads, documents)
            if updated and db.mirror is not None:
                mirror = db.mirror
                ids = np.asarray([r[0] for r in updated], dtype=np.int64)
                for position, (_, meta, tags) in zip(mirror.positions(ids).tolist(), updated, strict=True):
                    old = mirror.payloads[position]
                    if old is not None:
                        mirror.payloads[position] = (*old[:4], meta, old[5], old[6], tuple(tags or ()))
            visible = np.concatenate(shown).tolist() if shown else []
            self._apply(namespace, visible, sorted(set(dropped)))
            try:
                db.checkpoint(cursor, due_only=True)
            except StoreError as exc:  # committed already: the WAL holds it; the next write or close tries again
                warnings.warn(str(exc), stacklevel=2)

    def delete(self, namespace: str, filter: FilterNode | None) -> int:
        """Delete visible chunks matching ``filter`` (None: the whole namespace); return the count."""
        self._writable("delete")
        if not self._has_chunks():
            return 0
        where, params = _checked_filter_sql(filter)
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
            self._db.checkpoint(self._cursor())

    def close(self) -> None:
        """Release the file (the last store object of the process closes it)."""
        if self._closed:
            return
        self._closed = True
        self._release()

    def __enter__(self) -> DuckDBStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DuckDBStore(path={self.path!r}, index={self.config.index!r}, read_only={self.config.read_only})"


def _checked_filter_sql(filter: FilterNode | None) -> tuple[str, list[Any]]:
    """``filter_sql`` with values DuckDB cannot take (numbers beyond a double, invalid Unicode) as FilterErrors."""
    try:
        where, params = filter_sql(filter)
    except (OverflowError, ValueError) as exc:
        raise FilterError(f"filter value out of range: {str(exc)[:200]}") from exc
    for value in params:
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise FilterError("filter value is not valid Unicode (a lone surrogate)") from exc
    return where, list(params)


def _load_mirror(cursor: Any, mirror: VectorMirror) -> None:
    """Fill ``mirror`` from the file, streamed in Arrow batches.

    No ``ORDER BY`` and no whole-table result: DuckDB then needs no more memory
    than a batch (its ``memory_limit`` holds for stores larger than it), and the
    rows are put in row id order here.
    """
    qualified = ", ".join(f"c.{name}" for name in _PAYLOAD_COLUMNS.split(", "))
    result = cursor.execute(
        f"SELECT c.row_id, c.namespace, s.generation IS NOT NULL AS visible, c.source_type = 'document' AS document, "
        f"c.vector, {qualified} FROM chunks c "
        "LEFT JOIN sources s ON c.namespace = s.namespace AND c.source = s.source AND c.generation = s.generation"
    )
    reader = result.to_arrow_reader(_MIRROR_BATCH) if hasattr(result, "to_arrow_reader") else result.fetch_record_batch(_MIRROR_BATCH)
    row_ids: list[np.ndarray] = []
    namespaces: list[str] = []
    visible: list[np.ndarray] = []
    documents: list[np.ndarray] = []
    vectors: list[np.ndarray] = []
    payloads: list[Payload] = []
    names = _PAYLOAD_COLUMNS.split(", ")
    for batch in reader:
        if not batch.num_rows:
            continue
        row_ids.append(batch.column("row_id").to_numpy())
        namespaces.extend(batch.column("namespace").to_pylist())
        visible.append(batch.column("visible").to_numpy(zero_copy_only=False))
        documents.append(batch.column("document").to_numpy(zero_copy_only=False))
        vectors.append(batch.column("vector").flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False))
        columns = [batch.column(name).to_pylist() for name in names]
        columns[-1] = [tuple(tags or ()) for tags in columns[-1]]
        payloads.extend(zip(*columns, strict=True))  # type: ignore[arg-type]
    if not row_ids:
        return
    ids = np.concatenate(row_ids)
    order = np.argsort(ids, kind="stable")
    ordered = order.tolist()
    mirror.load(
        ids[order],
        [namespaces[i] for i in ordered],
        np.concatenate(visible)[order],
        np.concatenate(vectors).reshape(len(ids), mirror.dim)[order],
        [payloads[i] for i in ordered],
        np.concatenate(documents)[order],
    )


def _allowed(mirror: VectorMirror, namespace: str, row_ids: np.ndarray | None) -> np.ndarray:
    """The mirror positions an exact search may return: the namespace's, narrowed to ``row_ids`` (a filter's match) when given."""
    allowed = mirror.allowed(namespace)
    if row_ids is not None:
        matching = np.zeros(mirror.size, dtype=bool)
        matching[mirror.positions(row_ids)] = True
        allowed &= matching
    return allowed
