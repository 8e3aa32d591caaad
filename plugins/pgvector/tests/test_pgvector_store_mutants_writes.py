"""How a write session lays rows down: row ids from reserved blocks, postings of document rows only, the vacuum
counted over the whole session, the vector column added inside an open transaction (mutation tests of pgvector_store)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np
import pytest

from ragloom import StoreError
from ragloom.keyword import BM25Index
from ragloom.testing import make_chunks
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig
from ragloom_pgvector.store import ROW_ID_BLOCK

NS = "writes"
DIM = 4


@pytest.fixture
def store(pg: Any, pg_schema: str) -> Iterator[PgVectorStore]:
    opened = PgVectorStore(PgVectorStoreConfig(schema=pg_schema, pool_max=2, index="exact", vacuum_after_rows=0), dsn=pg.dsn)
    yield opened
    opened.close()


def _vectors(count: int) -> np.ndarray:
    return np.random.default_rng(count).standard_normal((count, DIM)).astype(np.float32)


@pytest.fixture
def plain(pg: Any, pg_schema: str) -> Iterator[PgVectorStore]:
    """Without BM25 (row ids do not depend on it; thousands of rows write faster)."""
    opened = PgVectorStore(PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=0, keyword=False), dsn=pg.dsn)
    yield opened
    opened.close()


def _row_ids(pg: Any, schema: str, source: str) -> list[int]:
    return [int(r[0]) for r in pg.execute(f"SELECT row_id FROM {schema}.chunks WHERE source = %s ORDER BY row_id", [source])]


def test_a_session_hands_out_the_row_ids_of_its_blocks_in_order_without_gaps(pg: Any, pg_schema: str, plain: PgVectorStore) -> None:
    store = plain
    # writes that leave one id of a block, run past a block's end into the next, and need a whole block more
    sizes = [1, ROW_ID_BLOCK - 2, 2, ROW_ID_BLOCK, 1]
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        done = 0
        for n, size in enumerate(sizes):
            stage.write(make_chunks("/a.md", size, part=n), _vectors(size))
            done += size
        stage.commit()
    assert _row_ids(pg, pg_schema, "/a.md") == list(range(1, done + 1))
    # the next session reserves a block of its own: the ids continue past every block handed out so far
    with store.session(NS) as session:
        stage = session.stage("/b.md")
        stage.write(make_chunks("/b.md", 2), _vectors(2))
        stage.commit()
    blocks = -(-done // ROW_ID_BLOCK)
    assert _row_ids(pg, pg_schema, "/b.md") == [blocks * ROW_ID_BLOCK + 1, blocks * ROW_ID_BLOCK + 2]


def test_a_block_used_up_exactly_is_not_used_again(pg: Any, pg_schema: str, plain: PgVectorStore) -> None:
    with plain.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", ROW_ID_BLOCK, part=0), _vectors(ROW_ID_BLOCK))
        stage.write(make_chunks("/a.md", 1, part=1), _vectors(1))
        stage.commit()
    assert _row_ids(pg, pg_schema, "/a.md") == list(range(1, ROW_ID_BLOCK + 2))


def test_rows_of_another_source_type_get_no_postings_and_no_length(pg: Any, pg_schema: str, store: PgVectorStore) -> None:
    documents = make_chunks("/a.md", 3, texts=["lamp stone river", "xxxx lamp", "cloud rain"])
    memory = attrs.evolve(make_chunks("/a.md", 1, part="memory", texts=["lamp lamp xxxx remembered"])[0], source_type="memory")
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write([*documents, memory], _vectors(4))
        stage.commit()
    assert pg.execute(f"SELECT doc_length FROM {pg_schema}.chunks WHERE source_type = 'memory'") == [(0,)]
    assert pg.execute(f"SELECT count(DISTINCT row_id) FROM {pg_schema}.postings") == [(3,)]
    index = BM25Index()
    index.add([c.id for c in documents], [c.text for c in documents])
    for query in ("lamp", "xxxx", "remembered"):
        expected = index.score_all(query)
        got = store.keyword_search(NS, query, top_k=10)
        assert {r.chunk_id: pytest.approx(r.score, rel=1e-5) for r in got} == expected, query


def _manual_vacuums(pg: Any, schema: str) -> int:
    pg.execute("SELECT pg_stat_force_next_flush()")
    rows = pg.execute("SELECT coalesce(sum(vacuum_count), 0) FROM pg_stat_user_tables WHERE schemaname = %s AND relname = 'chunks'", [schema])
    return int(rows[0][0])


def test_the_vacuum_counts_every_write_of_the_session(pg: Any, pg_schema: str) -> None:
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=5), dsn=pg.dsn) as store:
        with store.session(NS) as session:  # 3 + 2 rows in two writes: the threshold together
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 3, part=0), _vectors(3))
            stage.write(make_chunks("/a.md", 2, part=1), _vectors(2))
            stage.commit()
        assert _manual_vacuums(pg, pg_schema) == 1
        with store.session(NS) as session:  # 4 rows: under it
            stage = session.stage("/b.md")
            stage.write(make_chunks("/b.md", 4), _vectors(4))
            stage.commit()
        assert _manual_vacuums(pg, pg_schema) == 1
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=1), dsn=pg.dsn) as store:
        with store.session(NS) as session:  # a threshold of one row: any write
            stage = session.stage("/c.md")
            stage.write(make_chunks("/c.md", 1), _vectors(1))
            stage.commit()
        assert _manual_vacuums(pg, pg_schema) == 2


def test_the_first_write_after_a_commit_in_the_same_transaction_adds_the_vector_column_in_it(pg: Any, pg_schema: str) -> None:
    """A session whose transaction is open (a stage committed, writing nothing) adds the vector column inside that
    transaction: on another connection the ALTER TABLE would wait for ever for the transaction's lock on chunks."""
    # a lock timeout turns such a wait into an error
    dsn = pg.dsn + ("&" if "?" in pg.dsn else "?") + "options=-clock_timeout%3D5s"
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=0), dsn=dsn) as store, store.session(NS) as session:
        session.stage("/gone.md").commit()  # opens the transaction, deletes nothing, holds the chunks table
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 2), _vectors(2))
        stage.commit()
        session.close()
        assert store.dimension() == DIM and store.count(NS) == 2


