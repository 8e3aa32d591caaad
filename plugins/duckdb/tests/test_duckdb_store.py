"""DuckDB-specific behaviour: discovery, config, schema checks, read-only, processes, threads."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import duckdb
import numpy as np
import pytest

import ragloom
from ragloom import Pipeline, StoreError
from ragloom.filters import parse_filter
from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig
from ragloom_duckdb.store import SCHEMA_VERSION

NS = "t"


def _commit(store: DuckDBStore, source: str, count: int, seed: int, **kwargs: object) -> None:
    chunks = make_chunks(source, count, **kwargs)  # type: ignore[arg-type]
    _write(store, chunks, np.random.default_rng(seed).standard_normal((count, 8)).astype(np.float32))


def _write(store: DuckDBStore, chunks: list, vectors: np.ndarray, namespace: str = NS, keep: tuple[str, ...] = ()) -> int:  # type: ignore[type-arg]
    with store.session(namespace) as session:
        stage = session.stage(chunks[0].source)
        stage.write(chunks, vectors)
        stage.keep(keep)
        return stage.commit()


def _rows(store: DuckDBStore) -> int:
    """Every row of the chunks table, visible or not."""
    return int(store._cursor().execute("SELECT count(*) FROM chunks").fetchone()[0])


def test_plugin_is_discovered() -> None:
    info = ragloom.Registry().get("store", "duckdb")
    assert info.distribution == "ragloom-duckdb"
    assert info.config is DuckDBStoreConfig


def test_toml_path_is_relative_to_the_config_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "lamp.md").write_text("The Lumen Lamp glows warm amber at night.", encoding="utf-8")
    (project / "ragloom.toml").write_text(
        textwrap.dedent(
            """
            namespace = "kb"
            [[sources]]
            path = "docs"
            [embedder]
            type = "hash"
            dim = 64
            [store]
            type = "duckdb"
            path = "data/kb.duckdb"
            """
        ),
        encoding="utf-8",
    )
    with Pipeline.from_toml(project / "ragloom.toml") as pipeline:
        assert pipeline.store.path == str(project / "data" / "kb.duckdb")
        assert pipeline.ingest().chunks == 1
    assert (project / "data" / "kb.duckdb").exists()
    with Pipeline.from_toml(project / "ragloom.toml") as pipeline:
        results = pipeline.query("amber lamp")
        assert [r.source for r in results] == [str(project / "docs" / "lamp.md")]
        assert pipeline.ingest().embedded == 0
        stats = pipeline.stats()["store"]
        assert stats["chunks"] == 1 and stats["sources"] == 1 and stats["file_size"] > 0


def test_memory_path_keeps_nothing_and_is_private() -> None:
    one = DuckDBStore(DuckDBStoreConfig(path=":memory:"))
    two = DuckDBStore(DuckDBStoreConfig(path=":memory:"))
    _commit(one, "/a.md", 3, 1)
    assert one.count(NS) == 3 and two.count(NS) == 0
    assert one.stats(NS)["file_size"] == 0
    one.close()
    two.close()


def test_two_store_objects_on_one_file_share_state(tmp_path: Path) -> None:
    path = tmp_path / "shared.duckdb"
    with DuckDBStore(path=path) as one, DuckDBStore(path=path) as two:
        _commit(one, "/a.md", 2, 1)
        assert two.search(NS, np.ones(8, dtype=np.float32), top_k=5)
        _commit(two, "/b.md", 3, 2)
        assert one.count(NS) == 5
        assert len(one.search(NS, np.ones(8, dtype=np.float32), top_k=10)) == 5


def test_injection_through_keys_and_values_changes_nothing(tmp_path: Path) -> None:
    evil_key = "x') OR 1=1; DROP TABLE chunks; --"
    evil_value = "'; DELETE FROM chunks; --"
    with DuckDBStore(path=tmp_path / "s.duckdb") as store:
        _commit(store, "/evil.md", 1, 1, metadata={evil_key: evil_value})
        _commit(store, "/plain.md", 2, 2, metadata={"x": "y"})
        for spec in ({evil_key: evil_value}, {"x": evil_value}, {evil_key: {"$in": [evil_value, "a"]}}, {"source": evil_value}):
            store.search(NS, np.ones(8, dtype=np.float32), top_k=10, filter=parse_filter(spec))
        hits = store.search(NS, np.ones(8, dtype=np.float32), top_k=10, filter=parse_filter({evil_key: evil_value}))
        assert [h.source for h in hits] == ["/evil.md"]
        assert store.delete(NS, parse_filter({"x": evil_value})) == 0
        assert store.count(NS) == 3
        assert store.delete(NS, parse_filter({evil_key: evil_value})) == 1
        assert store.count(NS) == 2


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 1, 1)
    con = duckdb.connect(str(path))
    con.execute("UPDATE ragloom_meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(StoreError, match=r"schema version 99.*newer"):
        DuckDBStore(path=path)
    # the refused file is left untouched
    con = duckdb.connect(str(path))
    assert con.execute("SELECT count(*) FROM chunks").fetchone()[0] == 1
    con.close()


@pytest.mark.parametrize("damaged", ["abc", "0", "-4", ""])
def test_a_damaged_dimension_is_refused_naming_the_file(tmp_path: Path, damaged: str) -> None:
    path = tmp_path / "s.duckdb"
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 1, 1)
    con = duckdb.connect(str(path))
    con.execute("UPDATE ragloom_meta SET value = ? WHERE key = 'dimension'", [damaged])
    con.close()
    with pytest.raises(StoreError, match=rf"s\.duckdb: unreadable vector dimension '{damaged}' in ragloom_meta"):
        DuckDBStore(path=path)


def test_foreign_files_are_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE invoices (id INTEGER)")
    con.close()
    with pytest.raises(StoreError, match="not a ragloom store"):
        DuckDBStore(path=other)
    foreign = tmp_path / "foreign.duckdb"
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE ragloom_meta (key VARCHAR, value VARCHAR)")
    con.execute("INSERT INTO ragloom_meta VALUES ('schema', 'someone-else'), ('schema_version', '1')")
    con.close()
    with pytest.raises(StoreError, match="foreign schema"):
        DuckDBStore(path=foreign)
    text = tmp_path / "notes.duckdb"
    text.write_text("not a database", encoding="utf-8")
    with pytest.raises(StoreError, match="notes.duckdb"):
        DuckDBStore(path=text)


def test_read_only(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with pytest.raises(StoreError, match="no such file"):
        DuckDBStore(DuckDBStoreConfig(read_only=True), path=path)
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 3, 1, texts=["amber lamp", "blue lamp", "green tree"])
    with DuckDBStore(DuckDBStoreConfig(read_only=True), path=path) as reader:
        assert reader.count(NS) == 3
        assert len(reader.search(NS, np.ones(8, dtype=np.float32), top_k=2)) == 2
        assert [r.text for r in reader.keyword_search(NS, "tree", top_k=3)] == ["green tree"]
        with pytest.raises(StoreError, match="read-only"):
            _commit(reader, "/b.md", 1, 2)
        with pytest.raises(StoreError, match="read-only"):
            reader.delete(NS, None)
        assert reader.count(NS) == 3


_HOLDER = """
import sys
from ragloom_duckdb import DuckDBStore
store = DuckDBStore(path=sys.argv[1])
print("open", flush=True)
sys.stdin.read()
"""


def test_second_process_gets_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "held.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with pytest.raises(StoreError) as info:
            DuckDBStore(path=path)
        message = str(info.value)
        assert str(path) in message and "read_only" in message and "one process" in message
        assert "pgvector" not in message  # hints name only what exists
    finally:
        holder.communicate("", timeout=60)
    with DuckDBStore(path=path) as store:  # released with the process
        assert store.count(NS) == 0


def test_threads_query_while_one_ingests(tmp_path: Path) -> None:
    store = DuckDBStore(path=tmp_path / "s.duckdb")
    sources = [f"/s{i}.md" for i in range(5)]
    for i, source in enumerate(sources):
        _commit(store, source, 3, i, texts=[f"lamp {source} a", f"lamp {source} b", f"lamp {source} c"])
    errors: list[str] = []
    stop = threading.Event()

    def reader(kind: str) -> None:
        query = np.ones(8, dtype=np.float32)
        while not stop.is_set():
            try:
                if kind == "vector":
                    results = store.search(NS, query, top_k=100)
                elif kind == "keyword":
                    results = store.keyword_search(NS, "lamp", top_k=100)
                else:
                    results = store.search(NS, query, top_k=100, filter=parse_filter({"order": {"$gte": 0}}))
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(repr(exc))
                return
            per_source = {s: sum(r.source == s for r in results) for s in sources}
            if set(per_source.values()) != {3}:
                errors.append(f"{kind}: {per_source}")

    threads = [threading.Thread(target=reader, args=(kind,)) for kind in ("vector", "keyword", "filtered")]
    for thread in threads:
        thread.start()
    try:
        for round_ in range(6):
            for i, source in enumerate(sources):
                _commit(store, source, 3, 10 * round_ + i, texts=[f"lamp {source} r{round_} {j}" for j in range(3)])
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        store.close()
    assert not errors, errors[:5]


def test_stats_and_repr(tmp_path: Path) -> None:
    with DuckDBStore(path=tmp_path / "s.duckdb") as store:
        _commit(store, "/a.md", 4, 1)
        store.checkpoint()
        stats = store.stats(NS)
        assert stats["chunks"] == 4 and stats["sources"] == 1 and stats["documents"] == 1
        assert stats["dimension"] == 8 and stats["file_size"] > 0 and stats["schema_version"] == SCHEMA_VERSION == 3
        assert "s.duckdb" in repr(store)
    with pytest.raises(StoreError, match="closed"):
        store.count(NS)


def test_aborting_one_source_keeps_the_other_sources_of_its_group(tmp_path: Path) -> None:
    # both sources share the session's transaction: aborting one must not drop the other
    with DuckDBStore(path=tmp_path / "kb.duckdb") as store:
        vectors = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
        with store.session(NS) as session:
            a, b = session.stage("/a.md"), session.stage("/b.md")
            a.write(make_chunks("/a.md", 3), vectors)
            b.write(make_chunks("/b.md", 3), vectors)
            a.abort()
            b.commit()
        assert store.count(NS) == 3
        assert store.sources(NS) == ["/b.md"]
        # rows of /c.md that a flush made durable (invisible) are removed by aborting /c.md
        with store.session(NS) as session:
            c, d = session.stage("/c.md"), session.stage("/d.md")
            c.write(make_chunks("/c.md", 2), vectors[:2])
            d.write(make_chunks("/d.md", 2), vectors[:2])
            d.commit()
            session.flush()
            assert store.count(NS) == 5 and _rows(store) == 7
            c.abort()
        assert store.count(NS) == 5 and _rows(store) == 5
        assert store.source_states(NS, ["/c.md"])["/c.md"].next_generation > c.generation


def test_a_delete_between_writes_survives_an_abort(tmp_path: Path) -> None:
    with DuckDBStore(path=tmp_path / "kb.duckdb") as store:
        _commit(store, "/keep.md", 2, seed=1)
        _commit(store, "/gone.md", 3, seed=2)
        assert store.search(NS, np.ones(8, dtype=np.float32), top_k=10)  # loads the mirror
        with store.session(NS) as session:
            stage = session.stage("/new.md")
            stage.write(make_chunks("/new.md", 2), np.ones((2, 8), dtype=np.float32))
            session.flush()
            assert store.delete(NS, parse_filter({"source": "/gone.md"})) == 3
            stage.abort()
        assert store.count(NS) == 2
        assert {r.source for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=10)} == {"/keep.md"}
        assert _rows(store) == 2
    with DuckDBStore(path=tmp_path / "kb.duckdb") as store:
        assert store.sources(NS) == ["/keep.md"]


def test_closing_a_second_store_object_keeps_the_first_ones_session(tmp_path: Path) -> None:
    path = tmp_path / "kb.duckdb"
    with DuckDBStore(path=path) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 3), np.ones((3, 8), dtype=np.float32))
            DuckDBStore(path=path).close()  # same file, same process: shares the database
            stage.commit()
        assert store.count(NS) == 3
    with DuckDBStore(path=path) as store:
        assert store.count(NS) == 3


def test_many_sources_share_one_transaction_per_flush(tmp_path: Path) -> None:
    # a flush of 200 new sources is one DuckDB transaction, not two per source
    with DuckDBStore(path=tmp_path / "g.duckdb") as store:
        _commit(store, "/seed.md", 1, seed=0)
        commits = []
        original = store._transaction

        def counting(cursor):  # type: ignore[no-untyped-def]
            commits.append(1)
            return original(cursor)

        store._transaction = counting  # type: ignore[method-assign]
        with store.session(NS) as session:
            for i in range(200):
                stage = session.stage(f"/s{i}.md", store.source_states(NS, [f"/s{i}.md"])[f"/s{i}.md"])
                stage.write(make_chunks(f"/s{i}.md", 2), np.ones((2, 8), dtype=np.float32))
                stage.commit()
        assert len(commits) == 1
        assert store.count(NS) == 401


def test_a_stage_left_open_by_an_earlier_opening_never_shows(tmp_path: Path) -> None:
    path = tmp_path / "two.duckdb"
    rng = np.random.default_rng(8)
    with DuckDBStore(path=path) as store:
        session = store.session("n")
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 2, texts=["lamp one", "lamp two"]), rng.standard_normal((2, 8)).astype(np.float32))
        session.flush()  # the rows reach the file, invisible; the process then ends without committing
    with DuckDBStore(path=path) as store:
        assert store.count("n") == 0 and _rows(store) == 2
        state = store.source_states("n", ["/a.md"])["/a.md"]
        assert not state.exists and state.next_generation > stage.generation
        assert _write(store, make_chunks("/a.md", 1, part="b", texts=["lamp three"]), rng.standard_normal((1, 8)).astype(np.float32), "n") == 0
        assert [r.text for r in store.keyword_search("n", "lamp", top_k=10)] == ["lamp three"]
        assert _rows(store) == 1


def test_a_version_1_file_is_upgraded_on_open(tmp_path: Path) -> None:
    path = tmp_path / "v1.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE ragloom_meta (key VARCHAR NOT NULL, value VARCHAR NOT NULL)")
    con.execute("INSERT INTO ragloom_meta VALUES ('schema', 'ragloom-duckdb'), ('schema_version', '1'), ('dimension', '8')")
    con.execute("CREATE TABLE sources (namespace VARCHAR NOT NULL, source VARCHAR NOT NULL, generation BIGINT NOT NULL, max_generation BIGINT NOT NULL)")
    con.execute(
        "CREATE TABLE chunks (row_id BIGINT NOT NULL, namespace VARCHAR NOT NULL, source VARCHAR NOT NULL, "
        "document_id VARCHAR NOT NULL, chunk_id VARCHAR NOT NULL, chunk_index INTEGER NOT NULL, generation BIGINT NOT NULL, "
        "text VARCHAR NOT NULL, start_offset BIGINT NOT NULL, end_offset BIGINT NOT NULL, metadata JSON, tags VARCHAR[], "
        "content_hash VARCHAR NOT NULL, vector FLOAT[8] NOT NULL)"
    )
    con.execute(
        "CREATE VIEW visible_chunks AS SELECT c.* FROM chunks c JOIN sources s "
        "ON c.namespace = s.namespace AND c.source = s.source AND c.generation = s.generation"
    )
    con.execute("INSERT INTO sources VALUES ('t', '/old.md', 1, 1)")
    con.execute("INSERT INTO chunks VALUES (0, 't', '/old.md', 'd', 'd:0', 0, 1, 'old lamp', 0, 8, '{}', [], 'h', [1,0,0,0,0,0,0,0])")
    con.close()
    with pytest.raises(StoreError, match="without read_only"):
        DuckDBStore(DuckDBStoreConfig(read_only=True), path=path)
    with DuckDBStore(path=path) as store:
        assert store.stats(NS)["schema_version"] == 3
        state = store.source_states(NS, ["/old.md"])["/old.md"]
        assert state.documents == {"d": "h"} and state.metadata == {"d": ""}
        _commit(store, "/new.md", 2, seed=3, metadata_hash="m")
        assert store.source_states(NS, ["/new.md"])["/new.md"].metadata == {make_chunks("/new.md", 1)[0].document_id: "m"}
        assert {r.source for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=10)} == {"/old.md", "/new.md"}
    with DuckDBStore(DuckDBStoreConfig(read_only=True), path=path) as store:
        assert store.count(NS) == 3


def test_vectors_are_stored_without_float_compression(tmp_path: Path) -> None:
    # ALP/ALPRD analysis made bulk inserts and checkpoints slower and embedding files larger
    path = tmp_path / "v.duckdb"
    rng = np.random.default_rng(5)
    with DuckDBStore(path=path) as store:
        _write(store, make_chunks("/a.md", 3000), rng.standard_normal((3000, 16)).astype(np.float32), "n")
        store.checkpoint()
    con = duckdb.connect(str(path), read_only=True)
    try:
        methods = {
            row[0]
            for row in con.execute(
                "SELECT DISTINCT compression FROM pragma_storage_info('chunks') WHERE column_name = 'vector' AND segment_type = 'FLOAT'"
            ).fetchall()
        }
    finally:
        con.close()
    assert methods and not {m.upper() for m in methods} & {"ALP", "ALPRD"}, methods


def test_first_and_repeated_commits_keep_the_read_caches_in_step(tmp_path: Path) -> None:
    # the vector and keyword caches, loaded before the writes, must see exactly the committed rows
    rng = np.random.default_rng(7)
    with DuckDBStore(path=tmp_path / "c.duckdb") as store:
        _write(store, make_chunks("/seed.md", 2, texts=["seed one", "seed two"]), rng.standard_normal((2, 8)).astype(np.float32), "n")
        assert len(store.search("n", rng.standard_normal(8).astype(np.float32), top_k=10)) == 2  # loads the vector cache
        assert store.keyword_search("n", "seed", top_k=10)  # builds the keyword index
        with store.session("n") as session:
            a, b = session.stage("/a.md"), session.stage("/b.md")
            a.write(make_chunks("/a.md", 3, texts=["alpha lamp", "alpha desk", "alpha wall"]), rng.standard_normal((3, 8)).astype(np.float32))
            b.write(make_chunks("/b.md", 2, texts=["beta lamp", "beta desk"]), rng.standard_normal((2, 8)).astype(np.float32))
            a.write(make_chunks("/a.md", 1, part="extra", texts=["alpha extra"]), rng.standard_normal((1, 8)).astype(np.float32))
            assert a.commit() == 0
            session.flush()
            assert {r.source for r in store.keyword_search("n", "alpha", top_k=10)} == {"/a.md"}
            assert len(store.keyword_search("n", "alpha", top_k=10)) == 4
            assert store.keyword_search("n", "beta", top_k=10) == []  # /b.md is still staged
            b.commit()
        assert len(store.keyword_search("n", "beta", top_k=10)) == 2
        assert store.count("n") == 2 + 4 + 2
        # a second generation of /a.md keeps one document and replaces the others
        state = store.source_states("n", ["/a.md"])["/a.md"]
        keep = next(iter(state.documents))
        kept = sum(1 for r in store.keyword_search("n", "alpha", top_k=10) if r.document_id == keep)
        removed = _write(store, make_chunks("/a.md", 1, part="new", texts=["alpha fresh"]), rng.standard_normal((1, 8)).astype(np.float32), "n", (keep,))
        assert removed == 4 - kept
        texts = sorted(r.text for r in store.keyword_search("n", "alpha", top_k=10))
        assert "alpha fresh" in texts and len(texts) == store.count("n") - 4
        hits = store.search("n", rng.standard_normal(8).astype(np.float32), top_k=100)
        assert len(hits) == store.count("n") and len({h.chunk_id for h in hits}) == len(hits)
    with DuckDBStore(path=tmp_path / "c.duckdb") as reopened:  # the file agrees with the caches
        assert reopened.count("n") == len(hits)
        assert sorted(r.text for r in reopened.keyword_search("n", "alpha", top_k=10)) == texts


