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
    for s in range(sources):
        part = texts[s * per_source : (s + 1) * per_source]
        chunks = make_chunks(f"/doc{s}.md", per_source, texts=part, metadata={"group": s % 3})
        store.write(NS, 1, chunks, embedder.embed_documents(part))
        store.commit_source(NS, f"/doc{s}.md", 1)


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
        generation = store.source_state(NS, "/doc0.md").next_generation
        store.write(NS, generation, chunks, embedder.embed_documents(texts))
        assert store.commit_source(NS, "/doc0.md", generation) == 20
    with DuckDBStore(config, path=path) as store:
        assert store.plan(NS) == "hnsw"
        results = store.search(NS, embedder.embed_query("brand new lamp text"), top_k=5)
        assert [r.source for r in results[:3]] == ["/doc0.md"] * 3
        assert store.count(NS) == 83
        assert sum(r.source == "/doc0.md" for r in store.search(NS, embedder.embed_query("lamp"), top_k=83)) == 3
