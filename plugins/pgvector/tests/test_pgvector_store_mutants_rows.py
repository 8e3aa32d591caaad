"""The rows a write lays out (offsets past float precision, metadata that is None, text that is not valid Unicode,
chunks of another source) and the source locks of a session that has to wait for one (mutation tests of
pgvector_store)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
import pytest

from ragloom import StoreError
from ragloom.testing import make_chunks
from ragloom.types import Chunk
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig
from ragloom_pgvector.store import source_lock_key

NS = "rows"
DIM = 8


def _vectors(count: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)


def _config(schema: str) -> PgVectorStoreConfig:
    return PgVectorStoreConfig(schema=schema, index="exact", vacuum_after_rows=0)


def _short_lock_waits(dsn: str) -> str:
    """The DSN with a lock timeout: a wait for a lock someone holds ends in an error instead of lasting for ever."""
    return dsn + ("&" if "?" in dsn else "?") + "options=-clock_timeout%3D300ms"


@contextmanager
def _holding_lock(dsn: str, source: str) -> Iterator[None]:
    """Another connection holding the advisory lock of ``(NS, source)`` (as a session writing that source does)."""
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", [source_lock_key(NS, source)])
        yield
        conn.rollback()


def _chunk(text: str, **fields: Any) -> Chunk:
    values: dict[str, Any] = {"start": 0, "end": len(text), "source": "/a.md", "metadata": {"k": 1}}
    values.update(fields)
    return Chunk(id="/a.md#:0", document_id="/a.md#", index=0, text=text, **values)


# ------------------------------------------------------------------ the rows of a write


def test_offsets_past_double_precision_are_stored_exactly(pg: Any, pg_schema: str) -> None:
    """Offsets are bigints: a span at 2**53 + 1 (no float64 holds it) comes back exactly, start and end."""
    chunk = _chunk("x", start=2**53, end=2**53 + 1)
    with PgVectorStore(_config(pg_schema), dsn=pg.dsn) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write([chunk], _vectors(1))
            stage.commit()
        [[stored]] = list(store.iter_chunks(NS))
        [found] = store.search(NS, _vectors(1)[0], top_k=1)
    assert (stored.start, stored.end) == (2**53, 2**53 + 1)
    assert found.span == (2**53, 2**53 + 1)
    assert pg.execute(f"SELECT start_offset, end_offset FROM {pg_schema}.chunks") == [(2**53, 2**53 + 1)]


def test_metadata_of_none_is_stored_as_an_empty_object(pg: Any, pg_schema: str) -> None:
    """A chunk whose metadata is None is stored like one without metadata: the JSON object {} (the column holds
    objects only; a JSON null would break SQL such as jsonb_object_keys(metadata) run on the table)."""
    with PgVectorStore(_config(pg_schema), dsn=pg.dsn) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            empty = Chunk(id="/a.md#:1", document_id="/a.md#", index=1, text="empty", start=4, end=9, source="/a.md")
            stage.write([_chunk("none", metadata=None), empty], _vectors(2))
            stage.commit()
        assert [c.metadata for batch in store.iter_chunks(NS) for c in batch] == [{}, {}]
    rows = pg.execute(
        f"SELECT chunk_id, jsonb_typeof(metadata), metadata = '{{}}'::jsonb FROM {pg_schema}.chunks ORDER BY chunk_id"
    )
    assert rows == [("/a.md#:0", "object", True), ("/a.md#:1", "object", True)]


@pytest.mark.parametrize(
    "fields",
    [
        {"text": "half a pair \ud83d here"},
        # a surrogate pair as two code points: not a character either (no JSON escape may turn it into one)
        {"metadata": {"title": "smile \ud83d\ude00"}},
    ],
    ids=["text", "metadata"],
)
def test_text_that_is_not_valid_unicode_is_refused_naming_the_source(pg: Any, pg_schema: str, fields: dict[str, Any]) -> None:
    """A chunk holding surrogates (in its text or in its metadata) cannot be encoded as UTF-8: the write is refused
    with a StoreError naming the chunk's source and the reason. The refusal cancels the COPY, which ends the
    session's transaction: the session refuses every later call (naming that refusal) instead of failing on an
    aborted transaction, the sources it committed since its last flush keep their old generation, and its locks are
    free at once."""
    chunk = _chunk(fields.pop("text", "fine"), **fields)
    with PgVectorStore(_config(pg_schema), dsn=pg.dsn) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 1), _vectors(1))
            stage.commit()
        session = store.session(NS)
        other = session.stage("/b.md")
        other.write(make_chunks("/b.md", 2), _vectors(2))
        other.commit()  # in the session's transaction, not flushed
        with pytest.raises(
            StoreError, match=r"^a chunk of '/a\.md' holds text that is not valid Unicode \(surrogates not allowed\)$"
        ):
            session.stage("/a.md").write([chunk], _vectors(1))
        with pytest.raises(StoreError, match=r": an earlier call failed \(a chunk of '/a\.md' holds text"):
            session.stage("/c.md").write(make_chunks("/c.md", 1), _vectors(1))
        with store.session(NS) as fresh:  # /a.md's lock is free before the broken session is closed
            stage = fresh.stage("/a.md")
            stage.write(make_chunks("/a.md", 3, part="new"), _vectors(3))
            stage.commit()
        session.close()
        assert store.sources(NS) == ["/a.md"] and store.count(NS) == 3


def test_a_chunk_of_another_source_is_refused_naming_both(pg: Any, pg_schema: str) -> None:
    """``write`` and ``update_metadata`` take chunks of the stage's source only; the error names the stray chunk's
    source and the stage's."""
    with PgVectorStore(_config(pg_schema), dsn=pg.dsn) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            chunks = make_chunks("/a.md", 1) + make_chunks("/b.md", 1)
            with pytest.raises(StoreError, match=r"^a chunk of '/b\.md' was staged for the source '/a\.md'$"):
                stage.write(chunks, _vectors(2))
            with pytest.raises(StoreError, match=r"^a chunk of '/b\.md' was staged for the source '/a\.md'$"):
                stage.update_metadata(chunks)
            stage.abort()
        assert store.count(NS) == 0


