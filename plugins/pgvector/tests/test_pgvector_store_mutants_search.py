"""Which path a search takes and what it asks of PostgreSQL: the HNSW index answers an unfiltered search of a
namespace past ``hnsw_min_chunks`` (mutation tests of pgvector_store: the exact scan gives the same or better
results, so only the index's own scan count tells the paths apart)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ragloom.testing import make_chunks
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

NS = "paths"
DIM = 8


def _index_scans(pg: Any, store: PgVectorStore, schema: str) -> int:
    """The HNSW index's scan count once the store's connections are gone (a backend reports its counts as it exits)."""
    with store._connection() as conn:
        pids = [conn.execute("SELECT pg_backend_pid()").fetchone()[0]]
    store.close()
    for _ in range(10_000):  # until the backend has exited (and reported), not for a length of time
        if not pg.execute("SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)", [pids]):
            break
    rows = pg.execute("SELECT idx_scan FROM pg_stat_user_indexes WHERE schemaname = %s AND indexrelname = 'chunks_hnsw'", [schema])
    return int(rows[0][0])


def _store(pg: Any, schema: str) -> PgVectorStore:
    return PgVectorStore(PgVectorStoreConfig(schema=schema, hnsw_min_chunks=20, pool_min=1, pool_max=1), dsn=pg.dsn)


def _fill(pg: Any, schema: str) -> np.ndarray:
    vectors = np.random.default_rng(3).standard_normal((30, DIM)).astype(np.float32)
    store = PgVectorStore(PgVectorStoreConfig(schema=schema, hnsw_min_chunks=20), dsn=pg.dsn)
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 30), vectors)
        stage.commit()
    with store.session("few") as session:
        stage = session.stage("/b.md")
        stage.write(make_chunks("/b.md", 5), vectors[:5])
        stage.commit()
    store.build_index()
    store.close()
    return vectors


def test_an_unfiltered_search_past_the_threshold_walks_the_index(pg: Any, pg_schema: str) -> None:
    vectors = _fill(pg, pg_schema)
    store = _store(pg, pg_schema)
    assert store.plan(NS) == "hnsw"  # a store opened on an indexed schema finds the index at once
    found = store.search(NS, vectors[3], top_k=3)
    assert found[0].chunk_id == make_chunks("/a.md", 30)[3].id and len(found) == 3
    assert _index_scans(pg, store, pg_schema) >= 1


def test_exact_and_filtered_searches_leave_the_index_alone(pg: Any, pg_schema: str) -> None:
    """(A small namespace's search does send the HNSW query: its count comes back in the same round trip.)"""
    from ragloom.filters import parse_filter

    vectors = _fill(pg, pg_schema)
    store = _store(pg, pg_schema)
    assert store.plan("few") == "exact" and store.plan(NS, exact=True) == "exact"
    assert len(store.search(NS, vectors[3], top_k=3, exact=True)) == 3
    assert len(store.search(NS, vectors[3], top_k=3, filter=parse_filter({"source": "/a.md"}))) == 3
    assert _index_scans(pg, store, pg_schema) == 0
