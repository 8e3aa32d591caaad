"""HNSW through the vss extension: recall against exact search, persistence, fallbacks."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np

from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.filters import parse_filter
from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig

NS = "h"
WORDS = (
    "lamp light warm cold amber blue battery charge cable dimmer timer schedule sleep wake app phone "
    "bulb socket switch colour red green night day sensor motion brightness mode reading party sunset "
    "sunrise warranty return shipping box manual safety heat glass metal wood desk floor wall"
).split()


def _texts(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=12)) for _ in range(count)]


def _fill(store: DuckDBStore, embedder: HashEmbedder, sources: int, per_source: int) -> None:
    texts = _texts(sources * per_source, 1)
    with store.session(NS) as session:
        for s in range(sources):
            part = texts[s * per_source : (s + 1) * per_source]
            chunks = make_chunks(f"/doc{s}.md", per_source, texts=part, metadata={"group": s % 3})
            stage = session.stage(f"/doc{s}.md")
            stage.write(chunks, embedder.embed_documents(part))
            stage.commit()


def test_hnsw_recall_against_exact(tmp_path: Path) -> None:
    embedder = HashEmbedder(HashEmbedderConfig(dim=64))
    config = DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=1000)
    path = tmp_path / "h.duckdb"
    with DuckDBStore(config, path=path) as store:
        _fill(store, embedder, 20, 100)
        assert store.plan(NS) == "hnsw"
        assert store.plan(NS, parse_filter({"group": 1})) == "exact"
        assert store.plan("elsewhere") == "exact"
        exact = DuckDBStore(DuckDBStoreConfig(), path=path)  # same file, same process: shared database
        queries = embedder.embed_documents(_texts(40, 2))
        overlap = 0
        for query in queries:
            approximate = {r.chunk_id for r in store.search(NS, query, top_k=10)}
            truth = [r.chunk_id for r in exact.search(NS, query, top_k=10)]
            overlap += len(approximate & set(truth))
        exact.close()
        recall = overlap / (10 * len(queries))
        assert recall >= 0.95, recall
        filtered = store.search(NS, queries[0], top_k=10, filter=parse_filter({"group": 1}))
        assert len(filtered) == 10 and all(r.metadata["group"] == 1 for r in filtered)
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM ragloom_meta WHERE key = 'hnsw'").fetchone()[0] == 1
    finally:
        con.close()


def test_hnsw_survives_reopen_and_reingest(tmp_path: Path) -> None:
    embedder = HashEmbedder(HashEmbedderConfig(dim=32))
    config = DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0, m=8, ef_construction=64, ef_search=32)
    path = tmp_path / "h.duckdb"
    with DuckDBStore(config, path=path) as store:
        _fill(store, embedder, 5, 20)
    # opened without asking for hnsw: the file's index is still loaded and maintained
    with DuckDBStore(path=path) as store:
        texts = ["brand new lamp text"] * 3
        chunks = make_chunks("/doc0.md", 3, texts=texts)
        with store.session(NS) as session:
            stage = session.stage("/doc0.md")
            stage.write(chunks, embedder.embed_documents(texts))
            assert stage.commit() == 20
    with DuckDBStore(config, path=path) as store:
        assert store.plan(NS) == "hnsw"
        results = store.search(NS, embedder.embed_query("brand new lamp text"), top_k=5)
        assert [r.source for r in results[:3]] == ["/doc0.md"] * 3
        assert store.count(NS) == 83
        assert sum(r.source == "/doc0.md" for r in store.search(NS, embedder.embed_query("lamp"), top_k=83)) == 3


def test_hnsw_recall_on_scifact_chunks_at_default_settings(tmp_path: Path) -> None:
    # real text through the hash embedder (384-d), the index at its defaults; only the size
    # threshold is lowered so the sample's few thousand chunks take the HNSW path
    from scifact_sample import hnsw_recall, load_sample

    chunks, queries = load_sample()
    assert len(chunks) > 3000
    embedder = HashEmbedder(HashEmbedderConfig(dim=384))
    defaults = DuckDBStoreConfig()
    config = DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=1000)
    assert (config.m, config.ef_construction, config.ef_search) == (defaults.m, defaults.ef_construction, defaults.ef_search)
    vectors = embedder.embed_documents([c.text for c in chunks])
    recall = hnsw_recall(tmp_path / "scifact.duckdb", chunks, vectors, embedder.embed_documents(queries), config)
    assert recall >= 0.95, recall


def test_hnsw_query_is_an_index_scan_without_a_table_scan(tmp_path: Path) -> None:
    # DuckDB's late materialization would add a semi-join over a full scan of the table
    embedder = HashEmbedder(HashEmbedderConfig(dim=32))
    with DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0), path=tmp_path / "p.duckdb") as store:
        _fill(store, embedder, 3, 20)
        store.search(NS, embedder.embed_query("lamp"), top_k=3)  # sets the query variable
        plan = store._cursor().execute(
            "EXPLAIN SELECT row_id FROM chunks ORDER BY array_cosine_distance(vector, getvariable('ragloom_query')) LIMIT 10"
        ).fetchall()[0][1]
    assert "HNSW_INDEX_SCAN" in plan or "HNSW Index" in plan
    assert "SEQ_SCAN" not in plan and "HASH_JOIN" not in plan
