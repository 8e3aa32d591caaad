"""ragloom's tables in one PostgreSQL schema, created and migrated in order.

::

    schema_version(version, applied_at)      one row per applied migration
    meta(key, value)                         vector dimension (set by the first write)
    sources(namespace, source, generation,   committed generation (0: none), visible chunks
            chunks, total_length)            and their BM25 token count (N and avgdl of BM25)
    chunks(row_id, namespace, source, generation, document_id, chunk_id, chunk_index,
           text, start_offset, end_offset, metadata JSONB, tags TEXT[],
           content_hash, metadata_hash, doc_length, vector vector(dim),
           source_type)                      'document' for ragloom's rows (migration 2); reads see only those
    postings(term_key, row_id, tf, dl)       BM25 postings: term_key = hash(namespace, term)
    row_ids, generations                     sequences: blocks of row ids; every generation ever handed out

Namespaces are a column, not tables: a namespace costs nothing to create, one
HNSW index serves all of them and no DDL runs while ingesting. Visibility is
PostgreSQL's own: a stage's rows are inserted in the writer's transaction and
the old generation deleted in the same transaction, so readers see one or the
other. Rows of another ``source_type`` (an application's own, e.g. agent
memory) have no postings, do not count in ``sources`` and no read returns
them. ``vector`` is added by the first write (pgvector's HNSW needs a fixed
dimension).

Migrations run under a transaction-scoped advisory lock, each in order once; a
database whose schema is newer than this package is refused.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from ragloom.plugin import StoreError

SCHEMA_NAME = "ragloom-pgvector"
#: ``pg_advisory_xact_lock`` key serialising DDL (migrations, the vector column, the HNSW index).
DDL_LOCK = 0x7261676C6F6F6D  # "ragloom"

MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            "CREATE TABLE {s}.meta (key text PRIMARY KEY, value text NOT NULL)",
            "CREATE TABLE {s}.sources (namespace text NOT NULL, source text NOT NULL, generation bigint NOT NULL, "
            "chunks bigint NOT NULL DEFAULT 0, total_length bigint NOT NULL DEFAULT 0, PRIMARY KEY (namespace, source))",
            "CREATE TABLE {s}.chunks (row_id bigint PRIMARY KEY, namespace text NOT NULL, source text NOT NULL, "
            "generation bigint NOT NULL, document_id text NOT NULL, chunk_id text NOT NULL, chunk_index integer NOT NULL, "
            "text text NOT NULL, start_offset bigint NOT NULL, end_offset bigint NOT NULL, metadata jsonb NOT NULL, "
            "tags text[] NOT NULL, content_hash text NOT NULL, metadata_hash text NOT NULL, doc_length integer NOT NULL)",
            "CREATE INDEX chunks_source ON {s}.chunks (namespace, source, generation)",
            "CREATE INDEX chunks_chunk_id ON {s}.chunks (namespace, chunk_id)",
            "CREATE TABLE {s}.postings (term_key bigint NOT NULL, row_id bigint NOT NULL, tf real NOT NULL, dl real NOT NULL)",
            "CREATE INDEX postings_term ON {s}.postings (term_key) INCLUDE (row_id, tf, dl)",
            "CREATE INDEX postings_row ON {s}.postings (row_id)",
            "CREATE SEQUENCE {s}.row_ids AS bigint INCREMENT BY 4096",  # a session reserves 4096 row ids per call
            "CREATE SEQUENCE {s}.generations AS bigint",
        ],
    ),
    (
        2,
        [
            # rows an application keeps beside ragloom's (agent memory...): reads see 'document' rows only;
            # a constant default adds the column without rewriting the table
            "ALTER TABLE {s}.chunks ADD COLUMN source_type text NOT NULL DEFAULT 'document'",
        ],
    ),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


def qualified(schema: str, template: str) -> sql.Composed:
    """SQL text with ``{s}`` replaced by the quoted schema name."""
    return sql.SQL(template).format(s=sql.Identifier(schema))


def ensure_extension(cursor: Any, *, create: bool) -> None:
    """Make sure pgvector is installed in the database, or raise a StoreError saying what a DBA must run."""
    import psycopg

    row = cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is not None:
        return
    database = cursor.execute("SELECT current_database()").fetchone()[0]
    if not create:
        raise StoreError(
            f"the pgvector extension is not installed in database {database!r}; a database owner must run: "
            "CREATE EXTENSION vector;  (or set create_extension = true for a role allowed to)"
        )
    try:
        cursor.execute("SAVEPOINT ragloom_ext")
        cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        cursor.execute("RELEASE SAVEPOINT ragloom_ext")
    except psycopg.Error as exc:
        cursor.execute("ROLLBACK TO SAVEPOINT ragloom_ext")
        available = cursor.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'").fetchone()[0]
        hint = (
            "a database owner (or superuser) must run: CREATE EXTENSION vector;"
            if available
            else "the server has no pgvector package: install pgvector on the server (or use a managed PostgreSQL "
            "offering it), then run CREATE EXTENSION vector;"
        )
        raise StoreError(
            f"cannot create the pgvector extension in database {database!r} ({exc.diag.message_primary or exc}); {hint}"
        ) from exc


def migrate(cursor: Any, schema: str) -> tuple[int, int | None]:
    """Create or upgrade ragloom's tables in ``schema`` (inside the caller's transaction).

    Returns ``(schema_version, dimension)``; StoreError for a newer schema or a
    schema that is not ragloom's.
    """
    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [DDL_LOCK])
    exists = cursor.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [schema]).fetchone()
    if exists is None:
        cursor.execute(qualified(schema, "CREATE SCHEMA {s}"))
    tables = {r[0] for r in cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", [schema]).fetchall()}
    if "schema_version" not in tables:
        foreign = tables & {"meta", "sources", "chunks", "postings"}
        if foreign:
            raise StoreError(
                f"PostgreSQL schema {schema!r} holds tables ({', '.join(sorted(foreign))}) but no ragloom schema_version; "
                "choose another [store] schema"
            )
        cursor.execute(
            qualified(
                schema,
                "CREATE TABLE {s}.schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now(), package text NOT NULL)",
            )
        )
    current = cursor.execute(qualified(schema, "SELECT coalesce(max(version), 0) FROM {s}.schema_version")).fetchone()[0]
    if current > SCHEMA_VERSION:
        raise StoreError(
            f"PostgreSQL schema {schema!r} has ragloom schema version {current}, newer than this ragloom-pgvector "
            f"understands ({SCHEMA_VERSION}); upgrade ragloom-pgvector"
        )
    for version, statements in MIGRATIONS:
        if version <= current:
            continue
        for statement in statements:
            cursor.execute(qualified(schema, statement))
        cursor.execute(
            qualified(schema, "INSERT INTO {s}.schema_version (version, package) VALUES (%s, %s)"), [version, SCHEMA_NAME]
        )
    row = cursor.execute(qualified(schema, "SELECT value FROM {s}.meta WHERE key = 'dimension'")).fetchone()
    return SCHEMA_VERSION, int(row[0]) if row else None


def add_vector_column(cursor: Any, schema: str, dim: int) -> int:
    """Give ``chunks`` its ``vector(dim)`` column (first write); return the dimension now stored."""
    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [DDL_LOCK])
    row = cursor.execute(qualified(schema, "SELECT value FROM {s}.meta WHERE key = 'dimension'")).fetchone()
    if row is not None:
        return int(row[0])
    cursor.execute(
        sql.SQL("ALTER TABLE {s}.chunks ADD COLUMN vector vector({d}) NOT NULL").format(
            s=sql.Identifier(schema), d=sql.Literal(int(dim))
        )
    )
    cursor.execute(qualified(schema, "INSERT INTO {s}.meta VALUES ('dimension', %s)"), [str(int(dim))])
    return int(dim)


def hnsw_index_exists(cursor: Any, schema: str) -> bool:
    """True when ``chunks_hnsw`` exists (and is valid)."""
    row = cursor.execute(
        "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = 'chunks_hnsw'",
        [schema],
    ).fetchone()
    return bool(row and row[0])


def create_hnsw_index(cursor: Any, schema: str, *, m: int, ef_construction: int) -> None:
    """Build the HNSW index over every chunk (cosine)."""
    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [DDL_LOCK])
    if hnsw_index_exists(cursor, schema):
        return
    cursor.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS chunks_hnsw ON {s}.chunks USING hnsw (vector vector_cosine_ops) WITH (m = {m}, ef_construction = {ef})"
        ).format(s=sql.Identifier(schema), m=sql.Literal(int(m)), ef=sql.Literal(int(ef_construction)))
    )
