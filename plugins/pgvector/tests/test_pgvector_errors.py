"""What a user reads when a PostgreSQL store cannot do something: every error names the action that failed."""

from __future__ import annotations

import datetime
import pathlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from ragloom import StoreError
from ragloom.filters import parse_filter
from ragloom.testing import make_chunks
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

NS = "errors"
DIM = 8


@pytest.fixture
def store(pg: Any, pg_schema: str) -> Iterator[PgVectorStore]:
    opened = PgVectorStore(PgVectorStoreConfig(schema=pg_schema, pool_max=2), dsn=pg.dsn)
    yield opened
    opened.close()


def _commit(store: PgVectorStore, source: str, count: int, **options: Any) -> None:
    with store.session(NS) as session:
        stage = session.stage(source)
        stage.write(make_chunks(source, count, **options), np.random.default_rng(count).standard_normal((count, DIM)).astype(np.float32))
        stage.commit()


_QUERY = np.eye(DIM, dtype=np.float32)[0]

#: (the action an error names, a read that performs it)
READS: list[tuple[str, Callable[[PgVectorStore], object]]] = [
    ("listing chunks", lambda s: list(s.iter_chunks(NS))),
    ("listing sources", lambda s: s.sources(NS)),
    ("counting", lambda s: s.count(NS)),
    ("stats", lambda s: s.stats(NS)),
    ("search", lambda s: s.search(NS, _QUERY, top_k=3)),
    ("keyword search", lambda s: s.keyword_search(NS, "chunk", top_k=3)),
    ("reading vectors", lambda s: s.get_vectors(NS, ["x"])),
    ("reading source states", lambda s: s.source_states(NS, ["/a.md"])),
    ("planning", lambda s: s.plan(NS)),
    ("explain", lambda s: s.explain(NS, _QUERY, top_k=3)),
    ("delete", lambda s: s.delete(NS, parse_filter({"n": 1}))),
    ("building the HNSW index", lambda s: s.build_index()),
]


@pytest.mark.parametrize(("action", "read"), READS, ids=[action for action, _ in READS])
def test_a_read_whose_tables_are_gone_names_what_failed(pg: Any, pg_schema: str, store: PgVectorStore, action: str, read: Callable[[PgVectorStore], object]) -> None:
    _commit(store, "/a.md", 3)
    store.build_index()  # known to exist from here on: planning counts the namespace's rows
    pg.execute(f"DROP SCHEMA {pg_schema} CASCADE")
    with pytest.raises(StoreError, match=rf"^PostgreSQL store \S+ schema {pg_schema}: {action} failed: "):
        read(store)


def test_reading_the_dimension_of_a_store_whose_tables_are_gone_names_it(pg: Any, pg_schema: str) -> None:
    store = PgVectorStore(PgVectorStoreConfig(schema=pg_schema, pool_max=2), dsn=pg.dsn)  # nothing written: no dimension known
    try:
        pg.execute(f"DROP SCHEMA {pg_schema} CASCADE")
        with pytest.raises(StoreError, match=rf"^PostgreSQL store \S+ schema {pg_schema}: reading the dimension failed: "):
            store.dimension()
    finally:
        store.close()


def test_iter_chunks_reads_a_thousand_rows_per_batch_by_default(store: PgVectorStore) -> None:
    _commit(store, "/a.md", 1001)
    assert [len(batch) for batch in store.iter_chunks(NS)] == [1000, 1]
    assert [len(batch) for batch in store.iter_chunks(NS, batch_size=400)] == [400, 400, 201]


def test_update_metadata_refusals_name_the_stage_and_the_count(store: PgVectorStore) -> None:
    _commit(store, "/a.md", 2)
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        known = make_chunks("/a.md", 2, metadata={"lang": "de"}, metadata_hash="m2")
        unknown = make_chunks("/a.md", 1, part="never-stored")
        with pytest.raises(StoreError, match=r"^update_metadata of /a\.md: 1 chunk id\(s\) are not stored for this source$"):
            stage.update_metadata(known + unknown)
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.update_metadata(make_chunks("/a.md", 2, metadata={"lang": "de"}, metadata_hash="m2"))
        stage.commit()
        with pytest.raises(StoreError, match=rf"^cannot update metadata: the stage of /a\.md \(generation {stage.generation}\) is already closed$"):
            stage.update_metadata(make_chunks("/a.md", 1))
    assert {r.metadata.get("lang") for batch in store.iter_chunks(NS) for r in batch} == {"de"}


