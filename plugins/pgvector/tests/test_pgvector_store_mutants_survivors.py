"""What a store and its write sessions do with their connections, and what a query vector may be: a session
left open when its store closes, a refused statement, an exhausted pool, prepared statements, a dimension
another process wrote, queries of another shape or of text (mutation tests of pgvector_store)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest

from ragloom import DimensionMismatchError, StoreError
from ragloom.stores.memory import MemoryStore
from ragloom.testing import make_chunks
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig
from ragloom_pgvector.store import source_lock_key

NS = "survivors"
DIM = 8


def _vectors(count: int) -> np.ndarray:
    return np.random.default_rng(count).standard_normal((count, DIM)).astype(np.float32)


def _commit(store: PgVectorStore, source: str, count: int) -> None:
    with store.session(NS) as session:
        stage = session.stage(source)
        stage.write(make_chunks(source, count), _vectors(count))
        stage.commit()


def _dsn(pg: Any, name: str) -> str:
    """The test server's DSN with ``application_name`` = ``name`` (to find the store's backends)."""
    return pg.dsn + ("&" if "?" in pg.dsn else "?") + f"application_name={name}"


def _backends_exit(pg: Any, name: str) -> bool:
    """Whether every backend of ``name`` exits (a closed connection's backend exits soon after, not at once)."""
    with psycopg.connect(pg.dsn, autocommit=True) as monitor:
        for _ in range(100_000):  # until they have exited, not for a length of time
            if not monitor.execute("SELECT 1 FROM pg_stat_activity WHERE application_name = %s", [name]).fetchall():
                return True
    return False


@pytest.fixture
def store(pg: Any, pg_schema: str) -> Iterator[PgVectorStore]:
    opened = PgVectorStore(PgVectorStoreConfig(schema=pg_schema, pool_max=2, index="exact", vacuum_after_rows=0), dsn=pg.dsn)
    yield opened
    opened.close()


# ---------------------------------------------------------------------- sessions and connections


def test_a_session_left_open_ends_with_its_store_its_connection_closed(pg: Any, pg_schema: str) -> None:
    """Closing a store closes the connection of a session still open: its transaction rolls back and
    the source's lock goes with it (a connection kept open would hold both for ever)."""
    store = PgVectorStore(PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=0), dsn=_dsn(pg, "left_open"))
    session = store.session(NS)
    stage = session.stage("/a.md")
    stage.write(make_chunks("/a.md", 2), _vectors(2))
    stage.commit()  # in the session's transaction, not flushed: the source's lock is held
    assert pg.execute("SELECT pg_try_advisory_xact_lock(%s)", [source_lock_key(NS, "/a.md")]) == [(False,)]
    store.close()
    assert _backends_exit(pg, "left_open")  # the pool's connections and the session's
    assert pg.execute("SELECT pg_try_advisory_xact_lock(%s)", [source_lock_key(NS, "/a.md")]) == [(True,)]
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema, index="exact"), dsn=pg.dsn) as again:
        assert again.count(NS) == 0  # rolled back
    with pytest.raises(StoreError, match="the write session is closed"):
        session.flush()


def test_a_refused_statement_rolls_the_session_back_at_once(pg: Any, store: PgVectorStore, caplog: pytest.LogCaptureFixture) -> None:
    """After the database refuses a statement, the session rolls its aborted transaction back then and there:
    its connection is not left idle in an aborted transaction until the session closes (where
    ``idle_in_transaction_session_timeout`` would cut it, and psycopg_pool would have to roll it back, warning).
    The server itself frees the transaction's locks as it aborts it."""
    _commit(store, "/a.md", 2)
    session = store.session(NS)
    written = session.stage("/b.md")
    written.write(make_chunks("/b.md", 1), _vectors(1))
    assert pg.execute("SELECT pg_try_advisory_xact_lock(%s)", [source_lock_key(NS, "/b.md")]) == [(False,)]
    with pytest.raises(StoreError, match="the database refused it"):
        session.stage("/a.md").update_metadata(make_chunks("/a.md", 2, metadata={"note": "\x00"}, metadata_hash="m2"))  # jsonb has no \u0000
    for source in ("/a.md", "/b.md"):
        assert pg.execute("SELECT pg_try_advisory_xact_lock(%s)", [source_lock_key(NS, source)]) == [(True,)]
    # the session's connection is back outside any transaction (not idle in an aborted one)
    assert pg.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%%' AND query LIKE %s", [f"%{store.schema}%"]
    ) == [(0,)]
    with caplog.at_level("WARNING", logger="psycopg.pool"):
        session.close()
    assert [r.getMessage() for r in caplog.records if r.name == "psycopg.pool"] == []
    assert store.count(NS) == 2


def test_an_exhausted_pool_gives_up_after_connect_timeout(pg: Any, pg_schema: str) -> None:
    """A read that finds every pooled connection in use waits ``connect_timeout``, not psycopg_pool's 30 s:
    the pool's own message says how long it waited."""
    config = PgVectorStoreConfig(schema=pg_schema, index="exact", pool_min=1, pool_max=1, connect_timeout=0.5)
    with PgVectorStore(config, dsn=pg.dsn) as store:
        session = store.session(NS)  # holds the pool's only connection
        with pytest.raises(
            StoreError, match=r": counting failed: no database connection within 0\.5 s \(couldn't get a connection after 0\.50 sec\)$"
        ):
            store.count(NS)
        session.close()
        assert store.count(NS) == 0


