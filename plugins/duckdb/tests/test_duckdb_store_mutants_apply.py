"""The DuckDB store's opening steps and write transaction beyond the shared contract: a foreign file named in the
refusal, an earlier version's index inside the file dropped by a writable open only, the HNSW side file and the
options it is built with, and metadata updates (values without a JSON type, values that are not valid Unicode,
chunk ids the file does not hold) (written against the surviving mutants of ``store.py``)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import attrs
import duckdb
import pytest
from duckdb_writes import NS
from duckdb_writes import commit_source as _commit
from duckdb_writes import seeded_vectors as _vectors

from ragloom.plugin import SourceState, StoreError
from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "store.duckdb"


def _listed(store: DuckDBStore) -> dict[str, dict]:
    return {c.id: c.metadata for b in store.iter_chunks(NS) for c in b}


# ---------------------------------------------------------------------- opening


def test_a_duckdb_file_of_other_tables_is_refused_naming_the_file(path: Path) -> None:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE other (x INTEGER)")
    con.close()
    with pytest.raises(StoreError) as info:
        DuckDBStore(path=path)
    assert str(info.value) == f"{path} is a DuckDB file but not a ragloom store (tables: other); point [store] path at a new file"


def _legacy_index(path: Path) -> tuple[int, int]:
    """(indexes on chunks, 'hnsw' markers) in the file, read by DuckDB itself."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        indexes = con.execute("SELECT count(*) FROM duckdb_indexes() WHERE table_name = 'chunks'").fetchone()[0]
        markers = con.execute("SELECT count(*) FROM ragloom_meta WHERE key = 'hnsw'").fetchone()[0]
    finally:
        con.close()
    return int(indexes), int(markers)


def test_an_earlier_versions_index_in_the_file_is_left_by_a_read_only_open_and_dropped_by_a_writable_one(path: Path) -> None:
    """Files of earlier versions held an index on chunks and an 'hnsw' marker in ragloom_meta: a read-only open reads
    the file as it is (it cannot change it), the first writable open drops both and checkpoints the change."""
    with DuckDBStore(path=path) as store:
        chunks = _commit(store, "/a.md", 3, seed=1)
    con = duckdb.connect(str(path))
    con.execute("CREATE INDEX chunks_legacy ON chunks (row_id)")
    con.execute("INSERT INTO ragloom_meta VALUES ('hnsw', 'chunks_legacy')")
    con.close()
    assert _legacy_index(path) == (1, 1)
    with DuckDBStore(DuckDBStoreConfig(path=str(path), read_only=True)) as store:
        assert store.count(NS) == 3
        assert store.search(NS, _vectors(1, 1)[0], top_k=1)[0].chunk_id == chunks[0].id
    assert _legacy_index(path) == (1, 1)
    with DuckDBStore(path=path) as store:
        assert store.count(NS) == 3
        cursor = store._cursor()
        assert cursor.execute("SELECT count(*) FROM duckdb_indexes() WHERE table_name = 'chunks'").fetchone()[0] == 0
        assert cursor.execute("SELECT count(*) FROM ragloom_meta WHERE key = 'hnsw'").fetchone()[0] == 0
        assert not Path(f"{path}.wal").exists() or Path(f"{path}.wal").stat().st_size == 0  # checkpointed at once
        _commit(store, "/b.md", 2, seed=2)
        assert store.count(NS) == 5
    assert _legacy_index(path) == (0, 0)


# ---------------------------------------------------------------------- the HNSW side file


def _hnsw_store(path: Path, **options: int) -> DuckDBStore:
    settings = {"m": 8, "ef_construction": 40, "ef_search": 24, **options}
    return DuckDBStore(DuckDBStoreConfig(path=str(path), index="hnsw", hnsw_min_chunks=0, **settings))


def test_the_hnsw_side_file_is_reused_only_with_the_options_it_was_built_with(path: Path) -> None:
    """The graph is saved beside the file (<path>.hnsw) with its m and ef_construction (not usearch's defaults 16
    and 128): a store opened with the same options loads it (and its search width is the configured ef_search), one
    with another m or ef_construction builds a new graph."""
    side = Path(f"{path}.hnsw")
    with _hnsw_store(path) as store:
        chunks = _commit(store, "/a.md", 60, seed=1)
        query = _vectors(60, 1)[7]
        assert store.plan(NS) == "hnsw"
        assert store.search(NS, query, top_k=1)[0].chunk_id == chunks[7].id
        assert store._db.hnsw.opened["source"] == "built"
        assert side.stat().st_size > 0
    with _hnsw_store(path) as store:
        assert store.search(NS, query, top_k=1)[0].chunk_id == chunks[7].id
        assert store._db.hnsw.opened["source"] == "side file" and store._db.hnsw.opened["added"] == 0
    for other in ({"m": 12}, {"ef_construction": 50}):
        with _hnsw_store(path, **other) as store:
            assert store.search(NS, query, top_k=1)[0].chunk_id == chunks[7].id
            assert store._db.hnsw.opened["source"] == "built", other


