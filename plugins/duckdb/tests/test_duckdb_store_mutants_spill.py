"""A write session's buffer and aborts in the DuckDB store: when buffered rows spill into the file, what an
abort takes back and which generations are never handed out again (written against the surviving mutants of
``session.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore
from ragloom_duckdb.session import SPILL_ROWS

NS = "ns"
DIM = 2


def _rows(store: DuckDBStore) -> int:
    """Rows in the file, visible or not."""
    return int(store._db.cursor().execute("SELECT count(*) FROM chunks").fetchone()[0])


def _ones(count: int) -> np.ndarray:
    return np.ones((count, DIM), dtype=np.float32)


def _seed(store: DuckDBStore) -> None:
    """One committed chunk (the file's tables exist from then on)."""
    with store.session(NS) as session:
        seed = session.stage("/seed.md")
        seed.write(make_chunks("/seed.md", 1), _ones(1))
        seed.commit()


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "store.duckdb"


def test_an_aborted_stage_leaves_the_buffer_and_its_count(path: Path) -> None:
    big = SPILL_ROWS // 2 + 100
    with DuckDBStore(path=path) as store:
        _seed(store)
        with store.session(NS) as session:
            aborted = session.stage("/a.md")
            aborted.write(make_chunks("/a.md", big), _ones(big))
            aborted.abort()
            kept = session.stage("/b.md")
            kept.write(make_chunks("/b.md", big), _ones(big))  # the buffer holds only these: no spill
            assert _rows(store) == 1
            kept.write(make_chunks("/b.md", 2 * big)[big:], _ones(big))  # now over SPILL_ROWS: the open stage's rows reach the file, invisible
            assert _rows(store) == 1 + 2 * big and store.count(NS) == 1
            kept.commit()
        assert store.count(NS) == 1 + 2 * big and store.sources(NS) == ["/b.md", "/seed.md"]


def test_an_aborted_generation_is_never_staged_again(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        with store.session(NS) as session:
            first = session.stage("/a.md")
            first.write(make_chunks("/a.md", 2), _ones(2))
            first.abort()
            other = session.stage("/b.md")
            other.write(make_chunks("/b.md", 1), _ones(1))
            other.commit()
        assert first.generation == 1 and store.count(NS) == 1 and _rows(store) == 1
        state = store.source_states(NS, ["/a.md"])["/a.md"]
        assert (state.generation, state.next_generation) == (0, 2)
        with store.session(NS) as session:
            again = session.stage("/a.md")
            assert again.generation == 2
            again.write(make_chunks("/a.md", 1), _ones(1))
            again.commit()
        assert store.count(NS) == 2


def test_an_abort_subtracts_only_its_own_rows_from_the_buffer_count(path: Path) -> None:
    big = SPILL_ROWS // 2 + 100
    with DuckDBStore(path=path) as store:
        with store.session(NS) as session:
            kept = session.stage("/b.md")
            kept.write(make_chunks("/b.md", big), _ones(big))
            aborted = session.stage("/a.md")
            aborted.write(make_chunks("/a.md", 10), _ones(10))
            aborted.abort()  # the buffer still holds /b.md's rows, and counts them
            kept.write(make_chunks("/b.md", 2 * big)[big:], _ones(big))  # over SPILL_ROWS: they reach the file, invisible
            assert _rows(store) == 2 * big and store.count(NS) == 0
            kept.commit()
        assert store.count(NS) == 2 * big and store.sources(NS) == ["/b.md"]


def test_the_buffer_spills_at_exactly_spill_rows(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        _seed(store)
        with store.session(NS) as session:
            for flushed in (0, 1):  # a fresh session, then one whose buffer was flushed once: the count starts at 0 again
                source = f"/a{flushed}.md"
                stage = session.stage(source)
                chunks = make_chunks(source, SPILL_ROWS)
                before = _rows(store)
                stage.write(chunks[: SPILL_ROWS - 1], _ones(SPILL_ROWS - 1))
                assert _rows(store) == before  # one row short: all still in the buffer
                stage.write(chunks[SPILL_ROWS - 1 :], _ones(1))
                assert _rows(store) == before + SPILL_ROWS  # the row that reaches SPILL_ROWS spills the buffer
                assert store.count(NS) == 1 + flushed * SPILL_ROWS  # invisible until the commit is flushed
                stage.commit()
                session.flush()
        assert store.count(NS) == 1 + 2 * SPILL_ROWS


def test_a_state_whose_next_generation_lags_still_stages_above_the_visible_generation(path: Path) -> None:
    from ragloom.plugin import SourceState

    with DuckDBStore(path=path) as store:
        for _ in range(3):
            with store.session(NS) as session:
                stage = session.stage("/a.md")
                stage.write(make_chunks("/a.md", 1), _ones(1))
                stage.commit()
        assert store.source_states(NS, ["/a.md"])["/a.md"].generation == 3
        with store.session(NS) as session:
            # a hand-built state (next_generation left at its default 1) must not stage under the visible generation
            stage = session.stage("/a.md", SourceState(generation=3))
            assert stage.generation == 4
            stage.abort()


def test_staging_a_committed_and_flushed_source_again_does_not_flush_other_buffered_rows(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        _seed(store)
        with store.session(NS) as session:
            first = session.stage("/a.md")
            first.write(make_chunks("/a.md", 2), _ones(2))
            first.commit()
            session.flush()
            assert _rows(store) == 3
            other = session.stage("/b.md")
            other.write(make_chunks("/b.md", 4), _ones(4))  # buffered: not in the file yet
            again = session.stage("/a.md")  # /a.md has no unflushed work here: nothing is flushed
            assert _rows(store) == 3
            again.abort()
            other.commit()
        assert store.count(NS) == 7


def test_metadata_values_json_has_no_type_for_are_stored_as_their_text(path: Path) -> None:
    import datetime

    from ragloom.types import Chunk

    chunk = Chunk(
        id="a:0", document_id="a", index=0, text="x", start=0, end=1, source="/a.md",
        metadata={"when": datetime.date(2024, 1, 2), "where": Path("/srv/x"), "note": "café"},
    )
    with DuckDBStore(path=path) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write([chunk], _ones(1))
            stage.commit()
        [found] = store.search(NS, np.ones(DIM, dtype=np.float32), top_k=1)
    assert found.metadata == {"when": "2024-01-02", "where": "/srv/x", "note": "café"}