def test_prepared_statements_by_default(pg: Any, pg_schema: str) -> None:
    """Without ``prepared_statements = false`` a query run often is prepared on the server (psycopg's threshold)."""
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema, index="exact", pool_min=1, pool_max=1), dsn=pg.dsn) as store:
        _commit(store, "/a.md", 1)
        for _ in range(8):  # past psycopg's prepare threshold (5)
            assert store.count(NS) == 1
        with store._pool.connection() as conn:
            assert conn.prepare_threshold == 5
            assert conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()[0] >= 1


def test_opening_and_reading_a_store_warns_of_nothing(pg: Any, pg_schema: str) -> None:
    """The pool is opened explicitly: psycopg_pool warns (DeprecationWarning) on the first connection of a pool
    whose ``open`` was left to its default, which fails a program run with ``-W error``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with PgVectorStore(PgVectorStoreConfig(schema=pg_schema, index="exact"), dsn=pg.dsn) as store:
            assert store.count(NS) == 0
    # deprecations only: a ResourceWarning of an earlier test's garbage may be collected meanwhile
    assert [f"{w.category.__name__}: {w.message}" for w in caught if issubclass(w.category, (DeprecationWarning, FutureWarning))] == []


# ---------------------------------------------------------------------- the dimension and the query


def test_a_store_opened_before_the_first_write_learns_the_dimension_another_store_wrote(pg: Any, pg_schema: str) -> None:
    config = PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=0)
    with PgVectorStore(config, dsn=pg.dsn) as searching, PgVectorStore(config, dsn=pg.dsn) as asking:
        assert searching.dimension() is None is asking.dimension()
        with PgVectorStore(config, dsn=pg.dsn) as writer:
            _commit(writer, "/a.md", 3)
        found = searching.search(NS, _vectors(3)[1], top_k=1)  # the first read of the dimension: the search's
        assert [r.chunk_id for r in found] == [make_chunks("/a.md", 3)[1].id]
        assert searching.dimension() == DIM
        assert asking.dimension() == DIM  # the first read: dimension()'s own
        with pytest.raises(DimensionMismatchError):
            asking.search(NS, np.ones(3, dtype=np.float32), top_k=1)


def test_a_query_of_the_wrong_dimension_names_both(store: PgVectorStore) -> None:
    _commit(store, "/a.md", 2)
    with pytest.raises(DimensionMismatchError) as raised:
        store.search(NS, np.ones(3, dtype=np.float32), top_k=1)
    assert (raised.value.store_dim, raised.value.embedder_dim) == (DIM, 3)
    assert f"holds vectors of dimension {DIM}, but the embedder makes dimension 3;" in str(raised.value)
    assert str(raised.value).startswith("PostgreSQL store ")  # which store: the user may run several
    with pytest.raises(DimensionMismatchError) as raised:
        store.explain(NS, np.ones(DIM + 1, dtype=np.float32), top_k=1)
    assert (raised.value.store_dim, raised.value.embedder_dim) == (DIM, DIM + 1)


def test_a_query_of_one_row_is_the_vector_of_that_row(store: PgVectorStore) -> None:
    """A (1, dim) or (dim, 1) query is flattened, as the memory store does."""
    _commit(store, "/a.md", 4)
    vectors = _vectors(4)
    want = [r.chunk_id for r in store.search(NS, vectors[2], top_k=2)]
    assert want[0] == make_chunks("/a.md", 4)[2].id
    assert [r.chunk_id for r in store.search(NS, vectors[2:3], top_k=2)] == want
    assert [r.chunk_id for r in store.search(NS, vectors[2].reshape(DIM, 1), top_k=2)] == want
    assert [r.chunk_id for r in store.search(NS, vectors[2].astype(np.float64).tolist(), top_k=2)] == want


def test_a_query_that_is_not_numbers_is_refused_even_before_the_first_write(store: PgVectorStore) -> None:
    """The query is read as float32 before the store is asked anything, as in the memory store: text is
    numpy's ValueError, not an empty answer of a store without vectors nor a dimension mismatch."""
    text = ["lamp", "glow", "dark"]
    memory = MemoryStore()
    with pytest.raises(ValueError) as remembered:
        memory.search(NS, text, top_k=1)
    with pytest.raises(ValueError) as raised:
        store.search(NS, text, top_k=1)
    assert type(raised.value) is ValueError and str(raised.value) == str(remembered.value)
    assert "could not convert string to float" in str(raised.value)
    with pytest.raises(ValueError, match="^could not convert string to float"):
        store.explain(NS, text, top_k=1)
    _commit(store, "/a.md", 2)  # a dimension (8) other than the query's length (3): still the same refusal
    with pytest.raises(ValueError) as raised:
        store.search(NS, text, top_k=1)
    assert type(raised.value) is ValueError and str(raised.value) == str(remembered.value)
