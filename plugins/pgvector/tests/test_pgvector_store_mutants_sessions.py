"""Write sessions and the store's maintenance calls: a session that cannot get a connection, a source staged
twice in one session (its lock already held), a generation read before the write, the generations sequence
running out, ``build_index`` on a store that has no vectors yet, ``explain``'s lines (mutation tests of
pgvector_store)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ragloom import StoreError
from ragloom.testing import make_chunks
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

NS = "sessions"
DIM = 8


def _vectors(count: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)


def _config(schema: str, **options: Any) -> PgVectorStoreConfig:
    return PgVectorStoreConfig(schema=schema, index="exact", vacuum_after_rows=0, **options)


def test_a_session_without_a_free_connection_names_its_opening(pg: Any, pg_schema: str) -> None:
    """A session takes a pooled connection as it opens: with the pool's only connection held by another session,
    it gives up after ``connect_timeout``, and the error says what failed."""
    with PgVectorStore(_config(pg_schema, pool_min=1, pool_max=1, connect_timeout=0.5), dsn=pg.dsn) as store:
        holder = store.session(NS)
        with pytest.raises(StoreError, match=r": opening a write session failed: no database connection within 0\.5 s \("):
            store.session(NS)
        holder.close()
        with store.session(NS) as session:  # the connection is back: a session opens again
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 1), _vectors(1))
            stage.commit()
        assert store.count(NS) == 1


def test_a_source_staged_again_in_one_session_gets_a_newer_generation(pg: Any, pg_schema: str) -> None:
    """The second stage of a source in one unflushed session finds the source's lock already held: it still takes
    a generation of its own, above the first stage's, and its commit replaces the first stage's rows (here with
    the same chunks under new metadata)."""
    with PgVectorStore(_config(pg_schema), dsn=pg.dsn) as store:
        with store.session(NS) as session:
            first = session.stage("/a.md")
            first.write(make_chunks("/a.md", 3), _vectors(3))
            first.commit()
            second = session.stage("/a.md")
            second.update_metadata(make_chunks("/a.md", 3, metadata={"n": 2}, metadata_hash="meta-2"))
            assert second.commit() == 0  # every removed row was carried into the new generation
        assert second.generation > first.generation
        assert store.source_state(NS, "/a.md").generation == second.generation
        assert [c.metadata["n"] for batch in store.iter_chunks(NS) for c in batch] == [2, 2, 2]
        assert pg.execute(f"SELECT DISTINCT generation FROM {pg_schema}.chunks") == [(second.generation,)]


def test_a_generation_read_before_the_write_is_the_one_written(pg: Any, pg_schema: str) -> None:
    """A stage's generation, once read, is the one its rows and its commit carry, also when its source's lock is
    already held by the session (no second generation is taken at the write)."""
    with PgVectorStore(_config(pg_schema), dsn=pg.dsn) as store:
        with store.session(NS) as session:
            first = session.stage("/a.md")
            first.write(make_chunks("/a.md", 1), _vectors(1))
            first.commit()
            second = session.stage("/a.md")
            generation = second.generation
            second.write(make_chunks("/a.md", 2), _vectors(2))
            second.commit()
            assert second.generation == generation
        assert store.source_state(NS, "/a.md").generation == generation
        assert pg.execute(f"SELECT DISTINCT generation FROM {pg_schema}.chunks") == [(generation,)]


def test_running_out_of_generations_fails_the_call_that_needed_one(pg: Any, pg_schema: str) -> None:
    """When the generations sequence is at its end, a stage whose source's lock the session already holds fails at
    the call that takes its generation (its first update here), named as that call; the sources not flushed keep
    their old rows."""
    with PgVectorStore(_config(pg_schema), dsn=pg.dsn) as store:
        session = store.session(NS)
        first = session.stage("/a.md")
        first.write(make_chunks("/a.md", 1), _vectors(1))
        first.commit()
        pg.execute(f"SELECT setval('{pg_schema}.generations', 9223372036854775807)")  # sequences ignore transactions
        second = session.stage("/a.md", first.state)  # a state given: no read of the sequence before the update
        with pytest.raises(
            StoreError, match=r": updating the metadata of 1 chunks of /a\.md failed, the database refused it: nextval"
        ):
            second.update_metadata(make_chunks("/a.md", 1, metadata={"n": 2}, metadata_hash="meta-2"))
        session.close()
        assert store.count(NS) == 0


def test_build_index_waits_for_vectors(pg: Any, pg_schema: str) -> None:
    """``build_index`` on a store that never saw a vector builds nothing; once another store wrote some, it reads
    their dimension and builds the index."""
    config = PgVectorStoreConfig(schema=pg_schema, vacuum_after_rows=0)  # index = "hnsw", from 20000 chunks on
    with PgVectorStore(config, dsn=pg.dsn) as store:
        store.build_index()
        assert store.stats(NS)["index"] == "exact"
        with PgVectorStore(config, dsn=pg.dsn) as writer, writer.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 2), _vectors(2))
            stage.commit()
        store.build_index()
        assert store.stats(NS)["index"] == "hnsw" and store.stats(NS)["dimension"] == DIM


def test_explain_gives_postgresql_s_lines_as_they_are(pg: Any, pg_schema: str) -> None:
    """``explain`` joins the lines of PostgreSQL's plan with newlines, nothing added: the same lines as an EXPLAIN
    of the exact statement run by hand."""
    with PgVectorStore(_config(pg_schema), dsn=pg.dsn) as store:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 3), _vectors(3))
            stage.commit()
        plan = store.explain(NS, np.full(DIM, 2.0, dtype=np.float32), top_k=3, exact=True)
    query = "[" + ",".join(["0.35355338"] * DIM) + "]"
    expected = pg.execute(
        f"EXPLAIN SELECT c.chunk_id, c.document_id, c.text, c.source, c.metadata, c.start_offset, c.end_offset, c.tags, "
        f"1 - (c.vector <=> %s::vector) AS score FROM {pg_schema}.chunks c WHERE c.namespace = %s AND c.source_type = 'document' "
        "AND true ORDER BY (c.vector <=> %s::vector) + 0, c.row_id LIMIT %s",
        [query, NS, query, 3],
    )
    lines = plan.split("\n")
    assert len(lines) > 1 and lines[0].startswith("Limit")
    assert lines == [r[0] for r in expected]
