"""The tables of a ragloom DuckDB file and the schema-version check on open.

::

    ragloom_meta(key, value)           schema name, schema version, vector dimension
    sources(namespace, source,         committed generation (0: none) and the highest
            generation, max_generation) generation ever staged
    chunks(row_id, namespace, source, document_id, chunk_id, chunk_index,
           generation, text, start_offset, end_offset,
           metadata JSON, tags VARCHAR[], content_hash, vector FLOAT[dim],
           metadata_hash, source_type)
    visible_chunks                     view: the ``document`` chunks whose generation
                                       is their source's committed one

A row is visible exactly when its generation is the committed generation of its
source, so a commit changes one ``sources`` row (plus the relabelled kept
documents) instead of updating every new row. ``chunks`` and the view are
created by the first write, when the dimension is known. Vectors are stored
L2-normalised. ``content_hash`` covers a document's text, chunker and embedder;
``metadata_hash`` its metadata and tags (schema version 2 added it: a version 1
file gains the column, empty, when opened writable). ``source_type`` says what
kind of row it is (``document`` for ingested content; schema version 3 added it
and an older file gains it, every row ``document``, when opened writable): every
read goes through ``visible_chunks``, which holds only ``document`` rows, so rows
of other kinds an application writes into the same table are never returned.
"""

from __future__ import annotations

from typing import Any

from ragloom.plugin import StoreError
from ragloom_duckdb.database import SCHEMA_NAME, SCHEMA_VERSION

CHUNK_COLUMNS = (
    "row_id",
    "namespace",
    "source",
    "document_id",
    "chunk_id",
    "chunk_index",
    "generation",
    "text",
    "start_offset",
    "end_offset",
    "metadata",
    "tags",
    "content_hash",
    "vector",
    "metadata_hash",
    "source_type",
)


def chunks_ddl(dim: int) -> str:
    """CREATE TABLE statement of ``chunks`` for vectors of ``dim`` floats."""
    return (
        "CREATE TABLE chunks (row_id BIGINT NOT NULL, namespace VARCHAR NOT NULL, source VARCHAR NOT NULL, "
        "document_id VARCHAR NOT NULL, chunk_id VARCHAR NOT NULL, chunk_index INTEGER NOT NULL, "
        "generation BIGINT NOT NULL, text VARCHAR NOT NULL, "
        "start_offset BIGINT NOT NULL, end_offset BIGINT NOT NULL, metadata JSON, tags VARCHAR[], "
        f"content_hash VARCHAR NOT NULL, vector FLOAT[{int(dim)}] NOT NULL, metadata_hash VARCHAR NOT NULL DEFAULT '', "
        "source_type VARCHAR NOT NULL DEFAULT 'document')"
    )


VISIBLE_VIEW_DDL = (
    "CREATE VIEW visible_chunks AS SELECT c.* FROM chunks c JOIN sources s "
    "ON c.namespace = s.namespace AND c.source = s.source AND c.generation = s.generation "
    "WHERE c.source_type = 'document'"
)


def _tables(cursor: Any) -> set[str]:
    rows = cursor.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' "
        "UNION ALL SELECT view_name FROM duckdb_views() WHERE database_name = current_database() AND schema_name = 'main' "
        "AND NOT internal"
    ).fetchall()
    return {row[0] for row in rows}


def open_schema(cursor: Any, path: str, *, read_only: bool) -> tuple[int | None, bool]:
    """Check (or create) the schema; return ``(dimension, has_chunks_table)``."""
    tables = _tables(cursor)
    if "ragloom_meta" not in tables:
        if tables:
            raise StoreError(
                f"{path} is a DuckDB file but not a ragloom store (tables: {', '.join(sorted(tables))}); "
                "point [store] path at a new file"
            )
        if read_only:
            return None, False
        cursor.execute("BEGIN")
        cursor.execute("CREATE TABLE ragloom_meta (key VARCHAR NOT NULL, value VARCHAR NOT NULL)")
        cursor.execute("INSERT INTO ragloom_meta VALUES ('schema', ?), ('schema_version', ?)", [SCHEMA_NAME, str(SCHEMA_VERSION)])
        cursor.execute(
            "CREATE TABLE sources (namespace VARCHAR NOT NULL, source VARCHAR NOT NULL, "
            "generation BIGINT NOT NULL, max_generation BIGINT NOT NULL)"
        )
        cursor.execute("COMMIT")
        return None, False
    meta = dict(cursor.execute("SELECT key, value FROM ragloom_meta").fetchall())
    if meta.get("schema") != SCHEMA_NAME:
        raise StoreError(f"{path}: foreign schema {meta.get('schema')!r} (expected {SCHEMA_NAME!r}); point [store] path at a new file")
    try:
        version = int(meta.get("schema_version", ""))
    except ValueError:
        raise StoreError(f"{path}: unreadable schema version {meta.get('schema_version')!r}") from None
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has schema version {version}, newer than this ragloom-duckdb understands ({SCHEMA_VERSION}); "
            "upgrade ragloom-duckdb"
        )
    if version < 1:
        raise StoreError(f"{path} has schema version {version}; re-ingest into a new file")
    if version < SCHEMA_VERSION:
        if read_only:
            raise StoreError(
                f"{path} has schema version {version}; open it once without read_only to upgrade it to {SCHEMA_VERSION}"
            )
        _upgrade(cursor, version, has_chunks="chunks" in tables)
    return _dimension(meta, path), "chunks" in tables


def _dimension(meta: dict[str, str], path: str) -> int | None:
    """The vector dimension recorded in ``ragloom_meta`` (None before the first write); a damaged entry is refused."""
    if "dimension" not in meta:
        return None
    try:
        dim = int(meta["dimension"])
    except ValueError:
        dim = 0
    if dim < 1:
        raise StoreError(f"{path}: unreadable vector dimension {meta['dimension']!r} in ragloom_meta (the file is damaged)")
    return dim


def _upgrade(cursor: Any, version: int, *, has_chunks: bool) -> None:
    """Bring an older file to :data:`SCHEMA_VERSION` in one transaction."""
    cursor.execute("BEGIN")
    if version < 2 and has_chunks:  # 2: metadata_hash beside content_hash (metadata-only updates)
        cursor.execute("ALTER TABLE chunks ADD COLUMN metadata_hash VARCHAR DEFAULT ''")
    if version < 3 and has_chunks:  # 3: source_type; every existing row is ingested content
        cursor.execute("ALTER TABLE chunks ADD COLUMN source_type VARCHAR DEFAULT 'document'")
        cursor.execute("UPDATE chunks SET source_type = 'document' WHERE source_type IS NULL")
    if has_chunks:  # the view's column list and scope follow the table
        cursor.execute("DROP VIEW visible_chunks")
        cursor.execute(VISIBLE_VIEW_DDL)
    cursor.execute("UPDATE ragloom_meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION)])
    cursor.execute("COMMIT")
