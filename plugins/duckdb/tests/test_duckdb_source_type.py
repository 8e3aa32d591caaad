"""source_type in the DuckDB store: rows of other kinds in the same table, and the upgrade of schema-2 files."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest

from ragloom import Pipeline, StoreError
from ragloom.filters import parse_filter
from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig
from ragloom_duckdb.store import SCHEMA_VERSION

NS = "t"
DATA = Path(__file__).parent / "data"


def _write(store: DuckDBStore, source: str, texts: list[str], seed: int) -> list[str]:
    chunks = make_chunks(source, len(texts), texts=texts)
    with store.session(NS) as session:
        stage = session.stage(source)
        stage.write(chunks, np.random.default_rng(seed).standard_normal((len(texts), 8)).astype(np.float32))
        stage.commit()
    return [c.id for c in chunks]


def _insert_memory_row(path: Path, *, source: str, generation: int, vector: list[float], text: str) -> None:
    """What an application sharing the file does: one row of its own kind, written with plain SQL."""
    con = duckdb.connect(str(path))
    try:
        row_id = con.execute("SELECT coalesce(max(row_id), -1) + 1 FROM chunks").fetchone()[0]
        con.execute(
            "INSERT INTO chunks (row_id, namespace, source, document_id, chunk_id, chunk_index, generation, text, "
            "start_offset, end_offset, metadata, tags, content_hash, vector, metadata_hash, source_type) "
            "VALUES (?, ?, ?, 'mem', 'mem:0', 0, ?, ?, 0, 10, '{}', [], 'h', ?, '', 'memory')",
            [row_id, NS, source, generation, text, vector],
        )
        if not con.execute("SELECT count(*) FROM sources WHERE namespace = ? AND source = ?", [NS, source]).fetchone()[0]:
            con.execute("INSERT INTO sources VALUES (?, ?, ?, ?)", [NS, source, generation, generation])
    finally:
        con.close()


def test_new_files_store_the_source_type_of_each_chunk(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with DuckDBStore(path=path) as store:
        _write(store, "/a.md", ["lamp one"], seed=1)
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT source_type FROM chunks").fetchall() == [("document",)]
        assert con.execute("SELECT value FROM ragloom_meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    finally:
        con.close()
    assert SCHEMA_VERSION == 3


def test_rows_of_another_source_type_written_with_sql_are_never_returned(tmp_path: Path) -> None:
    path = tmp_path / "shared.duckdb"
    with DuckDBStore(path=path) as store:
        ids = _write(store, "/a.md", ["lamp manual", "warranty terms"], seed=2)
        generation = store.source_states(NS, ["/a.md"])["/a.md"].generation
    # one memory row inside a document source's visible generation, one in a source of its own
    query = np.random.default_rng(2).standard_normal(8).astype(np.float32)
    _insert_memory_row(path, source="/a.md", generation=generation, vector=query.tolist(), text="lamp remembered")
    _insert_memory_row(path, source="agent:42", generation=1, vector=query.tolist(), text="lamp agent note")
    for read_only in (False, True):
        with DuckDBStore(DuckDBStoreConfig(read_only=read_only), path=path) as store:
            assert sorted(r.chunk_id for r in store.search(NS, query, top_k=10)) == sorted(ids)
            assert all(r.text != "lamp remembered" for r in store.search(NS, query, top_k=10, filter=parse_filter({"source": "/a.md"})))
            assert [r.chunk_id for r in store.keyword_search(NS, "lamp", top_k=10)] == [ids[0]]
            assert store.sources(NS) == ["/a.md"]
            assert store.count(NS) == 2 and store.stats(NS)["chunks"] == 2 and store.stats(NS)["sources"] == 1
            assert store.source_counts(NS) == {"/a.md": 2}
            assert set(store.source_states(NS, ["/a.md"])["/a.md"].documents) == {ids[0].split(":")[0]}
            with pytest.raises(StoreError):
                store.get_vectors(NS, ["mem:0"])
    # a pipeline over the shared file answers from the documents only, and re-ingesting leaves the scope intact
    with DuckDBStore(path=path) as store:
        pipeline = Pipeline.builder().namespace(NS).store(store).embedder("hash", dim=8).retriever("bm25", top_k=10).build()
        assert [r.text for r in pipeline.query("lamp")] == ["lamp manual"]
        assert pipeline.stats()["sources"] == 1
        _write(store, "/b.md", ["lamp spare parts"], seed=3)
        assert sorted(r.text for r in pipeline.query("lamp")) == ["lamp manual", "lamp spare parts"]


def test_a_schema_2_file_written_by_the_previous_version_is_upgraded_in_place(tmp_path: Path) -> None:
    # schema-v2.duckdb.gz was written by ragloom-duckdb with SCHEMA_VERSION = 2 (see data/README.md)
    path = tmp_path / "v2.duckdb"
    with gzip.open(DATA / "schema-v2.duckdb.gz", "rb") as packed, open(path, "wb") as out:
        shutil.copyfileobj(packed, out)
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert "source_type" not in [row[0] for row in con.execute("DESCRIBE chunks").fetchall()]
        old_rows = con.execute("SELECT count(*) FROM chunks").fetchone()[0]
    finally:
        con.close()
    with pytest.raises(StoreError, match="without read_only"):
        DuckDBStore(DuckDBStoreConfig(read_only=True), path=path)
    with DuckDBStore(path=path) as store:
        assert store.stats("default")["schema_version"] == 3
        before = sorted(store.sources("default"))
        assert before == ["/corpus/lamp.md", "/corpus/warranty.md"]
        assert [r.source for r in store.keyword_search("default", "warranty", top_k=1)] == ["/corpus/warranty.md"]
        count = store.count("default")
        assert count == old_rows
        _write(store, "/new.md", ["fresh lamp"], seed=4)
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT DISTINCT source_type FROM chunks").fetchall() == [("document",)]
        assert con.execute("SELECT value FROM ragloom_meta WHERE key = 'schema_version'").fetchone() == ("3",)
    finally:
        con.close()
    _insert_memory_row(path, source="agent:1", generation=1, vector=[1.0] + [0.0] * 7, text="warranty memory")
    with DuckDBStore(DuckDBStoreConfig(read_only=True), path=path) as store:
        assert store.count("default") == count and store.count(NS) == 1
        assert [r.text for r in store.keyword_search(NS, "warranty", top_k=5)] == []


def test_rows_of_another_source_type_written_after_the_caches_loaded_stay_hidden(tmp_path: Path) -> None:
    import attrs

    with DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=1), path=tmp_path / "warm.duckdb") as store:
        ids = _write(store, "/a.md", ["lamp manual", "warranty terms"], seed=5)
        query = np.random.default_rng(5).standard_normal(8).astype(np.float32)
        assert store.keyword_search(NS, "lamp", top_k=5) and store.search(NS, query, top_k=5)  # mirror, HNSW graph, BM25 loaded
        memory = [attrs.evolve(c, source_type="memory") for c in make_chunks("/agent", 2, texts=["lamp memory", "warranty memory"])]
        with store.session(NS) as session:
            stage = session.stage("/agent")
            stage.write(memory, np.tile(query, (2, 1)))  # the query's own direction: the best match, were it visible
            stage.commit()
        assert sorted(r.chunk_id for r in store.search(NS, query, top_k=10)) == sorted(ids)
        assert store.plan(NS) == "hnsw"
        assert [r.chunk_id for r in store.keyword_search(NS, "lamp", top_k=10)] == [ids[0]]
        assert store.count(NS) == 2 and store.sources(NS) == ["/a.md"]
