"""What a write names when it cannot run: a closed stage, a closed or broken session, a closed store, a refused
or cut write (mutation tests of pgvector_store: each message is the user's only clue to what failed)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from ragloom import StoreError
from ragloom.testing import make_chunks
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

NS = "messages"
DIM = 4
_BROKEN = (
    r"an earlier database error ended this session's transaction \(.+\); "
    r"the sources committed since the last flush keep their old generation"
)


@pytest.fixture
def store(pg: Any, pg_schema: str) -> Iterator[PgVectorStore]:
    opened = PgVectorStore(PgVectorStoreConfig(schema=pg_schema, pool_max=2), dsn=pg.dsn)
    yield opened
    opened.close()


def _vectors(count: int) -> np.ndarray:
    return np.random.default_rng(count).standard_normal((count, DIM)).astype(np.float32)


def _commit(store: PgVectorStore, source: str, count: int) -> None:
    with store.session(NS) as session:
        stage = session.stage(source)
        stage.write(make_chunks(source, count), _vectors(count))
        stage.commit()


def test_a_closed_stage_refuses_every_write_naming_it(store: PgVectorStore) -> None:
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 2), _vectors(2))
        assert stage.commit() == 0
        closed = rf"\(generation {stage.generation}\) is already closed$"
        with pytest.raises(StoreError, match=rf"^cannot commit: the stage of /a\.md {closed}"):
            stage.commit()
        with pytest.raises(StoreError, match=rf"^cannot write: the stage of /a\.md {closed}"):
            stage.write(make_chunks("/a.md", 1), _vectors(1))
        with pytest.raises(StoreError, match=rf"^cannot keep documents: the stage of /a\.md {closed}"):
            stage.keep(["/a.md#"])
        aborted = session.stage("/b.md")
        aborted.abort()
        with pytest.raises(StoreError, match=r"^cannot commit: the stage of /b\.md \(generation None\) is already closed$"):
            aborted.commit()
    assert store.count(NS) == 2


def test_a_closed_session_and_a_closed_store_say_so(store: PgVectorStore) -> None:
    where = re.escape(store._where)
    session = store.session(NS)
    session.close()
    session.close()  # a second close does nothing
    for call, action in (
        (lambda: session.stage("/a.md"), "staging /a.md"),
        (lambda: session.stage("/a.md", store.source_state(NS, "/a.md")), "staging /a.md"),
        (session.flush, "flushing"),
    ):
        with pytest.raises(StoreError, match=rf"^{where}: cannot {action}: the write session is closed$"):
            call()
    store.close()
    store.close()
    with pytest.raises(StoreError, match=rf"^{where} is closed$"):
        store.session(NS)
    with pytest.raises(StoreError, match=rf"^{where} is closed$"):
        store.count(NS)


def test_a_broken_session_names_each_refused_step_and_keeps_the_old_generations(store: PgVectorStore) -> None:
    _commit(store, "/a.md", 2)
    _commit(store, "/b.md", 2)
    where = re.escape(store._where)
    session = store.session(NS)
    pending = session.stage("/b.md")
    state = store.source_state(NS, "/c.md")
    with pytest.raises(StoreError, match=rf"^{where}: writing 1 chunks of /a\.md failed, the database refused it: "):
        # PostgreSQL's text holds no NUL character: the COPY is refused
        session.stage("/a.md").write(make_chunks("/a.md", 1, texts=["nul \x00 inside"]), _vectors(1))
    for call, action in (
        (lambda: pending.write(make_chunks("/b.md", 1), _vectors(1)), r"writing 1 chunks of /b\.md"),
        (pending.commit, r"committing /b\.md"),
        (lambda: session.stage("/c.md"), r"staging /c\.md"),
        (lambda: session.stage("/c.md", state), r"staging /c\.md"),
        (session.flush, "flushing"),
    ):
        with pytest.raises(StoreError, match=rf"^{where}: cannot {action}: {_BROKEN}$"):
            call()
    session.close()
    assert store.count(NS) == 4 and store.sources(NS) == ["/a.md", "/b.md"]


def test_a_commit_on_a_cut_connection_names_the_source_and_the_lost_connection(pg: Any, pg_schema: str, store: PgVectorStore) -> None:
    _commit(store, "/a.md", 2)
    session = store.session(NS)
    stage = session.stage("/a.md")
    stage.write(make_chunks("/a.md", 3, part="new"), _vectors(3))
    [[cut]] = pg.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%%' AND query LIKE %s",
        [f"%{pg_schema}%"],
    )
    assert cut == 1
    with pytest.raises(StoreError, match=r": committing /a\.md failed, the connection to PostgreSQL was lost: .+; the sources not yet flushed keep"):
        stage.commit()
    session.close()
    assert store.count(NS) == 2


def _cut(pg: Any, schema: str) -> None:
    """Terminate the connection idle in a transaction that wrote into ``schema`` (a write session's)."""
    [[cut]] = pg.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%%' AND query LIKE %s",
        [f"%{schema}%"],
    )
    assert cut == 1


def test_a_final_flush_that_fails_is_raised_when_the_session_ends(pg: Any, pg_schema: str, store: PgVectorStore) -> None:
    """Sources committed but not flushed are lost with the connection: leaving the block says so."""
    _commit(store, "/a.md", 2)
    with pytest.raises(StoreError, match=r": flushing failed, the connection to PostgreSQL was lost: "):  # noqa: PT012
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 3, part="new"), _vectors(3))
            stage.commit()
            _cut(pg, pg_schema)
    assert store.count(NS) == 2


def test_a_failed_close_after_an_error_is_logged_and_the_error_goes_on(pg: Any, pg_schema: str, store: PgVectorStore, caplog: pytest.LogCaptureFixture) -> None:
    _commit(store, "/a.md", 2)
    with caplog.at_level("WARNING", logger="ragloom_pgvector.store"), pytest.raises(KeyError, match="the caller's own error"):  # noqa: PT012
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 3, part="new"), _vectors(3))
            stage.commit()
            _cut(pg, pg_schema)
            raise KeyError("the caller's own error")
    [record] = [r for r in caplog.records if r.name == "ragloom_pgvector.store"]
    assert record.getMessage() == "closing a write session after an error failed"
    assert record.exc_info is not None and isinstance(record.exc_info[1], StoreError)
    assert store.count(NS) == 2


def test_a_store_that_cannot_open_names_itself_and_the_server_s_answer() -> None:
    with pytest.raises(StoreError, match=r"^PostgreSQL store: cannot open \(.*127\.0\.0\.1.*\)$"):
        PgVectorStore(PgVectorStoreConfig(connect_timeout=2), dsn="postgresql://nobody@127.0.0.1:1/none")
