"""The DuckDB store's write session beyond the shared contract: the exact refusals of closed stages, closed
sessions, read-only and closed stores, and what a commit reports (written against the surviving mutants of
``session.py`` and the store's write path)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from duckdb_writes import NS
from duckdb_writes import commit_source as _commit
from duckdb_writes import seeded_vectors as _vectors

from ragloom.plugin import DimensionMismatchError, StoreError
from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "store.duckdb"


def _message(call: object) -> str:
    with pytest.raises(StoreError) as info:
        call()  # type: ignore[operator]
    return str(info.value)


def test_a_closed_stage_refuses_each_call_naming_the_action_source_and_generation(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        chunks = _commit(store, "/a.md", 2, seed=1)
        with store.session(NS) as session:
            committed = session.stage("/a.md")
            assert committed.generation == 2
            committed.keep([chunks[0].document_id])
            assert committed.commit() == 0
            aborted = session.stage("/b.md")
            aborted.abort()
            for stage, generation in ((committed, 2), (aborted, 1)):
                closed = f"the stage of {stage.source} (generation {generation}) is already closed"
                assert _message(lambda s=stage: s.write(make_chunks(s.source, 1), _vectors(1, 3))) == f"cannot write: {closed}"
                assert _message(lambda s=stage: s.keep(["x"])) == f"cannot keep documents: {closed}"
                assert _message(lambda s=stage: s.update_metadata(chunks)) == f"cannot update metadata: {closed}"
                assert _message(stage.commit) == f"cannot commit: {closed}"
                stage.abort()  # a closed stage ignores an abort
        assert store.count(NS) == 2 and store.sources(NS) == ["/a.md"]


def test_a_closed_session_refuses_stage_and_flush_and_closes_once(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        session = store.session(NS)
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 2), _vectors(2, 1))
        session.close()
        assert store.count(NS) == 0  # the open stage was aborted by close
        assert _message(lambda: session.stage("/b.md")) == "the write session is closed"
        assert _message(session.flush) == "the write session is closed"
        session.close()  # again: nothing
        with session:
            pass
        assert store.count(NS) == 0


def test_chunks_of_another_source_are_refused_by_write_and_update_metadata(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 2, seed=1)
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stray = make_chunks("/b.md", 1)
            expected = "a chunk of '/b.md' was staged for the source '/a.md'"
            assert _message(lambda: stage.write([*make_chunks("/a.md", 1), *stray], _vectors(2, 2))) == expected
            assert _message(lambda: stage.update_metadata(stray)) == expected
            stage.abort()


def test_update_metadata_of_documents_not_stored_names_the_first_five_in_order(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        stored = _commit(store, "/a.md", 1, seed=1)
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            missing = [make_chunks("/a.md", 1, part=p)[0] for p in "gfedcba"]
            names = sorted(c.document_id for c in missing)
            assert _message(lambda: stage.update_metadata([*stored, *missing])) == f"update_metadata of /a.md: no stored document {', '.join(names[:5])}"
            stage.update_metadata(stored)  # a stored document is carried
            assert stage.commit() == 0
        assert store.count(NS) == 1


def test_commit_returns_the_visible_chunks_neither_kept_nor_carried(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        one = make_chunks("/a.md", 2, part=1)
        two = make_chunks("/a.md", 3, part=2)
        three = make_chunks("/a.md", 4, part=3)
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write([*one, *two, *three], _vectors(9, 1))
            assert stage.commit() == 0  # nothing visible before
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.keep([one[0].document_id])
            stage.update_metadata(two)
            assert stage.commit() == 4  # the third document's four chunks
        assert store.count(NS) == 5
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            assert stage.commit() == 5
        assert store.count(NS) == 0
        with store.session("other") as session:  # another namespace: nothing of its own to remove
            stage = session.stage("/a.md")
            assert stage.commit() == 0


def test_a_write_of_another_dimension_names_both_dimensions(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 1), _vectors(1, 1, dim=3))  # the session's own dimension before any row is stored
            with pytest.raises(DimensionMismatchError) as info:
                stage.write(make_chunks("/a.md", 2)[1:], _vectors(1, 2, dim=5))
            assert (info.value.store_dim, info.value.embedder_dim) == (3, 5)
            assert str(info.value).startswith(f"DuckDB store {path} holds vectors of dimension 3")
            stage.commit()
        with store.session(NS) as session:
            stage = session.stage("/b.md")
            with pytest.raises(DimensionMismatchError) as info:
                stage.write(make_chunks("/b.md", 1), _vectors(1, 2, dim=4))
            assert (info.value.store_dim, info.value.embedder_dim) == (3, 4)
            stage.abort()
        assert store.dimension() == 3 and store.count(NS) == 1


def test_a_read_only_store_refuses_writes_naming_the_action_and_a_closed_store_refuses_everything(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 2, seed=1)
    with DuckDBStore(DuckDBStoreConfig(read_only=True), path=path) as store:
        session = store.session(NS)
        assert _message(lambda: session.stage("/b.md")) == f"DuckDB store {path} is open read-only; cannot write /b.md"
        assert _message(lambda: store.delete(NS, None)) == f"DuckDB store {path} is open read-only; cannot delete"
        assert store.count(NS) == 2
    store = DuckDBStore(path=path)
    store.close()
    store.close()  # twice: nothing
    closed = f"DuckDB store {path} is closed"
    assert _message(lambda: store.session(NS)) == closed
    assert _message(lambda: store.count(NS)) == closed
    assert _message(lambda: store.search(NS, _vectors(1, 1)[0], top_k=1)) == closed
    assert repr(store) == f"DuckDBStore(path={str(path)!r}, index='exact', read_only=False)"


def test_recommitting_a_source_committed_empty_before_any_row_removes_nothing(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        with store.session(NS) as session:
            assert session.stage("/empty.md").commit() == 0  # a committed generation, and still no chunks table
        assert store.source_states(NS, ["/empty.md"])["/empty.md"].generation == 1 and store.dimension() is None
        with store.session(NS) as session:
            assert session.stage("/empty.md").commit() == 0
