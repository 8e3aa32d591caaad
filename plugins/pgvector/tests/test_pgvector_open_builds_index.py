"""Opening a store on a table that has grown past ``hnsw_min_chunks`` builds the HNSW index there and then."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest

from ragloom.testing import make_chunks
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

NS = "open"


def _has_index(pg: Any, schema: str) -> bool:
    return bool(pg.execute("SELECT 1 FROM pg_indexes WHERE schemaname = %s AND indexname = 'chunks_hnsw'", [schema]))


def _fill(pg: Any, schema: str, count: int) -> None:
    """``count`` chunks written by a store whose threshold is never reached (no index)."""
    with PgVectorStore(PgVectorStoreConfig(schema=schema, hnsw_min_chunks=10**9), dsn=pg.dsn) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", count), np.random.default_rng(1).standard_normal((count, 8)))
            stage.commit()
    assert not _has_index(pg, schema)


def test_a_store_opened_on_enough_rows_builds_the_index(pg: Any, pg_schema: str, caplog: pytest.LogCaptureFixture) -> None:
    _fill(pg, pg_schema, 12)
    with caplog.at_level(logging.INFO, logger="ragloom_pgvector.store"):
        store = PgVectorStore(PgVectorStoreConfig(schema=pg_schema, hnsw_min_chunks=12), dsn=pg.dsn)
    with store:
        assert _has_index(pg, pg_schema)  # built by the open itself, before any search or build_index()
        assert store.plan(NS) == "hnsw"
    # a long build is announced with the store and the graph's settings
    announced = [r.getMessage() for r in caplog.records if "HNSW" in r.getMessage()]
    assert len(announced) == 1 and announced[0].startswith("PostgreSQL store ")
    assert announced[0].endswith(f"schema {pg_schema}: building the HNSW index (m=16, ef_construction=64)")


def test_a_store_opened_on_fewer_rows_or_for_exact_search_builds_none(pg: Any, pg_schema: str) -> None:
    _fill(pg, pg_schema, 12)
    PgVectorStore(PgVectorStoreConfig(schema=pg_schema, hnsw_min_chunks=13), dsn=pg.dsn).close()
    assert not _has_index(pg, pg_schema)
    PgVectorStore(PgVectorStoreConfig(schema=pg_schema, index="exact", hnsw_min_chunks=1), dsn=pg.dsn).close()
    assert not _has_index(pg, pg_schema)


def test_a_fresh_schema_opens_without_an_index_or_a_vector_column(pg: Any, pg_schema: str) -> None:
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema, hnsw_min_chunks=0), dsn=pg.dsn) as store:
        assert store.dimension() is None
    assert not _has_index(pg, pg_schema)


def test_a_threshold_of_one_or_none_builds_the_index_over_a_single_row(pg: Any, pg_schema: str) -> None:
    _fill(pg, pg_schema, 1)
    PgVectorStore(PgVectorStoreConfig(schema=pg_schema, hnsw_min_chunks=1), dsn=pg.dsn).close()
    assert _has_index(pg, pg_schema)


def test_a_threshold_of_zero_indexes_from_the_first_row_with_the_configured_graph(pg: Any, pg_schema: str) -> None:
    options = {"schema": pg_schema, "m": 8, "ef_construction": 32}
    with PgVectorStore(PgVectorStoreConfig(hnsw_min_chunks=1, **options), dsn=pg.dsn) as store:  # 1: built later, not here
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 1), np.ones((1, 8)))
            stage.commit()
    assert not _has_index(pg, pg_schema)
    pg.execute(f"DROP SCHEMA {pg_schema} CASCADE")
    with PgVectorStore(PgVectorStoreConfig(hnsw_min_chunks=0, index="exact", **options), dsn=pg.dsn) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 1), np.ones((1, 8)))
            stage.commit()
    assert not _has_index(pg, pg_schema)  # exact search wants no index
    pg.execute(f"DROP SCHEMA {pg_schema} CASCADE")
    with PgVectorStore(PgVectorStoreConfig(hnsw_min_chunks=0, **options), dsn=pg.dsn) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 1), np.ones((1, 8)))
            stage.commit()
    [(definition,)] = pg.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = 'chunks_hnsw'", [pg_schema])
    assert "USING hnsw (vector vector_cosine_ops)" in definition and "m='8'" in definition and "ef_construction='32'" in definition