# ------------------------------------------------------------------ source locks


def test_a_free_lock_taken_after_the_generation_keeps_the_transaction_open(pg: Any, pg_schema: str) -> None:
    """A stage whose generation was read before its first write takes its source's lock then; when the lock is
    free the session's transaction stays open: what it committed so far stays invisible until the flush."""
    with PgVectorStore(_config(pg_schema), dsn=pg.dsn) as store:
        with store.session(NS) as session:
            first = session.stage("/a.md")
            first.write(make_chunks("/a.md", 2), _vectors(2))
            first.commit()
            second = session.stage("/b.md")
            generation = second.generation
            second.write(make_chunks("/b.md", 3), _vectors(3))
            assert store.count(NS) == 0  # another connection: nothing committed yet
            assert pg.execute(f"SELECT count(*) FROM {pg_schema}.chunks") == [(0,)]
            second.commit()
            session.flush()
            assert store.count(NS) == 5
        assert store.source_state(NS, "/b.md").generation == generation


def test_a_session_flushes_its_committed_sources_before_it_waits_for_a_lock(pg: Any, pg_schema: str) -> None:
    """Holding the lock of a committed source and having to wait for another source's lock, a session flushes
    first (so two writers never wait on each other in a cycle), then waits: here until the lock timeout. The
    source committed before the wait stays committed; the waiting write fails, named by the timeout (a refusal of
    the server's, not a lost connection, though psycopg counts it an OperationalError)."""
    dsn = _short_lock_waits(pg.dsn)
    with PgVectorStore(_config(pg_schema), dsn=dsn) as store:
        session = store.session(NS)
        first = session.stage("/a.md")
        first.write(make_chunks("/a.md", 2), _vectors(2))
        first.commit()
        with _holding_lock(pg.dsn, "/b.md"):
            with pytest.raises(
                StoreError,
                match=r"writing 1 chunks of /b\.md failed, the database refused it: canceling statement due to lock timeout; ",
            ):
                session.stage("/b.md").write(make_chunks("/b.md", 1), _vectors(1))
        session.close()
        assert store.count(NS) == 2 and store.sources(NS) == ["/a.md"]
    assert pg.execute(f"SELECT DISTINCT source FROM {pg_schema}.chunks") == [("/a.md",)]


def test_a_session_with_a_source_half_written_waits_for_a_lock_without_flushing(pg: Any, pg_schema: str) -> None:
    """A session with another stage still writing must not commit its transaction to wait for a lock: readers would
    see that source's rows half written. It waits holding everything (here until the lock timeout, after which the
    whole transaction rolls back: no row of either source is left)."""
    dsn = _short_lock_waits(pg.dsn)
    with PgVectorStore(_config(pg_schema), dsn=dsn) as store:
        session = store.session(NS)
        writing = session.stage("/a.md")
        writing.write(make_chunks("/a.md", 2), _vectors(2))  # not committed: still writing
        with _holding_lock(pg.dsn, "/b.md"):
            with pytest.raises(
                StoreError,
                match=r"writing 1 chunks of /b\.md failed, the database refused it: canceling statement due to lock timeout; ",
            ):
                session.stage("/b.md").write(make_chunks("/b.md", 1), _vectors(1))
        session.close()
        assert store.count(NS) == 0
    assert pg.execute(f"SELECT count(*) FROM {pg_schema}.chunks") == [(0,)]
