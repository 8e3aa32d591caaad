"""A delete's recount of the sources it touched, a session closed with several stages still open, the VACUUM
after a bulk write without keyword search and when it fails (mutation tests of pgvector_store)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import numpy as np
import pytest

from ragloom.filters import parse_filter
from ragloom.testing import make_chunks
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

NS = "commits"
DIM = 8


def _vectors(count: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)


def _manual_vacuums(pg: Any, schema: str) -> dict[str, int]:
    pg.execute("SELECT pg_stat_force_next_flush()")
    rows = pg.execute("SELECT relname, vacuum_count FROM pg_stat_user_tables WHERE schemaname = %s", [schema])
    return {name: int(count) for name, count in rows}


def test_a_delete_recounts_the_documents_left_in_its_source(pg: Any, pg_schema: str) -> None:
    """Deleting one of a source's two documents leaves the other's chunks counted (the recount counts the rows
    of source_type 'document')."""
    config = PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=0)
    with PgVectorStore(config, dsn=pg.dsn) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            chunks = make_chunks("/a.md", 3, part=1, metadata={"n": 1}) + make_chunks("/a.md", 2, part=2, metadata={"n": 2})
            stage.write(chunks, _vectors(5))
            stage.commit()
        assert store.count(NS) == 5
        assert store.delete(NS, parse_filter({"n": 1})) == 3
        assert store.count(NS) == 2
        assert pg.execute(f"SELECT chunks FROM {pg_schema}.sources WHERE source = '/a.md'") == [(2,)]


def test_closing_a_session_aborts_every_open_stage(pg: Any, pg_schema: str) -> None:
    """Two stages written and left uncommitted: closing the session aborts both, so neither source keeps a row."""
    config = PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=0)
    with PgVectorStore(config, dsn=pg.dsn) as store:
        session = store.session(NS)
        first = session.stage("/a.md")
        first.write(make_chunks("/a.md", 2), _vectors(2))
        second = session.stage("/b.md")
        second.write(make_chunks("/b.md", 3), _vectors(3, seed=1))
        session.close()
        assert pg.execute(f"SELECT count(*) FROM {pg_schema}.chunks") == [(0,)]
        assert store.count(NS) == 0


def test_without_keyword_search_only_the_chunks_are_vacuumed(pg: Any, pg_schema: str, caplog: pytest.LogCaptureFixture) -> None:
    """keyword=False: the bulk write's VACUUM covers the chunks table (which it finds) and not the postings."""
    config = PgVectorStoreConfig(schema=pg_schema, index="exact", keyword=False, vacuum_after_rows=1)
    with caplog.at_level(logging.WARNING), PgVectorStore(config, dsn=pg.dsn) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 3), _vectors(3))
            stage.commit()
        assert store.count(NS) == 3
    assert [r.getMessage() for r in caplog.records if "VACUUM" in r.getMessage()] == []
    vacuums = _manual_vacuums(pg, pg_schema)
    assert vacuums["chunks"] >= 1 and vacuums.get("postings", 0) == 0, vacuums


def test_a_failed_vacuum_is_logged_with_the_store_and_the_server_message(
    pg: Any, pg_schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The postings table dropped under the store (the fault) after the session's rows are committed: the chunks
    are vacuumed, the postings' VACUUM fails, and the warning names the store and PostgreSQL's message; the
    committed rows stay and the connection goes back to the pool in a usable state."""
    config = PgVectorStoreConfig(schema=pg_schema, index="exact", keyword=True, vacuum_after_rows=1)
    with caplog.at_level(logging.WARNING), PgVectorStore(config, dsn=pg.dsn) as store:
        session = store.session(NS)
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 3), _vectors(3))
        stage.commit()
        session.flush()
        pg.execute(f"DROP TABLE {pg_schema}.postings CASCADE")
        session.close()
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert warnings == [
            f"{store._where}: VACUUM after a bulk write failed "
            f'(relation "{pg_schema}.postings" does not exist); autovacuum will do it'
        ], warnings
        assert store.count(NS) == 3


def test_a_vacuumed_connection_goes_back_to_the_pool_as_it_came(pg: Any, pg_schema: str, caplog: pytest.LogCaptureFixture) -> None:
    """The pool hands out autocommit connections (the session sends BEGIN and COMMIT itself). After the VACUUM the
    connection goes back in that mode: the next session on it (the pool's only connection) reads a source's state
    outside any transaction, so its own VACUUM can switch to autocommit and runs, without a warning."""
    config = PgVectorStoreConfig(schema=pg_schema, index="exact", keyword=False, vacuum_after_rows=1, pool_min=1, pool_max=1)
    with caplog.at_level(logging.WARNING), PgVectorStore(config, dsn=pg.dsn) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 3), _vectors(3))
            stage.commit()
        with store.session(NS) as session:
            stage = session.stage("/b.md")
            stage.write(make_chunks("/b.md", 2), _vectors(2, seed=1))
            stage.commit()
            session.flush()
            session.stage("/c.md")  # reads /c.md's state, then the session closes without writing it
        assert store.count(NS) == 5
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert _manual_vacuums(pg, pg_schema)["chunks"] >= 2


def test_a_write_waits_for_the_session_holding_its_source(pg: Any, pg_schema: str) -> None:
    """A second session writing a source that an uncommitted session holds waits on the source's advisory lock
    (the blocking pg_advisory_xact_lock after the try-lock failed), then writes once the first one commits."""
    config = PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=0)
    with PgVectorStore(config, dsn=pg.dsn) as store:
        holder = store.session(NS)
        first = holder.stage("/a.md")
        first.write(make_chunks("/a.md", 2), _vectors(2))
        errors: list[BaseException] = []
        stages: list[Any] = []

        def second_writer() -> None:
            try:
                with store.session(NS) as session:
                    stage = session.stage("/a.md")
                    stages.append(stage)
                    stage.write(make_chunks("/a.md", 3, metadata={"n": 2}), _vectors(3, seed=1))
                    stage.commit()
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                errors.append(exc)

        thread = threading.Thread(target=second_writer)
        thread.start()
        waiting: list[Any] = []
        while thread.is_alive() and not waiting:  # until the second session waits on the lock (or has failed)
            waiting = pg.execute("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
            time.sleep(0.02)
        first.commit()
        holder.close()
        thread.join()
        assert errors == [] and waiting, (errors, waiting)
        assert store.source_state(NS, "/a.md").generation == stages[0].generation > first.generation
        assert [c.metadata["n"] for batch in store.iter_chunks(NS) for c in batch] == [2, 2, 2]