def test_the_hnsw_build_runs_on_the_configured_threads(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build of 1000 rows or more adds them on the store's ``threads`` (DuckDB's thread count), not on usearch's
    default of every core (threads=0). The real usearch graph is built; its add calls are only recorded."""
    from usearch.index import Index

    calls: list[tuple[int, int]] = []
    add = Index.add

    def recording_add(self: Index, keys: object, vectors: object, **kwargs: object) -> object:
        calls.append((len(vectors), kwargs.get("threads", 0)))  # type: ignore[arg-type]
        return add(self, keys, vectors, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Index, "add", recording_add)
    with DuckDBStore(DuckDBStoreConfig(path=str(path), index="hnsw", hnsw_min_chunks=0, threads=3)) as store:
        chunks = _commit(store, "/a.md", 1000, seed=1)
        assert store.search(NS, _vectors(1000, 1)[5], top_k=1)[0].chunk_id == chunks[5].id
    assert calls == [(1000, 3)]


# ---------------------------------------------------------------------- metadata updates


def _update(store: DuckDBStore, chunks: list, **metadata: object) -> None:
    """A new generation of /a.md carrying ``chunks`` with ``metadata`` (the stored vectors kept)."""
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.update_metadata([attrs.evolve(c, metadata=dict(metadata), metadata_hash="meta-2") for c in chunks])
        stage.commit()


def test_updated_metadata_without_a_json_type_is_stored_as_its_text(path: Path) -> None:
    """As written rows: a date or a path in new metadata is stored as its text (json default=str), not refused."""
    with DuckDBStore(path=path) as store:
        chunks = _commit(store, "/a.md", 2, seed=1)
        assert len(store.search(NS, _vectors(1, 1)[0], top_k=2)) == 2  # the mirror, loaded before the update
        _update(store, chunks, when=datetime.date(2024, 1, 2), where=PurePosixPath("/x/y"))
        expected = {"when": "2024-01-02", "where": "/x/y"}
        assert _listed(store) == {c.id: expected for c in chunks}
        assert [r.metadata for r in store.search(NS, _vectors(1, 1)[0], top_k=2)] == [expected, expected]
    with DuckDBStore(path=path) as store:
        assert [r.metadata for r in store.search(NS, _vectors(1, 1)[0], top_k=2)] == [expected, expected]


def test_metadata_that_is_not_valid_unicode_is_refused_naming_the_store(path: Path) -> None:
    """A lone surrogate in metadata (or text, or a tag) cannot be stored as UTF-8 text: written or updated, the commit
    is a StoreError naming the store and the source (not a raw UnicodeEncodeError), and the source stays as it was."""
    with DuckDBStore(path=path) as store:
        with pytest.raises(StoreError) as written:
            _commit(store, "/b.md", 1, seed=2, metadata={"k": "a\ud800b"})
        assert str(written.value).startswith(f"DuckDB store {path}: committing /b.md failed: a value does not fit its column (")
        assert "surrogates not allowed" in str(written.value)
        for other in ({"texts": ["a\udc00"]}, {"tags": ("t\ud800",)}):  # the same for text and tags
            with pytest.raises(StoreError, match=r"committing /b\.md failed: a value does not fit its column \(.*surrogates not allowed"):
                _commit(store, "/b.md", 1, seed=2, **other)
        assert store.count(NS) == 0
        chunks = _commit(store, "/a.md", 2, seed=1, metadata={"k": "v"})
        with pytest.raises(StoreError) as updated:
            _update(store, chunks, k="a\ud800b")
        assert str(updated.value).startswith(f"DuckDB store {path}: committing /a.md failed: a value does not fit its column (")
        assert store.sources(NS) == ["/a.md"]
        assert _listed(store) == {c.id: c.metadata for c in chunks}
        assert store.source_states(NS, ["/a.md"])["/a.md"].generation == 1


def test_an_update_of_chunk_ids_the_file_does_not_hold_is_refused_with_the_count(path: Path) -> None:
    """update_metadata with a chunk id of a stored document that the file does not hold: the commit fails with how many
    of the updated chunks are missing, and the source keeps its old generation and metadata."""
    with DuckDBStore(path=path) as store:
        three = make_chunks("/a.md", 3)
        _commit(store, "/a.md", 2, seed=1)  # chunks 0 and 1 of the document; chunk 2 never stored
        with pytest.raises(StoreError) as info:
            _update(store, [three[0], three[2], three[1]], k="new")
        assert str(info.value) == "update_metadata: 1 of 3 chunks are not stored"
        assert store.source_states(NS, ["/a.md"])["/a.md"].generation == 1
        assert _listed(store) == {c.id: c.metadata for c in three[:2]}


def test_an_update_in_a_store_without_chunks_is_refused_too(path: Path) -> None:
    """A state naming a document the store does not hold (the store never had a chunk): the update is refused as in a
    store with chunks, instead of committing the source with nothing in it."""
    with DuckDBStore(path=path) as store:
        chunks = make_chunks("/a.md", 2)
        state = SourceState(generation=1, next_generation=2, documents={chunks[0].document_id: "hash-1"})
        with pytest.raises(StoreError) as info:
            with store.session(NS) as session:
                stage = session.stage("/a.md", state)
                stage.update_metadata(chunks)
                stage.commit()
        assert str(info.value) == "update_metadata: 2 of 2 chunks are not stored"
        assert store.source_states(NS, ["/a.md"])["/a.md"] == SourceState()
        assert store.dimension() is None and store.count(NS) == 0
