"""HNSW: recall against exact search, the side file (checked, reconciled, rebuilt), files of earlier versions."""

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
    # the index is derived data beside the file, never inside it
    assert Path(str(path) + ".hnsw").stat().st_size > 0
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM duckdb_indexes()").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM ragloom_meta WHERE key = 'hnsw'").fetchone()[0] == 0
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


def _self_found(store: DuckDBStore, embedder: HashEmbedder, texts: list[str]) -> float:
    """Share of texts whose own chunk is the top HNSW hit."""
    return sum(store.search(NS, embedder.embed_query(t), top_k=1)[0].text == t for t in texts) / len(texts)


def test_side_file_is_checked_and_rebuilt_when_it_does_not_match(tmp_path: Path) -> None:
    embedder = HashEmbedder(HashEmbedderConfig(dim=32))
    config = DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0)
    path, side = tmp_path / "h.duckdb", tmp_path / "h.duckdb.hnsw"
    with DuckDBStore(config, path=path) as store:
        _fill(store, embedder, 6, 20)
        store.search(NS, embedder.embed_query("lamp"), top_k=1)
        assert store._db.hnsw.opened["source"] == "built"
    probes = _texts(120, 1)[::7]

    def opened(config: DuckDBStoreConfig = config) -> str:
        with DuckDBStore(config, path=path) as store:
            assert _self_found(store, embedder, probes) >= 0.95
            return str(store._db.hnsw.opened["source"])

    assert opened() == "side file"
    good = side.read_bytes()
    damaged = bytearray(good)
    damaged[len(damaged) // 2] ^= 0xFF
    for broken in (bytes(damaged), good[: len(good) // 2], b"", b"not an index"):
        side.write_bytes(broken)
        assert opened() == "built"  # never handed to the graph loader: rebuilt, and saved again
        assert side.read_bytes() != broken
    assert opened(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0, m=8)) == "built"  # other graph parameters
    # a side file of another store with the same row ids but other vectors cannot answer for this one
    other = tmp_path / "other.duckdb"
    with DuckDBStore(config, path=other) as store:
        texts = _texts(120, 5)
        with store.session(NS) as session:
            for s in range(6):
                chunks = make_chunks(f"/doc{s}.md", 20, texts=texts[s * 20 : (s + 1) * 20])
                stage = session.stage(f"/doc{s}.md")
                stage.write(chunks, embedder.embed_documents(texts[s * 20 : (s + 1) * 20]))
                stage.commit()
        store.search(NS, embedder.embed_query("lamp"), top_k=1)
    side.write_bytes((tmp_path / "other.duckdb.hnsw").read_bytes())
    assert opened() == "built"
    assert not list(tmp_path.glob("*.tmp"))


def test_reopen_after_changes_reconciles_instead_of_rebuilding(tmp_path: Path) -> None:
    embedder = HashEmbedder(HashEmbedderConfig(dim=32))
    config = DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0)
    path = tmp_path / "h.duckdb"
    with DuckDBStore(config, path=path) as store:
        _fill(store, embedder, 10, 20)
        store.search(NS, embedder.embed_query("lamp"), top_k=1)
    saved = (tmp_path / "h.duckdb.hnsw").read_bytes()
    with DuckDBStore(path=path) as store:  # an exact-index process replaces a source: the side file is not touched
        texts = [f"replacement text number {i} about a lamp" for i in range(20)]
        with store.session(NS) as session:
            stage = session.stage("/doc3.md")
            stage.write(make_chunks("/doc3.md", 20, texts=texts), embedder.embed_documents(texts))
            stage.commit()
    assert (tmp_path / "h.duckdb.hnsw").read_bytes() == saved
    with DuckDBStore(config, path=path) as store:
        assert _self_found(store, embedder, texts) == 1.0
        assert store._db.hnsw.opened["source"] == "side file" and store._db.hnsw.opened["added"] == 20
        hits = store.search(NS, embedder.embed_query("lamp"), top_k=200)
        assert len(hits) == 200 and "/doc3.md" in {h.source for h in hits}
        assert not any(h.source == "/doc3.md" and not h.text.startswith("replacement") for h in hits)


_LEGACY = """
import os, sys, duckdb
from ragloom_duckdb.database import extension_path
path = sys.argv[1]
con = duckdb.connect(path)
con.execute("LOAD '" + extension_path("vss") + "'")
con.execute("SET hnsw_enable_experimental_persistence = true")
# what ragloom-duckdb did before: the vss index and its marker inside the file
con.execute("CREATE INDEX chunks_hnsw ON chunks USING HNSW (vector) WITH (metric = 'cosine', M = 16, ef_construction = 128)")
con.execute("INSERT INTO ragloom_meta VALUES ('hnsw', 'chunks_hnsw')")
con.execute("CHECKPOINT")
# a committed change that only the WAL holds, touching the index, then a crash
con.execute("UPDATE sources SET generation = generation WHERE source = '/doc0.md'")
con.execute("DELETE FROM chunks WHERE source = '/doc9.md'")
con.execute("UPDATE sources SET generation = 0 WHERE source = '/doc9.md'")
os._exit(0)
"""


def test_file_with_a_persisted_vss_index_of_an_earlier_version_opens_and_answers(tmp_path: Path) -> None:
    import subprocess
    import sys

    embedder = HashEmbedder(HashEmbedderConfig(dim=32))
    path = tmp_path / "legacy.duckdb"
    with DuckDBStore(path=path) as store:
        _fill(store, embedder, 10, 20)
    subprocess.run([sys.executable, "-c", _LEGACY, str(path)], check=True)
    assert Path(f"{path}.wal").exists()
    config = DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0)
    probes = _texts(200, 1)[:180:9]  # sources 0-8
    with DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0, read_only=True), path=path) as store:
        assert store.count(NS) == 180
        assert _self_found(store, embedder, probes) >= 0.95
    with DuckDBStore(config, path=path) as store:  # the first read-write open drops the old index
        assert store.count(NS) == 180 and "/doc9.md" not in store.sources(NS)
        assert _self_found(store, embedder, probes) >= 0.95
        texts = ["a new source after the migration"] * 2
        with store.session(NS) as session:
            stage = session.stage("/new.md")
            stage.write(make_chunks("/new.md", 2, texts=texts), embedder.embed_documents(texts))
            stage.commit()
        assert store.search(NS, embedder.embed_query(texts[0]), top_k=1)[0].source == "/new.md"
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM duckdb_indexes()").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM ragloom_meta WHERE key = 'hnsw'").fetchone()[0] == 0
    finally:
        con.close()
    with DuckDBStore(config, path=path) as store:
        assert store.count(NS) == 182
        assert _self_found(store, embedder, probes) >= 0.95