def test_a_broken_session_lets_go_of_its_locks_before_it_is_closed(pg: Any, pg_schema: str) -> None:
    """The failed transaction is rolled back at once: another writer of the broken session's sources goes ahead."""
    dsn = pg.dsn + ("&" if "?" in pg.dsn else "?") + "options=-clock_timeout%3D5s"
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=0), dsn=dsn) as store:
        broken = store.session(NS)
        broken.stage("/b.md").write(make_chunks("/b.md", 2), _vectors(2))  # holds the lock of /b.md
        with pytest.raises(StoreError, match="the database refused it"):
            broken.stage("/a.md").write(make_chunks("/a.md", 1, texts=["nul \x00 inside"]), _vectors(1))
        with store.session(NS) as session:  # would wait for /b.md's lock until the broken session is closed
            stage = session.stage("/b.md")
            stage.write(make_chunks("/b.md", 3, part="other"), _vectors(3))
            stage.commit()
        assert store.count(NS) == 3
        broken.close()
        assert store.count(NS) == 3


def test_a_store_of_one_connection_writes_its_first_rows(pg: Any, pg_schema: str) -> None:
    """The first write adds the vector column: on the session's own connection, as a pool of one has no other to lend."""
    config = PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=0, pool_min=1, pool_max=1, connect_timeout=5)
    with PgVectorStore(config, dsn=pg.dsn) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 2), _vectors(2))
            stage.commit()
        assert store.count(NS) == 2 and store.dimension() == DIM
    assert pg.execute(f"SELECT value FROM {pg_schema}.meta WHERE key = 'dimension'") == [(str(DIM),)]


def test_a_store_closed_under_an_open_session_rolls_it_back_and_frees_its_locks(pg: Any, pg_schema: str) -> None:
    dsn = pg.dsn + ("&" if "?" in pg.dsn else "?") + "options=-clock_timeout%3D5s"
    config = PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=0)
    with PgVectorStore(config, dsn=dsn) as store, store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 2), _vectors(2))
        stage.commit()  # committed in the session's transaction, never flushed
        store.close()
        session.close()  # the store already ended it: nothing more happens
    with PgVectorStore(config, dsn=dsn) as store:
        assert store.count(NS) == 0  # rolled back
        with store.session(NS) as session:  # /a.md's lock is free
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 3), _vectors(3))
            stage.commit()
        assert store.count(NS) == 3
