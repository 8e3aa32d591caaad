"""Which path a search takes: the HNSW index answers an unfiltered search of a namespace of at least
``hnsw_min_chunks`` chunks, and only the index is read (mutation tests of pgvector_store: the exact scan returns
the same or better rows, so only PostgreSQL's scan counts of the chunks table tell the paths apart)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ragloom.filters import parse_filter
from ragloom.testing import make_chunks
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

NS = "paths"
DIM = 8


def _open(pg: Any, schema: str, name: str, **options: Any) -> PgVectorStore:
    """A store whose connections carry ``application_name`` = ``name`` (to wait for them to exit)."""
    dsn = pg.dsn + ("&" if "?" in pg.dsn else "?") + f"application_name={name}"
    return PgVectorStore(PgVectorStoreConfig(schema=schema, **options), dsn=dsn)


def _scans(pg: Any, store: PgVectorStore, schema: str, name: str) -> tuple[int, int]:
    """(scans of the HNSW index, every other scan of the chunks table) once the store's backends exited:
    a backend reports its counts as it exits."""
    store.close()
    for _ in range(100_000):  # until they have exited, not for a length of time
        if not pg.execute("SELECT 1 FROM pg_stat_activity WHERE application_name = %s", [name]):
            break
    [(hnsw,)] = pg.execute(
        "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE schemaname = %s AND indexrelname = 'chunks_hnsw'", [schema]
    )
    [(table,)] = pg.execute(
        "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE schemaname = %s AND relname = 'chunks'", [schema]
    )
    return int(hnsw), int(table) - int(hnsw)


def _fill(pg: Any, schema: str) -> tuple[np.ndarray, tuple[int, int]]:
    """30 chunks in NS, 5 in "few", 1 in "one", the index built; the scan counts so far."""
    vectors = np.random.default_rng(3).standard_normal((30, DIM)).astype(np.float32)
    store = _open(pg, schema, "fill", hnsw_min_chunks=20)
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 30), vectors)
        stage.commit()
    with store.session("few") as session:
        stage = session.stage("/b.md")
        stage.write(make_chunks("/b.md", 5), vectors[:5])
        stage.commit()
    with store.session("one") as session:
        stage = session.stage("/c.md")
        stage.write(make_chunks("/c.md", 1), vectors[:1])
        stage.commit()
    store.build_index()
    return vectors, _scans(pg, store, schema, "fill")


def test_an_unfiltered_search_of_a_namespace_at_the_threshold_reads_only_the_index(pg: Any, pg_schema: str) -> None:
    vectors, (hnsw, other) = _fill(pg, pg_schema)
    store = _open(pg, pg_schema, "reader", hnsw_min_chunks=30, pool_min=1, pool_max=1)  # NS holds exactly 30
    assert store.plan(NS) == "hnsw"  # a store opened on an indexed schema finds the index at once
    found = store.search(NS, vectors[3], top_k=3)
    assert found[0].chunk_id == make_chunks("/a.md", 30)[3].id and len(found) == 3
    after = _scans(pg, store, pg_schema, "reader")
    assert after[0] > hnsw and after[1] == other


def test_exact_filtered_and_small_searches_scan_the_table(pg: Any, pg_schema: str) -> None:
    vectors, (hnsw, other) = _fill(pg, pg_schema)
    store = _open(pg, pg_schema, "exact", hnsw_min_chunks=20, pool_min=1, pool_max=1)
    assert store.plan("few") == "exact" and store.plan(NS, exact=True) == "exact"
    assert len(store.search(NS, vectors[3], top_k=3, exact=True)) == 3
    assert len(store.search(NS, vectors[3], top_k=3, filter=parse_filter({"source": "/a.md"}))) == 3
    after = _scans(pg, store, pg_schema, "exact")
    assert after[0] == hnsw and after[1] >= other + 2
    # a namespace under the threshold: its count comes back with the HNSW query (one round trip), then the exact scan
    store = _open(pg, pg_schema, "small", hnsw_min_chunks=20, pool_min=1, pool_max=1)
    assert [r.chunk_id for r in store.search("few", vectors[1], top_k=2)][0] == make_chunks("/b.md", 5)[1].id
    assert _scans(pg, store, pg_schema, "small")[1] >= after[1] + 1


def test_a_namespace_of_one_chunk_is_searched_through_the_index_when_any_count_will_do(pg: Any, pg_schema: str) -> None:
    vectors, (hnsw, other) = _fill(pg, pg_schema)
    store = _open(pg, pg_schema, "one", hnsw_min_chunks=0, pool_min=1, pool_max=1)
    assert store.plan("one") == "hnsw"
    assert [r.chunk_id for r in store.search("one", vectors[0], top_k=1)] == [make_chunks("/c.md", 1)[0].id]
    after = _scans(pg, store, pg_schema, "one")
    assert after[0] > hnsw and after[1] == other


def test_keyword_search_analyses_with_the_configured_analyzer(pg: Any, pg_schema: str) -> None:
    from ragloom.analysis import AnalyzerConfig
    from ragloom.plugin import BM25Config

    config = PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=0, bm25=BM25Config(analyzer=AnalyzerConfig(stemmer="none")))
    with PgVectorStore(config, dsn=pg.dsn) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 2, texts=["the lamps glow", "a lamp"]), np.eye(2, DIM, dtype=np.float32))
            stage.commit()
        # without a stemmer "lamps" and "lamp" are two terms (the default english stemmer would make them one)
        assert [r.text for r in store.keyword_search(NS, "lamps", top_k=5)] == ["the lamps glow"]
        assert [r.text for r in store.keyword_search(NS, "lamp", top_k=5)] == ["a lamp"]
