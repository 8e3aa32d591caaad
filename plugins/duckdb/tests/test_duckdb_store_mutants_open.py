"""The DuckDB store's opening and a few reads beyond the shared contract: a file it cannot read fails to open with an
error naming the store and the action, the ``threads`` option reaches DuckDB, ``iter_chunks``' default batch,
values the file's schema admits but the store never writes itself (NULL metadata, a NULL vector element), and the
file size of a ``:memory:`` store (written against the surviving mutants of ``store.py``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import pytest
from duckdb_writes import DIM, NS
from duckdb_writes import commit_source as _commit
from duckdb_writes import seeded_vectors as _vectors

from ragloom.plugin import StoreError
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig
from ragloom_duckdb.database import SCHEMA_NAME, SCHEMA_VERSION


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "store.duckdb"


def _open_failure(path: Path) -> str:
    with pytest.raises(StoreError) as info:
        DuckDBStore(path=path)
    return str(info.value)


def test_a_file_the_store_cannot_read_fails_to_open_naming_the_store_and_the_action(tmp_path: Path) -> None:
    """DuckDB's own error inside the opening (a ragloom_meta table of other columns, a chunks table without row_id)
    is a StoreError "DuckDB store <path>: open failed: ...", and the refused file is released (it opens again, and
    DuckDB itself can open it for writing)."""
    meta = tmp_path / "meta.duckdb"
    con = duckdb.connect(str(meta))
    con.execute("CREATE TABLE ragloom_meta (k VARCHAR, v VARCHAR)")
    con.close()
    rows = tmp_path / "rows.duckdb"
    con = duckdb.connect(str(rows))
    con.execute("CREATE TABLE ragloom_meta (key VARCHAR, value VARCHAR)")
    con.execute(
        "INSERT INTO ragloom_meta VALUES ('schema', ?), ('schema_version', ?), ('dimension', '4')",
        [SCHEMA_NAME, str(SCHEMA_VERSION)],
    )
    con.execute("CREATE TABLE sources (namespace VARCHAR, source VARCHAR, generation BIGINT, max_generation BIGINT)")
    con.execute("CREATE TABLE chunks (id BIGINT)")
    con.close()
    for path, column in ((meta, '"key"'), (rows, '"row_id"')):
        message = _open_failure(path)
        assert message.startswith(f"DuckDB store {path}: open failed: "), message
        assert column in message, message
        assert _open_failure(path).startswith(f"DuckDB store {path}: open failed: ")  # not "already open": released
        duckdb.connect(str(path)).close()


def test_the_threads_option_reaches_duckdb_and_outlives_a_write(path: Path) -> None:
    """``threads`` is DuckDB's thread count (one more than the machine's cores: never DuckDB's own default), also
    after a write, which runs on one thread and puts the option's count back."""
    threads = (os.cpu_count() or 1) + 1
    with DuckDBStore(DuckDBStoreConfig(path=str(path), threads=threads)) as store:

        def setting() -> int:
            return int(store._cursor().execute("SELECT current_setting('threads')").fetchone()[0])

        assert setting() == threads
        _commit(store, "/a.md", 2, seed=1)
        assert setting() == threads
        assert store.count(NS) == 2
    with DuckDBStore(DuckDBStoreConfig(path=str(path), threads=1)) as store:
        assert int(store._cursor().execute("SELECT current_setting('threads')").fetchone()[0]) == 1


def test_iter_chunks_lists_1000_chunks_per_batch_by_default(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        chunks = _commit(store, "/a.md", 1001, seed=1)
        batches = list(store.iter_chunks(NS))
        assert [len(b) for b in batches] == [1000, 1]
        assert [c.id for b in batches for c in b] == [c.id for c in chunks]


def test_a_row_whose_metadata_is_null_is_listed_and_found_with_empty_metadata(path: Path) -> None:
    """The metadata column is nullable (the store writes "{}" for no metadata; another program writing into the file
    may leave it NULL): iter_chunks lists such a row with {} as searches return it, instead of failing on json.loads(None)."""
    with DuckDBStore(path=path) as store:
        chunks = _commit(store, "/a.md", 2, seed=1, metadata={"lang": "en"})
        store._cursor().execute("UPDATE chunks SET metadata = NULL WHERE chunk_id = ?", [chunks[0].id])
        listed = [c for b in store.iter_chunks(NS) for c in b]
        assert [c.id for c in listed] == [c.id for c in chunks]
        assert listed[0].metadata == {} and listed[1].metadata == {"lang": "en", "order": 1}
        found = {r.chunk_id: r.metadata for r in store.search(NS, _vectors(1, 2)[0], top_k=2)}  # the mirror, loaded now
        assert found == {chunks[0].id: {}, chunks[1].id: {"lang": "en", "order": 1}}


def test_a_null_vector_element_reads_back_as_nan(path: Path) -> None:
    """FLOAT[dim] admits NULL elements (only the array is NOT NULL): a vector another program wrote with one is read
    by get_vectors as float32 NaN there, the other elements as stored, as the mirror loads it; not refused."""
    with DuckDBStore(path=path) as store:
        chunks = _commit(store, "/a.md", 2, seed=1)
        store._cursor().execute(f"UPDATE chunks SET vector = [NULL, 1, 2, 3]::FLOAT[{DIM}] WHERE chunk_id = ?", [chunks[0].id])
        vectors = store.get_vectors(NS, [chunks[1].id, chunks[0].id])
        assert vectors.dtype == np.float32 and vectors.shape == (2, DIM)
        expected = _vectors(2, 1)[1]
        np.testing.assert_allclose(vectors[0], expected / np.linalg.norm(expected), rtol=1e-6)
        np.testing.assert_array_equal(vectors[1], np.array([np.nan, 1, 2, 3], dtype=np.float32))


def test_a_memory_store_has_no_file_size_even_beside_a_file_named_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store at ":memory:" has no file: files of that name (and its .wal) in the working folder are not counted."""
    monkeypatch.chdir(tmp_path)
    Path(":memory:").write_bytes(b"x" * 100)
    Path(":memory:.wal").write_bytes(b"y" * 10)
    with DuckDBStore(DuckDBStoreConfig(path=":memory:")) as store:
        _commit(store, "/a.md", 2, seed=1)
        stats = store.stats(NS)
        assert stats["file_size"] == 0 and stats["chunks"] == 2 and stats["path"] == ":memory:"
    assert Path(":memory:").read_bytes() == b"x" * 100
