"""Options of the ``pgvector`` store."""

from __future__ import annotations

import re
from typing import Literal

import attrs

from ragloom.plugin import BM25Config, Secret

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _check_schema(_instance: object, _attribute: object, value: str) -> None:
    if not _IDENTIFIER.match(value):
        raise ValueError(f"schema must be a lower-case SQL identifier (letters, digits, _; at most 63), got {value!r}")


@attrs.frozen(kw_only=True)
class PgVectorStoreConfig:
    """``[store]`` options of ``type = "pgvector"``.

    ``dsn`` names the environment variable holding the connection string
    (``postgresql://user:password@host/db``); a password is never written in
    TOML. ``schema`` is the PostgreSQL schema holding ragloom's tables (one
    schema serves every namespace: namespaces are a column). ``index =
    "hnsw"`` answers unfiltered searches of a namespace holding at least
    ``hnsw_min_chunks`` chunks through a pgvector HNSW index
    (``vector_cosine_ops``, ``m``, ``ef_construction``; ``ef_search`` per query
    with ``SET LOCAL``); smaller, filtered or ``exact=True`` searches scan
    exactly. The index is built when a store opens on a table holding at least
    ``hnsw_min_chunks`` chunks, or by ``PgVectorStore.build_index()`` (after a
    bulk load); from then on every insert maintains it. ``hnsw_min_chunks = 0``
    creates it with the table. ``keyword`` keeps BM25
    postings in the database (the ``keyword_search`` capability).
    ``prepared_statements = false`` for PgBouncer in transaction mode.
    ``vacuum_after_rows``: a write session that wrote at least this many
    chunks ends with ``VACUUM (ANALYZE, SKIP_LOCKED)`` of the chunk and
    postings tables, so searches right after a bulk load use index-only scans
    instead of waiting for autovacuum (0: leave it to autovacuum).
    """

    dsn: Secret = attrs.field(factory=lambda: Secret("RAGLOOM_PG_DSN"))
    schema: str = attrs.field(default="ragloom", validator=_check_schema)
    index: Literal["exact", "hnsw"] = attrs.field(default="hnsw", validator=attrs.validators.in_(("exact", "hnsw")))
    m: int = attrs.field(default=16, validator=[attrs.validators.ge(2), attrs.validators.le(100)])
    ef_construction: int = attrs.field(default=64, validator=[attrs.validators.ge(4), attrs.validators.le(1000)])
    ef_search: int = attrs.field(default=200, validator=[attrs.validators.ge(1), attrs.validators.le(1000)])
    hnsw_min_chunks: int = attrs.field(default=20_000, validator=attrs.validators.ge(0))
    keyword: bool = True
    bm25: BM25Config = attrs.field(factory=BM25Config)
    pool_min: int = attrs.field(default=1, validator=attrs.validators.ge(0))
    pool_max: int = attrs.field(default=8, validator=attrs.validators.ge(1))
    connect_timeout: float = attrs.field(default=10.0, validator=attrs.validators.gt(0))
    create_extension: bool = True
    prepared_statements: bool = True
    vacuum_after_rows: int = attrs.field(default=1_000, validator=attrs.validators.ge(0))
