"""The ``pgvector`` store: ragloom's chunks, vectors and BM25 postings in PostgreSQL.

Many processes share one database. A write session holds one pooled
connection and one transaction until it flushes; each staged source inserts its
rows (binary ``COPY``) into that transaction, and its commit deletes the rest of
the source in the same transaction, so readers (PostgreSQL snapshots) see a
source's old rows or its new ones, never both and never none. Before a stage
writes, it takes the transaction-scoped advisory lock of ``(namespace,
source)``: two processes re-ingesting one source run one after the other, and
the second one's commit drops whatever the first left, so exactly one
generation survives. A session that must wait for a lock while it holds others
flushes first, so writers never wait on each other in a cycle.

See :mod:`ragloom_pgvector.schema` for the tables and
:mod:`ragloom_pgvector.keyword` for BM25.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
import weakref
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ragloom.plugin import (
    CHUNK_ROW_COLUMNS,
    CHUNKS,
    CONCURRENT_WRITERS,
    DOCUMENT_SOURCE_TYPE,
    KEYWORD_SEARCH,
    VECTORS,
    Analyzer,
    Chunk,
    DimensionMismatchError,
    FilterNode,
    RagloomError,
    Result,
    SourceState,
    StoreError,
    check_write,
    chunks_by_row_id,
    normalize_rows,
)
from ragloom_pgvector import binary
from ragloom_pgvector import schema as schema_mod
from ragloom_pgvector.config import PgVectorStoreConfig
from ragloom_pgvector.keyword import (
    BM25_FILTERED_SQL,
    BM25_SQL,
    POSTINGS_SQL,
    Postings,
    TermKeys,
    postings,
    query_terms,
    score_postings,
)
from ragloom_pgvector.schema import SCHEMA_VERSION, qualified
from ragloom_pgvector.sqlfilter import filter_sql

__all__ = ["SCHEMA_VERSION", "PgVectorSession", "PgVectorStage", "PgVectorStore"]

_log = logging.getLogger(__name__)

_RESULT_COLUMNS = "c.chunk_id, c.document_id, c.text, c.source, c.metadata, c.start_offset, c.end_offset, c.tags"
_COPY_COLUMNS = (
    "row_id, namespace, source, generation, document_id, chunk_id, chunk_index, text, start_offset, end_offset, "
    "metadata, tags, content_hash, metadata_hash, doc_length, vector, source_type"
)
_DOCUMENT = f"'{DOCUMENT_SOURCE_TYPE}'"  # the only rows reads see


def _state(generation: int, next_generation: int, documents: dict[str, str], metadata: dict[str, str]) -> SourceState:
    return SourceState(generation=generation, next_generation=next_generation, documents=documents, metadata=metadata)


def source_lock_key(namespace: str, source: str) -> int:
    """The advisory-lock key of ``(namespace, source)`` (signed 64 bits)."""
    digest = hashlib.blake2b(f"{namespace}\x00{source}".encode(), digest_size=8, person=b"ragloomsrc").digest()
    return int.from_bytes(digest, "big", signed=True)


_LOST_CONNECTION_STATES = ("57P01", "57P02", "57P03")  # admin shutdown, crash shutdown, cannot connect now


def _connection_lost(exc: BaseException | None) -> bool:
    """Whether ``exc`` says the connection is gone (an OperationalError is also a lock or statement timeout or a
    deadlock: the server's refusals, which leave the connection usable)."""
    import psycopg

    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in _LOST_CONNECTION_STATES


def _reconnecting(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run a read once more on a fresh connection when its pooled connection had been cut.

    A server restart, ``pg_terminate_backend`` or an idle timeout leaves dead
    connections in the pool; instead of a liveness round trip before every
    query, a read that finds its connection gone is retried once after the pool
    dropped its broken connections.
    """

    @functools.wraps(method)
    def wrapper(self: PgVectorStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except StoreError as exc:
            if self._closed or not _connection_lost(exc.__cause__):
                raise
            self._pool.check()
            return method(self, *args, **kwargs)

    return wrapper


def _result(row: Sequence[Any], score: float) -> Result:
    chunk_id, document_id, text, source, metadata, start, end, tags = row[:8]
    return Result(
        chunk_id=chunk_id,
        document_id=document_id,
        text=text,
        score=float(score),
        source=source,
        metadata=metadata if isinstance(metadata, dict) else json.loads(metadata or "{}"),
        span=(int(start), int(end)),
        tags=tuple(tags or ()),
    )


class PgVectorStore:
    """A Store in a PostgreSQL database with the pgvector extension, shared by many processes."""

    def __init__(self, config: PgVectorStoreConfig | None = None, *, dsn: str | None = None):
        import psycopg
        from psycopg_pool import ConnectionPool

        self.config = config or PgVectorStoreConfig()
        self.schema = self.config.schema
        self._dsn = dsn if dsn is not None else self.config.dsn.get()
        self._closed = False
        self._pool: Any = None
        self.capabilities: frozenset[str] = frozenset({VECTORS, CHUNKS, KEYWORD_SEARCH, CONCURRENT_WRITERS} if self.config.keyword else {VECTORS, CHUNKS, CONCURRENT_WRITERS})
        self._analyzer = Analyzer(self.config.bm25.analyzer)
        self._term_keys = TermKeys()
        self._where = "PostgreSQL store"
        self._sessions: weakref.WeakSet[PgVectorSession] = weakref.WeakSet()
        self._hnsw_checked = -1e9
        self._hnsw_ready = False
        try:
            with psycopg.connect(self._dsn, autocommit=True, connect_timeout=int(self.config.connect_timeout)) as conn:
                info = conn.info
                self._where = f"PostgreSQL store {info.user}@{info.host or 'localhost'}/{info.dbname} schema {self.schema}"
                with conn.transaction():
                    schema_mod.ensure_extension(conn.cursor(), create=self.config.create_extension)
                with conn.transaction():
                    cursor = conn.cursor()
                    self.schema_version, self._dim = schema_mod.migrate(cursor, self.schema)
                if self.config.index == "hnsw" and self._dim is not None:
                    row = conn.execute(self._sql("SELECT coalesce(sum(chunks), 0) FROM {s}.sources")).fetchone()
                    rows = row[0] if row else 0
                    if rows >= max(self.config.hnsw_min_chunks, 1):
                        self._build_hnsw(conn)
        except RagloomError:
            raise
        except psycopg.Error as exc:
            raise StoreError(f"{self._where}: cannot open ({_pg_message(exc)})") from exc
        self._pool = ConnectionPool(
            self._dsn,
            min_size=self.config.pool_min,
            max_size=self.config.pool_max,
            kwargs={
                "autocommit": True,
                "connect_timeout": int(self.config.connect_timeout),
                **({} if self.config.prepared_statements else {"prepare_threshold": None}),
            },
            configure=_configure,
            timeout=self.config.connect_timeout,
            name=f"ragloom-{self.schema}",
            open=True,
        )

    # ------------------------------------------------------------------ plumbing

    def _sql(self, template: str) -> Any:
        return qualified(self.schema, template)

    @functools.cached_property
    def _copy_chunks_sql(self) -> Any:
        return self._sql(f"COPY {{s}}.chunks ({_COPY_COLUMNS}) FROM STDIN (FORMAT BINARY)")

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            yield
        except RagloomError:
            raise
        except PoolTimeout as exc:
            raise StoreError(
                f"{self._where}: {action} failed: no database connection within {self.config.connect_timeout:g} s ({exc})"
            ) from exc
        except psycopg.Error as exc:
            raise StoreError(f"{self._where}: {action} failed: {_pg_message(exc)}") from exc

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        if self._closed:
            raise StoreError(f"{self._where} is closed")
        with self._pool.connection() as conn:
            yield conn

    def _build_hnsw(self, conn: Any) -> None:
        with conn.transaction():
            cursor = conn.cursor()
            if schema_mod.hnsw_index_exists(cursor, self.schema):
                return
            _log.info(
                "%s: building the HNSW index (m=%d, ef_construction=%d)", self._where, self.config.m, self.config.ef_construction
            )
            cursor.execute("SET LOCAL maintenance_work_mem = '512MB'")
            schema_mod.create_hnsw_index(cursor, self.schema, m=self.config.m, ef_construction=self.config.ef_construction)
            cursor.execute(self._sql("ANALYZE {s}.chunks"))

    def _ensure_dimension(self, dim: int, conn: Any) -> None:
        """Check ``dim`` against the store; the first write adds the vector column (and the HNSW index) on ``conn``:
        in a transaction of its own, or in a savepoint of the one ``conn`` has open (never on another pooled
        connection: it would wait for ever in a pool of one, ``pool_max = 1``)."""
        if self._dim is None:
            with conn.transaction():
                self._dim = self._add_vector_column(conn, dim)
        if self._dim != dim:
            raise DimensionMismatchError(store_dim=self._dim, embedder_dim=dim, where=self._where)

    def _add_vector_column(self, conn: Any, dim: int) -> int:
        cursor = conn.cursor()
        stored = schema_mod.add_vector_column(cursor, self.schema, dim)
        if self.config.index == "hnsw" and self.config.hnsw_min_chunks == 0:
            # an index from the first row on: every insert maintains it (slower ingest, no build step)
            schema_mod.create_hnsw_index(cursor, self.schema, m=self.config.m, ef_construction=self.config.ef_construction)
        return stored

    def _refresh_dimension(self, conn: Any) -> int | None:
        if self._dim is None:
            row = conn.execute(self._sql("SELECT value FROM {s}.meta WHERE key = 'dimension'")).fetchone()
            self._dim = int(row[0]) if row else None
        return self._dim

    def _check_query(self, vector: np.ndarray, conn: Any) -> np.ndarray | None:
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        dim = self._refresh_dimension(conn)
        if dim is None:
            return None
        if query.shape[0] != dim:
            raise DimensionMismatchError(store_dim=dim, embedder_dim=query.shape[0], where=self._where)
        return normalize_rows(query)

    # ------------------------------------------------------------------ reads

    @_reconnecting
    def dimension(self) -> int | None:
        """Dimension of the stored vectors, or None while nothing was ever written."""
        if self._dim is None and not self._closed:
            with self._errors("reading the dimension"), self._connection() as conn:
                self._refresh_dimension(conn)
        return self._dim

    @_reconnecting
    def source_states(self, namespace: str, sources: Sequence[str]) -> dict[str, SourceState]:
        """Committed generation and document hashes of many sources, in one query."""
        wanted = list(dict.fromkeys(sources))
        if not wanted:
            return {}
        with self._errors("reading source states"), self._connection() as conn:
            return self._source_states(conn, namespace, wanted)

    def _source_states(self, conn: Any, namespace: str, wanted: list[str]) -> dict[str, SourceState]:
        rows = conn.execute(
            self._sql(
                "SELECT w.source, coalesce(s.generation, 0), d.document_id, d.content_hash, d.metadata_hash, "
                "(SELECT last_value + 1 FROM {s}.generations) "
                "FROM unnest(%(sources)s::text[]) AS w(source) "
                "LEFT JOIN {s}.sources s ON s.namespace = %(ns)s AND s.source = w.source "
                "LEFT JOIN LATERAL (SELECT DISTINCT ON (c.document_id) c.document_id, c.content_hash, c.metadata_hash "
                "FROM {s}.chunks c WHERE c.namespace = %(ns)s AND c.source = w.source AND c.source_type = 'document') d ON true"
            ),
            {"sources": wanted, "ns": namespace},
        ).fetchall()
        found: dict[str, tuple[int, int, dict[str, str], dict[str, str]]] = {}
        for source, generation, document_id, content, meta, sequence in rows:
            entry = found.setdefault(source, (int(generation), int(sequence), {}, {}))
            if document_id is not None:
                entry[2][document_id] = content
                entry[3][document_id] = meta
        return {
            source: _state(generation, max(generation + 1, sequence, 1), documents, metadata)
            for source, (generation, sequence, documents, metadata) in found.items()
        }

    def source_state(self, namespace: str, source: str) -> SourceState:
        """The committed state of one source."""
        return self.source_states(namespace, [source])[source]

    def _has_hnsw(self, conn: Any) -> bool:
        """Whether the HNSW index exists (a missing one is looked for again every 10 s)."""
        if not self._hnsw_ready and time.monotonic() - self._hnsw_checked > 10:
            self._hnsw_checked = time.monotonic()
            self._hnsw_ready = schema_mod.hnsw_index_exists(conn.cursor(), self.schema)
        return self._hnsw_ready

    def _uses_hnsw(self, conn: Any, namespace: str, filter: FilterNode | None, exact: bool) -> int:
        """The namespace's chunk count when HNSW should answer, else 0."""
        if exact or filter is not None or self.config.index != "hnsw" or not self._has_hnsw(conn):
            return 0
        total = self._count(conn, namespace)
        return total if total >= max(self.config.hnsw_min_chunks, 1) else 0

    @_reconnecting
    def plan(self, namespace: str, filter: FilterNode | None = None, *, exact: bool = False) -> str:
        """Which path ``search`` takes: ``"hnsw"`` or ``"exact"``."""
        with self._errors("planning"), self._connection() as conn:
            return "hnsw" if self._uses_hnsw(conn, namespace, filter, exact) else "exact"

    def explain(
        self, namespace: str, vector: np.ndarray, *, top_k: int, filter: FilterNode | None = None, exact: bool = False
    ) -> str:
        """PostgreSQL's plan of the query ``search`` runs first (for operators and tests)."""
        with self._errors("explain"), self._connection() as conn, conn.transaction():
            query = self._check_query(vector, conn)
            if query is None:
                return ""
            if self._uses_hnsw(conn, namespace, filter, exact):
                self._hnsw_settings(conn, max(int(self.config.ef_search), top_k))
                statement, params = self._hnsw_sql(namespace, query, top_k)
            else:
                statement, params = self._exact_sql(namespace, query, top_k, filter)
            rows = conn.execute(self._sql("EXPLAIN ") + statement, params).fetchall()
        return "\n".join(r[0] for r in rows)

    def _exact_sql(self, namespace: str, query: np.ndarray, top_k: int, filter: FilterNode | None) -> tuple[Any, list[Any]]:
        where, params = filter_sql(filter, prefix="c.")
        # "+ 0": an ordering the HNSW index cannot serve, so this scan is exact
        statement = self._sql(
            f"SELECT {_RESULT_COLUMNS}, 1 - (c.vector <=> %s::vector) AS score FROM {{s}}.chunks c "
            f"WHERE c.namespace = %s AND c.source_type = {_DOCUMENT} AND {where} ORDER BY (c.vector <=> %s::vector) + 0, c.row_id LIMIT %s"
        )
        return statement, [query, namespace, *params, query, int(top_k)]

    @staticmethod
    def _hnsw_settings(conn: Any, ef_search: int) -> None:
        """Per-transaction settings of an HNSW query: ``ef_search``, and no plan that sorts instead of
        walking the index (the namespace's btree looks cheaper to a planner with stale statistics)."""
        conn.execute(f"SET LOCAL hnsw.ef_search = {min(max(int(ef_search), 1), 1000)}")
        conn.execute("SET LOCAL enable_sort = off")

    def _hnsw_sql(self, namespace: str, query: np.ndarray, top_k: int) -> tuple[Any, list[Any]]:
        statement = self._sql(
            f"SELECT {_RESULT_COLUMNS}, 1 - (c.vector <=> %s::vector) AS score FROM {{s}}.chunks c "
            f"WHERE c.namespace = %s AND c.source_type = {_DOCUMENT} ORDER BY c.vector <=> %s::vector LIMIT %s"
        )
        return statement, [query, namespace, query, int(top_k)]

    @_reconnecting
    def search(
        self,
        namespace: str,
        vector: np.ndarray,
        *,
        top_k: int,
        filter: FilterNode | None = None,
        exact: bool = False,
        ef_search: int | None = None,
    ) -> list[Result]:
        """Top-k committed chunks by cosine similarity, best first.

        HNSW answers unfiltered searches of a namespace with at least
        ``hnsw_min_chunks`` chunks (``ef_search`` per query via ``SET LOCAL``);
        filtered, smaller or ``exact=True`` searches scan exactly.
        """
        with self._errors("search"), self._connection() as conn:
            query = self._check_query(vector, conn)
            if query is None or top_k <= 0:
                return []
            if not exact and filter is None and self.config.index == "hnsw" and self._has_hnsw(conn):
                results = self._search_hnsw(conn, namespace, query, top_k, ef_search or self.config.ef_search)
                if results is not None:
                    return results
            statement, params = self._exact_sql(namespace, query, top_k, filter)
            rows = conn.execute(statement, params).fetchall()
        return [_result(row, row[8]) for row in rows]

    def _search_hnsw(self, conn: Any, namespace: str, query: np.ndarray, top_k: int, ef_search: int) -> list[Result] | None:
        """HNSW answer, or None when the namespace is below ``hnsw_min_chunks`` or too few of the
        index's candidates belong to it even at ``ef_search`` 1000.

        The namespace's count, the settings and the query go in one pipeline (one round trip).
        """
        ef = max(int(ef_search), top_k)
        while True:
            statement, params = self._hnsw_sql(namespace, query, top_k)
            with conn.pipeline():
                conn.execute("BEGIN")
                self._hnsw_settings(conn, ef)
                counted = conn.execute(self._count_sql, [namespace])
                found = conn.execute(statement, params)
                conn.execute("COMMIT")
            row = counted.fetchone()
            total = int(row[0]) if row else 0
            if total < max(self.config.hnsw_min_chunks, 1):
                return None
            rows = found.fetchall()
            if len(rows) >= min(top_k, total):
                return [_result(row, row[8]) for row in rows]
            if ef >= 1000:
                return None
            ef *= 4

    @functools.cached_property
    def _count_sql(self) -> Any:
        return self._sql("SELECT coalesce(sum(chunks), 0) FROM {s}.sources WHERE namespace = %s")

    @_reconnecting
    def keyword_search(self, namespace: str, query: str, *, top_k: int, filter: FilterNode | None = None) -> list[Result]:
        """Top-k committed chunks by BM25, best first (only chunks containing a query term)."""
        if not self.config.keyword:
            raise StoreError(f"{self._where}: keyword search is off (keyword = false)")
        terms, weights = query_terms(self._analyzer, self._term_keys, namespace, query)
        if top_k <= 0 or not terms:
            return []
        with self._errors("keyword search"), self._connection() as conn:
            if filter is None:
                found = self._keyword_numpy(conn, namespace, terms, weights, top_k)
                if found is not None:
                    return found
            where, params = filter_sql(filter, prefix="c.")
            named = {f"f{i}": value for i, value in enumerate(params)}
            where = _named(where, len(params))
            template = BM25_SQL if filter is None else BM25_FILTERED_SQL
            statement = template.replace("{columns}", _RESULT_COLUMNS).replace("{where}", where)
            rows = conn.execute(
                self._sql(statement),
                {
                    "terms": terms,
                    "weights": weights,
                    "namespace": namespace,
                    "k1": float(self.config.bm25.k1),
                    "b": float(self.config.bm25.b),
                    "top_k": int(top_k),
                    **named,
                },
            ).fetchall()
        return [_result(row, row[8]) for row in rows]

    def _keyword_numpy(
        self, conn: Any, namespace: str, terms: list[int], weights: list[float], top_k: int
    ) -> list[Result] | None:
        """Unfiltered BM25: the terms' postings scored in numpy, then the top rows (two statements).

        Chunk rows never change after their insert (a new generation is new rows), so
        when every top row is still there the answer is the first statement's
        snapshot's; None (score in SQL instead) when one was deleted in between.
        """
        postings_rows = conn.execute(self._postings_sql, {"terms": terms, "namespace": namespace}).fetchall()
        row_ids, scores = score_postings(
            postings_rows,
            dict(zip(terms, weights, strict=True)),
            k1=float(self.config.bm25.k1),
            b=float(self.config.bm25.b),
            top_k=int(top_k),
        )
        if not len(row_ids):
            return []
        fetched = conn.execute(self._rows_sql, [row_ids.tolist()]).fetchall()
        if len(fetched) != len(row_ids):
            return None
        by_id = {row[8]: row for row in fetched}
        return [_result(by_id[int(r)], float(score)) for r, score in zip(row_ids, scores, strict=True)]

    @functools.cached_property
    def _postings_sql(self) -> Any:
        return self._sql(POSTINGS_SQL)

    @functools.cached_property
    def _rows_sql(self) -> Any:
        return self._sql(
            f"SELECT {_RESULT_COLUMNS}, c.row_id FROM {{s}}.chunks c WHERE c.row_id = ANY(%s::bigint[]) AND c.source_type = {_DOCUMENT}"
        )

    @_reconnecting
    def get_vectors(self, namespace: str, chunk_ids: Sequence[str]) -> np.ndarray:
        """Stored (normalised) vectors of committed chunks, in the order asked."""
        wanted = list(chunk_ids)
        with self._errors("reading vectors"), self._connection() as conn:
            dim = self._refresh_dimension(conn)
            if dim is None:
                if wanted:
                    raise StoreError(f"unknown chunk id(s): {', '.join(wanted[:5])}")
                return np.zeros((0, 0), dtype=np.float32)
            rows = conn.execute(
                self._sql(
                    "SELECT chunk_id, vector FROM {s}.chunks WHERE namespace = %s AND chunk_id = ANY(%s::text[]) "
                    f"AND source_type = {_DOCUMENT}"
                ),
                [namespace, wanted],
            ).fetchall()
        position = {cid: np.asarray(vec.to_numpy() if hasattr(vec, "to_numpy") else vec, dtype=np.float32) for cid, vec in rows}
        missing = [cid for cid in wanted if cid not in position]
        if missing:
            raise StoreError(f"unknown chunk id(s) in namespace {namespace!r}: {', '.join(missing[:5])}")
        if not wanted:
            return np.zeros((0, dim), dtype=np.float32)
        return np.stack([position[cid] for cid in wanted])

    def iter_chunks(self, namespace: str, *, batch_size: int = 1000) -> Iterator[list[Chunk]]:
        """Committed chunks of the namespace in row order, one query of ``batch_size`` rows per batch."""

        def fetch(last: int) -> list[Any] | None:
            with self._errors("listing chunks"), self._connection() as conn:
                if self._refresh_dimension(conn) is None:
                    return None
                return conn.execute(
                    self._sql(
                        f"SELECT {CHUNK_ROW_COLUMNS} FROM {{s}}.chunks WHERE namespace = %s AND row_id > %s "
                        f"AND source_type = {_DOCUMENT} ORDER BY row_id LIMIT %s"
                    ),
                    [namespace, last, batch_size],
                ).fetchall()

        return chunks_by_row_id(fetch, lambda meta: dict(meta or {}))

    @_reconnecting
    def sources(self, namespace: str) -> list[str]:
        """Sources with committed chunks, sorted."""
        with self._errors("listing sources"), self._connection() as conn:
            rows = conn.execute(
                self._sql('SELECT source FROM {s}.sources WHERE namespace = %s AND chunks > 0 ORDER BY source COLLATE "C"'),
                [namespace],
            ).fetchall()
        return [r[0] for r in rows]

    def _count(self, conn: Any, namespace: str) -> int:
        row = conn.execute(
            self._sql("SELECT coalesce(sum(chunks), 0) FROM {s}.sources WHERE namespace = %s"), [namespace]
        ).fetchone()
        return int(row[0])

    @_reconnecting
    def count(self, namespace: str) -> int:
        """Committed chunks in the namespace."""
        with self._errors("counting"), self._connection() as conn:
            return self._count(conn, namespace)

    @_reconnecting
    def stats(self, namespace: str) -> dict[str, Any]:
        """Chunks, sources and documents of the namespace; dimension, index, table sizes."""
        with self._errors("stats"), self._connection() as conn:
            chunks, sources = conn.execute(
                self._sql(
                    "SELECT coalesce(sum(chunks), 0), count(*) FILTER (WHERE chunks > 0) FROM {s}.sources WHERE namespace = %s"
                ),
                [namespace],
            ).fetchone()
            documents = conn.execute(
                self._sql(
                    "SELECT count(*) FROM (SELECT DISTINCT source, document_id FROM {s}.chunks "
                    f"WHERE namespace = %s AND source_type = {_DOCUMENT}) d"
                ),
                [namespace],
            ).fetchone()[0]
            sizes = dict(
                conn.execute(
                    "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %s AND c.relkind = 'r'",
                    [self.schema],
                ).fetchall()
            )
            hnsw = schema_mod.hnsw_index_exists(conn.cursor(), self.schema)
            dim = self._refresh_dimension(conn)
        return {
            "chunks": int(chunks),
            "sources": int(sources),
            "documents": int(documents),
            "dimension": dim,
            "index": "hnsw" if hnsw else "exact",
            "schema": self.schema,
            "schema_version": self.schema_version,
            "table_bytes": int(sizes.get("chunks", 0)),
            "postings_bytes": int(sizes.get("postings", 0)),
            "total_bytes": int(sum(sizes.values())),
        }

    # ------------------------------------------------------------------ writes

    def session(self, namespace: str) -> PgVectorSession:
        """A write session holding one connection and one transaction per flush."""
        if self._closed:
            raise StoreError(f"{self._where} is closed")
        session = PgVectorSession(self, namespace)
        self._sessions.add(session)
        return session

    def delete(self, namespace: str, filter: FilterNode | None) -> int:
        """Delete committed chunks matching ``filter`` (None: the whole namespace); return the count."""
        where, params = filter_sql(filter, prefix="c.")
        with self._errors("delete"), self._connection() as conn, conn.transaction():
            touched = [
                r[0]
                for r in conn.execute(
                    self._sql(f"SELECT DISTINCT c.source FROM {{s}}.chunks c WHERE c.namespace = %s AND {where}"),
                    [namespace, *params],
                ).fetchall()
            ]
            if not touched:
                return 0
            for key in sorted(source_lock_key(namespace, s) for s in touched):
                conn.execute("SELECT pg_advisory_xact_lock(%s)", [key])
            gone = conn.execute(
                self._sql(
                    f"WITH gone AS (DELETE FROM {{s}}.chunks c WHERE c.namespace = %s AND {where} RETURNING c.row_id), "
                    "p AS (DELETE FROM {s}.postings p USING gone WHERE p.row_id = gone.row_id) SELECT count(*) FROM gone"
                ),
                [namespace, *params],
            ).fetchone()[0]
            self._recount(conn, namespace, touched)
            return int(gone)

    def _recount(self, conn: Any, namespace: str, sources: Sequence[str], generation: int | None = None) -> None:
        """Bring ``sources`` rows in step with the chunks (``generation``: the one just committed)."""
        conn.execute(
            self._sql(
                "INSERT INTO {s}.sources AS t (namespace, source, generation, chunks, total_length) "
                "SELECT %(ns)s, w.source, coalesce(%(gen)s, 0), coalesce(n.chunks, 0), coalesce(n.total, 0) "
                "FROM unnest(%(sources)s::text[]) AS w(source) LEFT JOIN LATERAL ("
                "SELECT count(*) AS chunks, sum(doc_length) AS total FROM {s}.chunks c WHERE c.namespace = %(ns)s AND c.source = w.source "
                "AND c.source_type = 'document') n ON true "
                "ON CONFLICT (namespace, source) DO UPDATE SET chunks = excluded.chunks, total_length = excluded.total_length, "
                "generation = CASE WHEN %(gen)s::bigint IS NOT NULL THEN %(gen)s::bigint WHEN excluded.chunks = 0 THEN 0 ELSE t.generation END"
            ),
            {"ns": namespace, "sources": list(sources), "gen": generation},
        )

    def build_index(self) -> None:
        """Build the HNSW index now (after a bulk load; later inserts keep it up to date)."""
        with self._errors("building the HNSW index"), self._connection() as conn:
            if self._refresh_dimension(conn) is not None:
                self._build_hnsw(conn)
                self._hnsw_ready = True

    def close(self) -> None:
        """Close the connection pool."""
        if self._closed:
            return
        self._closed = True
        for session in list(self._sessions):
            session._drop()  # a session left open ends with the store: its transaction rolls back
        if self._pool is not None:
            self._pool.close()

    def __enter__(self) -> PgVectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PgVectorStore(schema={self.schema!r}, index={self.config.index!r})"


class PgVectorSession:
    """One connection, one transaction per flush; see the module docstring for locking."""

    def __init__(self, store: PgVectorStore, namespace: str):
        self.store = store
        self.namespace = namespace
        self._conn: Any = None
        self._in_transaction = False
        self._locked: set[int] = set()
        self._open: dict[int, PgVectorStage] = {}
        self._closed = False
        self._broken: str | None = None
        self._row_next = self._row_end = 0
        self._rows_written = 0
        with store._errors("opening a write session"):
            self._conn = store._pool.getconn()

    # ------------------------------------------------------------------ plumbing

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        import psycopg

        if self._closed:
            raise StoreError(f"{self.store._where}: cannot {action}: the write session is closed")
        if self._broken is not None:
            raise StoreError(f"{self.store._where}: cannot {action}: {self._broken}")
        try:
            yield
        except RagloomError as exc:
            if self._conn is not None and self._conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
                # refused here after the transaction had failed (data a COPY could not take cancels the COPY,
                # and the server aborts the transaction with it): the session is over, as after a database error
                self._broken = (
                    f"an earlier call failed ({exc}) and ended this session's transaction; "
                    "the sources committed since the last flush keep their old generation"
                )
                self._rollback()
            raise
        except psycopg.Error as exc:
            lost = self._conn is None or self._conn.closed or _connection_lost(exc)
            self._broken = (
                "an earlier database error ended this session's transaction "
                f"({_pg_message(exc)}); the sources committed since the last flush keep their old generation"
            )
            self._rollback()
            what = "the connection to PostgreSQL was lost" if lost else "the database refused it"
            raise StoreError(
                f"{self.store._where}: {action} failed, {what}: {_pg_message(exc)}; the sources not yet flushed keep their old generation (retry the ingest)"
            ) from exc

    def _rollback(self) -> None:
        self._in_transaction = False
        self._locked.clear()
        try:
            if self._conn is not None and not self._conn.closed:
                self._conn.rollback()
        except Exception:  # noqa: BLE001 - the connection is already gone; the pool discards it
            pass

    def _begin(self) -> Any:
        if not self._in_transaction:
            self._conn.execute("BEGIN")
            self._in_transaction = True
        return self._conn

    _GENERATION = "SELECT CASE WHEN v >= %s THEN v ELSE setval('{s}.generations', %s) END{lock} FROM nextval('{s}.generations') v"

    def _generation(self, state: SourceState) -> int:
        """A generation number above every one handed out (crashed runs included) and ``state.next_generation``."""
        sql = self.store._sql(self._GENERATION.replace("{lock}", ""))
        return int(self._conn.execute(sql, [state.next_generation, state.next_generation]).fetchone()[0])

    def _acquire(self, stage: PgVectorStage) -> None:
        """Open the transaction, give ``stage`` its generation and take its source's lock (one round trip).

        A session that has to wait for a lock while holding others (and no other stage
        of it is writing) flushes first, so no two writers ever wait on each other.
        """
        key = source_lock_key(self.namespace, stage.source)
        conn = self._begin()
        if key in self._locked:
            if stage._generation is None:
                stage._generation = self._generation(stage.state)
            return
        if stage._generation is None:
            sql = self.store._sql(self._GENERATION.replace("{lock}", ", pg_try_advisory_xact_lock(%s)"))
            generation, locked = conn.execute(sql, [stage.state.next_generation, stage.state.next_generation, key]).fetchone()
            stage._generation = int(generation)
        else:
            locked = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", [key]).fetchone()[0]
        if not locked:
            if self._locked and not any(other._wrote for other in self._open.values() if other is not stage):
                self._commit()
                conn = self._begin()
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [key])
        self._locked.add(key)

    def _row_ids(self, count: int) -> np.ndarray:
        """``count`` fresh row ids, from blocks of the row_ids sequence reserved one nextval at a time."""
        free = self._row_end - self._row_next
        if free < count:
            blocks = -(-(count - free) // ROW_ID_BLOCK)
            starts = [
                r[0]
                for r in self._conn.execute(
                    self.store._sql("SELECT nextval('{s}.row_ids') FROM generate_series(1, %s)"), [blocks]
                ).fetchall()
            ]
            pieces = [np.arange(self._row_next, self._row_end, dtype=np.int64)]
            pieces += [np.arange(start, start + ROW_ID_BLOCK, dtype=np.int64) for start in starts]
            pool = np.concatenate(pieces)
            ids, rest = pool[:count], pool[count:]
            # keep the rest of the last block (contiguous) for the next write
            self._row_next, self._row_end = (int(rest[0]), int(rest[-1]) + 1) if len(rest) else (0, 0)
            return ids
        ids = np.arange(self._row_next, self._row_next + count, dtype=np.int64)
        self._row_next += count
        return ids

    def _commit(self) -> None:
        if self._in_transaction:
            self._conn.execute("COMMIT")
        self._in_transaction = False
        self._locked.clear()

    # ------------------------------------------------------------------ protocol

    def stage(self, source: str, state: SourceState | None = None) -> PgVectorStage:
        """Start a new generation of ``source`` (a generation number no run ever had)."""
        if state is None:
            with self._errors(f"staging {source}"):  # this session's connection: its own unflushed commits count
                state = self.store._source_states(self._conn, self.namespace, [source])[source]
        elif self._closed or self._broken is not None:
            with self._errors(f"staging {source}"):
                pass
        stage = PgVectorStage(self, source, state)
        self._open[id(stage)] = stage
        return stage

    def flush(self) -> None:
        """Commit the transaction: every source committed so far becomes durable and visible."""
        with self._errors("flushing"):
            if any(stage._wrote for stage in self._open.values()):
                return  # a stage still writing keeps the transaction open; close() commits it
            self._commit()

    def close(self) -> None:
        """Abort open stages, commit the rest, give the connection back."""
        if self._closed:
            return
        try:
            for stage in list(self._open.values()):
                stage.abort()
            if self._broken is None:
                self.flush()
        finally:
            self._closed = True
            if self._in_transaction:
                self._rollback()
            if self._conn is not None:
                if self._broken is None and 0 < self.store.config.vacuum_after_rows <= self._rows_written:
                    self._vacuum()
                self.store._pool.putconn(self._conn)
                self._conn = None

    def _vacuum(self) -> None:
        """``VACUUM (ANALYZE)`` after a bulk write: without it the new postings' heap pages are read
        one by one for every keyword query until autovacuum comes round (SciFact: 7.4 → 2.8 ms of
        server CPU per query). A failure only costs that speed: the rows are committed."""
        import psycopg

        conn = self._conn
        autocommit = conn.autocommit  # the pool's connections are autocommit ones: give it back as it came
        try:
            conn.autocommit = True
            for table in ("chunks", "postings") if self.store.config.keyword else ("chunks",):
                conn.execute(self.store._sql(f"VACUUM (ANALYZE, SKIP_LOCKED) {{s}}.{table}"))
        except psycopg.Error as exc:
            _log.warning("%s: VACUUM after a bulk write failed (%s); autovacuum will do it", self.store._where, _pg_message(exc))
        finally:
            try:
                conn.autocommit = autocommit
            except psycopg.Error:
                pass

    def _drop(self) -> None:
        """End the session without committing (its store is closing)."""
        if self._closed:
            return
        self._closed = True
        self._open.clear()
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self.store._pool.putconn(self._conn)
                self._conn = None

    def __enter__(self) -> PgVectorSession:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close()
            return
        try:
            self.close()
        except StoreError:
            _log.warning("closing a write session after an error failed", exc_info=True)


class PgVectorStage:
    """A new generation of one source, staged in the session's transaction."""

    def __init__(self, session: PgVectorSession, source: str, state: SourceState):
        self.source = source
        self.state = state
        self._session = session
        self._generation: int | None = None  # taken with the source's lock by the first write (saves a round trip)
        self._keep: set[str] = set()
        self._carried: set[str] = set()
        self._postings: list[Postings] = []
        self._buffered = 0
        self._wrote = False
        self._done = False

    @property
    def generation(self) -> int:
        """This stage's generation number (above every one ever handed out for the source)."""
        if self._generation is None:
            with self._session._errors(f"staging {self.source}"):
                self._generation = self._session._generation(self.state)
        return self._generation

    def _check(self, action: str) -> None:
        if self._done:
            raise StoreError(f"cannot {action}: the stage of {self.source} (generation {self._generation}) is already closed")

    def _start(self) -> Any:
        """The session's connection inside its transaction, holding this source's lock."""
        session = self._session
        if not self._wrote:
            session._acquire(self)
            self._wrote = True
        return session._conn

    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """COPY the chunks (binary) and their BM25 postings into the transaction."""
        self._check("write")
        array = check_write(chunks, vectors)
        _check_sources(self.source, chunks)
        if not chunks:
            return
        session, store = self._session, self._session.store
        with session._errors(f"writing {len(chunks)} chunks of {self.source}"):
            store._ensure_dimension(int(array.shape[1]), session._conn)
            conn = self._start()
            normalized = normalize_rows(array)
            row_ids = session._row_ids(len(chunks))
            session._rows_written += len(chunks)
            cursor = conn.cursor()
            with cursor.copy(store._copy_chunks_sql) as copy:
                # one COPY, sent in parts: the server stores part k while the next part is analysed and laid out
                copy.write(binary.COPY_HEADER)
                for first in range(0, len(chunks), _COPY_PART):
                    part = slice(first, first + _COPY_PART)
                    copy.write(self._copy_part(chunks[part], row_ids[part], normalized[part]))
                copy.write(binary.COPY_TRAILER)
            if self._buffered >= _POSTINGS_BUFFER:
                self._copy_postings(cursor)

    def _copy_part(self, chunks: Sequence[Chunk], row_ids: np.ndarray, vectors: np.ndarray) -> memoryview:
        """The COPY rows of ``chunks`` (without header and trailer); their postings buffered for the commit."""
        session, store = self._session, self._session.store
        # rows of another source_type get no postings (keyword search never sees them) and length 0
        texts = [c.text if c.source_type == DOCUMENT_SOURCE_TYPE else "" for c in chunks]
        if store.config.keyword:
            found, lengths = postings(store._analyzer, store._term_keys, session.namespace, texts, row_ids)
            if len(found):
                # small sources: the postings ride along with the commit statement (two round trips fewer)
                self._postings.append(found)
                self._buffered += len(found)
        else:
            lengths = np.zeros(len(chunks), dtype=np.int64)
        data = _chunk_rows(chunks, session.namespace, self.generation, row_ids, lengths, vectors)
        return memoryview(data)[len(binary.COPY_HEADER) : len(data) - len(binary.COPY_TRAILER)]

    def _copy_postings(self, cursor: Any) -> None:
        """COPY the buffered postings (binary, built in numpy)."""
        if not self._postings:
            return
        data = Postings.concat(self._postings).copy_data()
        self._postings, self._buffered = [], 0
        with cursor.copy(
            self._session.store._sql("COPY {s}.postings (term_key, row_id, tf, dl) FROM STDIN (FORMAT BINARY)")
        ) as copy:
            copy.write(data)

    def keep(self, document_ids: Collection[str]) -> None:
        """Documents whose stored chunks stay as they are."""
        self._check("keep documents")
        self._keep.update(document_ids)

    def update_metadata(self, chunks: Sequence[Chunk]) -> None:
        """Copy stored chunks (vector, text, postings) into this generation with new metadata."""
        self._check("update metadata")
        _check_sources(self.source, chunks)
        if not chunks:
            return
        session, store = self._session, self._session.store
        with session._errors(f"updating the metadata of {len(chunks)} chunks of {self.source}"):
            conn = self._start()
            row_ids = session._row_ids(len(chunks))
            copied = conn.execute(
                store._sql(
                    "WITH u AS (SELECT * FROM unnest(%(ids)s::text[], %(rows)s::bigint[], %(idx)s::int[], %(starts)s::bigint[], "
                    "%(ends)s::bigint[], %(meta)s::jsonb[], %(tags)s::text[], %(ch)s::text[], %(mh)s::text[]) "
                    "AS u(chunk_id, row_id, chunk_index, start_offset, end_offset, metadata, tags, content_hash, metadata_hash)), "
                    "old AS (SELECT DISTINCT ON (c.chunk_id) c.* FROM {s}.chunks c JOIN u USING (chunk_id) "
                    "WHERE c.namespace = %(ns)s AND c.source = %(source)s AND c.generation <> %(gen)s ORDER BY c.chunk_id, c.row_id DESC), "
                    "ins AS (INSERT INTO {s}.chunks (row_id, namespace, source, generation, document_id, chunk_id, chunk_index, text, "
                    "start_offset, end_offset, metadata, tags, content_hash, metadata_hash, doc_length, vector, source_type) "
                    "SELECT u.row_id, old.namespace, old.source, %(gen)s, old.document_id, old.chunk_id, u.chunk_index, old.text, "
                    "u.start_offset, u.end_offset, u.metadata, coalesce(string_to_array(u.tags, chr(31)), ARRAY[]::text[]), u.content_hash, u.metadata_hash, old.doc_length, old.vector, old.source_type "
                    "FROM u JOIN old USING (chunk_id) RETURNING row_id), "
                    "post AS (INSERT INTO {s}.postings (term_key, row_id, tf, dl) SELECT p.term_key, u.row_id, p.tf, p.dl "
                    "FROM u JOIN old USING (chunk_id) JOIN {s}.postings p ON p.row_id = old.row_id) "
                    "SELECT count(*) FROM ins"
                ),
                {
                    "ids": [c.id for c in chunks],
                    "rows": row_ids.tolist(),
                    "idx": [c.index for c in chunks],
                    "starts": [c.start for c in chunks],
                    "ends": [c.end for c in chunks],
                    "meta": [json.dumps(c.metadata, ensure_ascii=False, default=str) for c in chunks],
                    "tags": ["\x1f".join(c.tags) if c.tags else None for c in chunks],
                    "ch": [c.content_hash for c in chunks],
                    "mh": [c.metadata_hash for c in chunks],
                    "ns": session.namespace,
                    "source": self.source,
                    "gen": self.generation,
                },
            ).fetchone()[0]
            if copied != len({c.id for c in chunks}):
                raise StoreError(
                    f"update_metadata of {self.source}: {len(chunks) - copied} chunk id(s) are not stored for this source"
                )
        self._carried.update(c.document_id for c in chunks)

    def commit(self) -> int:
        """Drop the rest of the source in the transaction; visible when the session flushes."""
        self._check("commit")
        session, store = self._session, self._session.store
        try:
            with session._errors(f"committing {self.source}"):
                conn = self._start()
                buffered = Postings.concat(self._postings) if self._postings else None
                self._postings, self._buffered = [], 0
                # one statement: the snapshot is taken before the deletes, so the survivors are
                # the rows of this generation and of the kept documents
                removed = conn.execute(
                    store._sql(
                        "WITH gone AS (DELETE FROM {s}.chunks c WHERE c.namespace = %(ns)s AND c.source = %(source)s "
                        "AND c.generation <> %(gen)s AND NOT (c.document_id = ANY(%(keep)s::text[])) RETURNING c.row_id, c.document_id), "
                        "p AS (DELETE FROM {s}.postings p USING gone WHERE p.row_id = gone.row_id), "
                        "ins AS (INSERT INTO {s}.postings (term_key, row_id, tf, dl) "
                        "SELECT * FROM unnest(%(pt)b::bigint[], %(pr)b::bigint[], %(ptf)b::real[], %(pdl)b::real[])), "
                        "n AS (SELECT count(*) AS chunks, coalesce(sum(doc_length), 0) AS total FROM {s}.chunks c "
                        "WHERE c.namespace = %(ns)s AND c.source = %(source)s AND c.source_type = 'document' "
                        "AND (c.generation = %(gen)s OR c.document_id = ANY(%(keep)s::text[]))), "
                        "u AS (INSERT INTO {s}.sources AS t (namespace, source, generation, chunks, total_length) "
                        "SELECT %(ns)s, %(source)s, %(gen)s, n.chunks, n.total FROM n ON CONFLICT (namespace, source) DO UPDATE "
                        "SET generation = excluded.generation, chunks = excluded.chunks, total_length = excluded.total_length) "
                        "SELECT count(*) FILTER (WHERE NOT (document_id = ANY(%(carried)s::text[]))) FROM gone"
                    ),
                    {
                        "ns": session.namespace,
                        "source": self.source,
                        "gen": self.generation,
                        "keep": sorted(self._keep),
                        "carried": sorted(self._carried),
                        **_postings_params(buffered),
                    },
                ).fetchone()[0]
        finally:
            self._done = True
            self._wrote = False
            session._open.pop(id(self), None)
        return int(removed)

    def abort(self) -> None:
        """Delete this stage's rows from the transaction; the old generation stays whole."""
        if self._done:
            return
        session = self._session
        self._done = True
        self._postings, self._buffered = [], 0
        session._open.pop(id(self), None)
        if not self._wrote or session._broken is not None or session._closed:
            return
        self._wrote = False
        try:
            with session._errors(f"aborting {self.source}"):
                session._conn.execute(
                    session.store._sql(
                        "WITH gone AS (DELETE FROM {s}.chunks WHERE namespace = %s AND source = %s AND generation = %s RETURNING row_id) "
                        "DELETE FROM {s}.postings p USING gone WHERE p.row_id = gone.row_id"
                    ),
                    [session.namespace, self.source, self.generation],
                )
        except StoreError:
            _log.warning("aborting %s failed; its rows go with the rolled-back transaction", self.source, exc_info=True)


_POSTINGS_BUFFER = 200_000  # postings held for the commit statement before a COPY writes them
_COPY_PART = 256  # chunks per part of a write's COPY (the server stores one part while the next is prepared)
ROW_ID_BLOCK = 4096  # the row_ids sequence's increment: one nextval reserves this many ids


def _check_sources(source: str, chunks: Sequence[Chunk]) -> None:
    stray = next((c.source for c in chunks if c.source != source), None)
    if stray is not None:
        raise StoreError(f"a chunk of {stray!r} was staged for the source {source!r}")


def _named(where: str, count: int) -> str:
    """Turn the ``%s`` placeholders of a filter into ``%(fN)s`` (the BM25 query binds by name)."""
    parts = where.split("%s")
    if len(parts) != count + 1:
        raise StoreError("internal error: filter placeholders do not match their parameters")
    return "".join(part + (f"%(f{i})s" if i < count else "") for i, part in enumerate(parts))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


_JSONB_EMPTY = b"\x01{}"


def _chunk_rows(
    chunks: Sequence[Chunk], namespace: str, generation: int, row_ids: np.ndarray, lengths: np.ndarray, vectors: np.ndarray
) -> bytes:
    """The binary COPY data of ``chunks`` (columns in the order of ``_COPY_COLUMNS``), laid out in numpy."""
    n = len(chunks)
    try:
        return binary.copy_data(
            [
                binary.fixed(row_ids, ">i8"),
                binary.same(namespace.encode(), n),
                binary.same(chunks[0].source.encode(), n),
                binary.same(int(generation).to_bytes(8, "big", signed=True), n),
                binary.varying([c.document_id.encode() for c in chunks]),
                binary.varying([c.id.encode() for c in chunks]),
                binary.fixed(np.fromiter((c.index for c in chunks), dtype=np.int64, count=n), ">i4"),
                binary.varying([c.text.encode() for c in chunks]),
                binary.fixed(np.fromiter((c.start for c in chunks), dtype=np.int64, count=n), ">i8"),
                binary.fixed(np.fromiter((c.end for c in chunks), dtype=np.int64, count=n), ">i8"),
                binary.varying([b"\x01" + _dumps(c.metadata).encode() if c.metadata else _JSONB_EMPTY for c in chunks]),
                binary.varying([binary.text_array(c.tags) for c in chunks]),
                binary.varying([c.content_hash.encode() for c in chunks]),
                binary.varying([c.metadata_hash.encode() for c in chunks]),
                binary.fixed(lengths, ">i4"),
                binary.vectors(vectors),
                binary.varying([c.source_type.encode() for c in chunks]),
            ]
        )
    except UnicodeEncodeError as exc:
        raise StoreError(f"a chunk of {chunks[0].source!r} holds text that is not valid Unicode ({exc.reason})") from exc


def _configure(conn: Any) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)
    int8_dumper, float4_dumper = _array_dumpers()
    conn.adapters.register_dumper(Int8Array, int8_dumper)
    conn.adapters.register_dumper(Float4Array, float4_dumper)


@functools.cache
def _array_dumpers() -> tuple[type, type]:
    """psycopg dumpers passing :class:`Int8Array` / :class:`Float4Array` bytes through as binary parameters."""
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class Int8ArrayDumper(Dumper):
        format = Format.BINARY
        oid = 1016  # int8[]

        def dump(self, obj: Any) -> bytes:
            return bytes(obj.data)

    class Float4ArrayDumper(Int8ArrayDumper):
        oid = 1021  # float4[]

    return Int8ArrayDumper, Float4ArrayDumper


class Int8Array:
    """An ``int8[]`` parameter already in PostgreSQL's binary format (built in numpy)."""

    __slots__ = ("data",)

    def __init__(self, values: np.ndarray):
        self.data = binary.array(values, binary.INT8_OID, ">i8")


class Float4Array:
    """A ``float4[]`` parameter already in PostgreSQL's binary format (built in numpy)."""

    __slots__ = ("data",)

    def __init__(self, values: np.ndarray):
        self.data = binary.array(values, binary.FLOAT4_OID, ">f4")


def _postings_params(buffered: Postings | None) -> dict[str, Any]:
    """The commit statement's postings parameters (``pt``, ``pr``, ``ptf``, ``pdl``)."""
    if buffered is None:
        empty = np.zeros(0)
        return {"pt": Int8Array(empty), "pr": Int8Array(empty), "ptf": Float4Array(empty), "pdl": Float4Array(empty)}
    return {
        "pt": Int8Array(buffered.terms),
        "pr": Int8Array(buffered.rows),
        "ptf": Float4Array(buffered.tfs),
        "pdl": Float4Array(buffered.lengths),
    }


def _pg_message(exc: Exception) -> str:
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    return (primary or str(exc) or type(exc).__name__).strip().splitlines()[0]
