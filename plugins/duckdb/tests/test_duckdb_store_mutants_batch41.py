"""The DuckDB store's caches after a flush and the sources row it writes: new rows reach a loaded HNSW graph, the old
generation of a source replaced in the same flush as an aborted stage is dropped from the mirror, rows of a stage still
open stay invisible in it, max_generation covers an open stage of a newer generation of a committed source, and a
checkpoint failure after the commit is reported at the session's flush (written against the surviving mutants of
``store.py``)."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from duckdb_writes import NS
from duckdb_writes import commit_source as _commit
from duckdb_writes import seeded_vectors as _vectors

import ragloom_duckdb.session
from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig, checkpoint


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "store.duckdb"


def _ids(results: list) -> list[str]:
    return sorted(r.chunk_id for r in results)


def test_rows_committed_after_the_first_hnsw_search_join_the_graph(path: Path) -> None:
    with DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=4), path=path) as store:
        _commit(store, "/a.md", 8, seed=1)
        assert store.plan(NS) == "hnsw"
        assert len(store.search(NS, _vectors(1, 9)[0], top_k=3)) == 3  # loads the mirror and builds the graph
        target = _vectors(1, 7)[0]
        (new,) = make_chunks("/b.md", 1)
        with store.session(NS) as session:
            stage = session.stage("/b.md")
            stage.write([new], target[None, :])
            stage.commit()
        assert store.plan(NS) == "hnsw"
        (best,) = store.search(NS, target, top_k=1)
        assert best.chunk_id == new.id and best.score == pytest.approx(1.0, abs=1e-5)


def test_the_old_generation_replaced_in_the_flush_of_an_abort_leaves_the_mirror(path: Path) -> None:
    query = _vectors(1, 9)[0]
    with DuckDBStore(path=path) as store:
        _commit(store, "/x.md", 3, seed=1)
        assert len(store.search(NS, query, top_k=10)) == 3  # the mirror is loaded
        with store.session(NS) as session:
            aborted = session.stage("/y.md")
            aborted.write(make_chunks("/y.md", 2), _vectors(2, 2))
            session.flush()  # its rows reach the file, invisible
            aborted.abort()
            stage = session.stage("/x.md")
            new = make_chunks("/x.md", 2, part="v2")
            stage.write(new, _vectors(2, 3))
            stage.commit()
        # one flush dropped the aborted rows and the three old rows of /x.md
        assert _ids(store.search(NS, query, top_k=10)) == sorted(c.id for c in new)
        assert sorted(c.id for b in store.iter_chunks(NS) for c in b) == sorted(c.id for c in new)


def test_rows_of_a_stage_still_open_stay_invisible_in_a_loaded_mirror(path: Path) -> None:
    target = _vectors(1, 7)[0]
    with DuckDBStore(path=path) as store:
        old = _commit(store, "/x.md", 3, seed=1)
        assert len(store.search(NS, target, top_k=10)) == 3  # the mirror is loaded
        with store.session(NS) as session:
            stage = session.stage("/y.md")
            staged = make_chunks("/y.md", 2)
            stage.write(staged, np.stack([target, target]))
            session.flush()  # the rows are in the file, the stage is open
            assert _ids(store.search(NS, target, top_k=10)) == sorted(c.id for c in old)
            stage.commit()
        assert _ids(store.search(NS, target, top_k=10)) == sorted(c.id for c in old + staged)


def test_max_generation_covers_an_open_stage_newer_than_the_commit_of_its_source(path: Path) -> None:
    """A committed stage of a source and an open, newer stage of it (rows buffered) flushed together: the sources row
    takes the committed generation and a max_generation of the newer one, whose rows are now in the file."""
    with DuckDBStore(path=path) as store:
        _commit(store, "/s.md", 2, seed=1)
        assert store.source_states(NS, ["/s.md"])["/s.md"].next_generation == 2
        with store.session(NS) as session:
            first = session.stage("/s.md")
            first.write(make_chunks("/s.md", 2, part="a"), _vectors(2, 2))
            second = session.stage("/s.md")  # flushes first: its rows reach the file, max_generation 2
            assert (first.generation, second.generation) == (2, 3)
            second.write(make_chunks("/s.md", 2, part="b"), _vectors(2, 3))
            first.commit()
            session.flush()  # commits generation 2, writes the rows of generation 3 invisible
            state = store.source_states(NS, ["/s.md"])["/s.md"]
            assert (state.generation, state.next_generation) == (2, 4)
            second.abort()


def test_a_checkpoint_failure_after_the_commit_is_reported_at_the_sessions_flush(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warning names the caller of the function that emits it (stacklevel 2): the session's flush. The stack is
    read when warnings.warn is called (mutmut's trampoline sits between the two frames in a mutation run)."""
    monkeypatch.setattr(checkpoint, "WAL_CHECKPOINT_BYTES", 1)  # every write is followed by a checkpoint
    real_warn = warnings.warn
    callers: list[inspect.FrameInfo] = []

    def recording(message: object, category: type[Warning] | None = None, stacklevel: int = 1, **kwargs: object) -> None:
        if "free disk space" in str(message):
            callers.append(inspect.stack(0)[2])  # [0] this function, [1] the one that warns, [2] its caller
        real_warn(message, category, stacklevel=stacklevel + 1, **kwargs)  # type: ignore[call-overload]

    blocker = Path(checkpoint.backup_path(str(path)) + ".tmp")
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 2, seed=1)
        blocker.mkdir()  # the fault: the copy taken before a checkpoint cannot be created
        monkeypatch.setattr(warnings, "warn", recording)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                chunks = _commit(store, "/b.md", 2, seed=2)
        finally:
            monkeypatch.setattr(warnings, "warn", real_warn)
            blocker.rmdir()
        assert sorted(c.id for c in chunks) == sorted(c.id for b in store.iter_chunks(NS) for c in b if c.source == "/b.md")
    (warning,) = [w for w in caught if "free disk space" in str(w.message)]
    (caller,) = callers
    assert (warning.filename, warning.lineno) == (caller.filename, caller.lineno)
    if caller.function != "trampoline":  # without mutmut's trampoline: the line of the flush that called the store
        source = Path(ragloom_duckdb.session.__file__)
        call = next(n for n, line in enumerate(source.read_text().splitlines(), 1) if "self.store._apply_session(" in line)
        assert (caller.function, Path(caller.filename), caller.lineno) == ("_flush", source, call)