def test_metadata_the_database_refuses_names_the_update_and_keeps_the_old_generation(store: PgVectorStore) -> None:
    _commit(store, "/a.md", 2)
    with pytest.raises(StoreError, match=r": updating the metadata of 2 chunks of /a\.md failed, the database refused it: "), store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.update_metadata(make_chunks("/a.md", 2, metadata={"note": "nul \x00 inside"}, metadata_hash="m2"))  # jsonb has no \u0000
        stage.commit()
    assert store.count(NS) == 2
    assert store.source_state(NS, "/a.md").metadata == {make_chunks("/a.md", 1)[0].document_id: "meta-1"}


def test_an_abort_on_a_lost_connection_is_logged_naming_the_source(pg: Any, pg_schema: str, store: PgVectorStore, caplog: pytest.LogCaptureFixture) -> None:
    _commit(store, "/a.md", 2)
    session = store.session(NS)
    stage = session.stage("/a.md")
    stage.write(make_chunks("/a.md", 3, part="new"), np.ones((3, DIM), dtype=np.float32))
    # cut this session's connection only: the one idle in its transaction after writing into this schema
    [[cut]] = pg.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%%' AND query LIKE %s",
        [f"%{pg_schema}%"],
    )
    assert cut == 1
    with caplog.at_level("WARNING", logger="ragloom_pgvector.store"):
        stage.abort()
    [record] = [r for r in caplog.records if r.name == "ragloom_pgvector.store"]
    assert record.getMessage() == "aborting /a.md failed; its rows go with the rolled-back transaction"
    assert record.exc_info is not None and isinstance(record.exc_info[1], StoreError)
    assert ": aborting /a.md failed, the connection to PostgreSQL was lost: " in str(record.exc_info[1])
    session.close()  # the session is broken: nothing more to commit, no second error
    assert store.count(NS) == 2  # the old generation stays whole


def test_update_metadata_stores_values_json_cannot_spell_as_their_text_like_write(store: PgVectorStore) -> None:
    day = datetime.date(2026, 12, 2)
    _commit(store, "/a.md", 1, metadata={"day": day})
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.update_metadata(make_chunks("/a.md", 1, metadata={"day": day, "path": pathlib.PurePosixPath("/x/y")}, metadata_hash="m2"))
        stage.commit()
    [[chunk]] = list(store.iter_chunks(NS))
    assert (chunk.metadata["day"], chunk.metadata["path"]) == ("2026-12-02", "/x/y")


def test_aborting_a_stage_of_a_broken_session_logs_nothing(store: PgVectorStore, caplog: pytest.LogCaptureFixture) -> None:
    """The transaction is already rolled back: nothing to delete, nothing to warn about."""
    _commit(store, "/a.md", 2)
    _commit(store, "/b.md", 2)
    session = store.session(NS)
    written = session.stage("/b.md")
    written.write(make_chunks("/b.md", 1, part="new"), np.ones((1, DIM), dtype=np.float32))
    with pytest.raises(StoreError, match="the database refused it"):
        session.stage("/a.md").update_metadata(make_chunks("/a.md", 2, metadata={"note": "\x00"}, metadata_hash="m2"))
    with caplog.at_level("WARNING", logger="ragloom_pgvector.store"):
        written.abort()
        session.close()
    assert [r.getMessage() for r in caplog.records if r.name == "ragloom_pgvector.store"] == []
    assert store.count(NS) == 4


def test_a_delete_waits_for_the_ingest_of_a_source_it_touches(store: PgVectorStore) -> None:
    """A delete takes the lock of every source it touches: it runs after a session writing one of them
    commits, so it deletes the new generation rather than the old one under it."""
    _commit(store, "/a.md", 2)
    session = store.session(NS)
    stage = session.stage("/a.md")
    stage.write(make_chunks("/a.md", 3, part="new"), np.ones((3, DIM), dtype=np.float32))
    stage.commit()  # the new generation, not yet flushed: the session holds the source's lock
    deleted: list[int] = []
    deleter = threading.Thread(target=lambda: deleted.append(store.delete(NS, parse_filter({"source": "/a.md"}))))
    deleter.start()
    deleter.join(timeout=1.0)
    waited = deleter.is_alive()
    session.close()  # flushes: the lock goes
    deleter.join(timeout=60)
    assert waited and deleted == [3]
    assert store.count(NS) == 0 and store.sources(NS) == []
