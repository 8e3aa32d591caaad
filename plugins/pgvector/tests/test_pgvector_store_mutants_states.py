"""A source's next generation against the generations sequence, and how often a missing HNSW index is looked for."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

import ragloom_pgvector.store as store_module
from ragloom.testing import make_chunks
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

NS = "states"


def _commit(store: PgVectorStore, source: str, count: int = 1) -> None:
    with store.session(NS) as session:
        stage = session.stage(source)
        stage.write(make_chunks(source, count), np.random.default_rng(count).standard_normal((count, 8)))
        stage.commit()


def test_the_next_generation_is_the_sequences_next_value(pg: Any, pg_schema: str) -> None:
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn) as store:
        assert store.source_state(NS, "/a.md").next_generation == 2  # a fresh sequence: nothing handed out yet
        _commit(store, "/a.md")
        state = store.source_state(NS, "/a.md")
        assert (state.generation, state.next_generation) == (2, 3)  # the sequence starts at 1 before its first nextval
        _commit(store, "/a.md", 2)
        state = store.source_state(NS, "/a.md")
        assert (state.generation, state.next_generation) == (3, 4)


def test_a_sequence_lagging_behind_a_committed_generation_never_hands_it_out_again(pg: Any, pg_schema: str) -> None:
    """A restore that put the generations sequence back: the next generation stays above the visible one."""
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn) as store:
        pg.execute(f"SELECT setval('{pg_schema}.generations', 40)")
        _commit(store, "/a.md")
        assert store.source_state(NS, "/a.md").generation == 41
        pg.execute(f"SELECT setval('{pg_schema}.generations', 1)")
        state = store.source_state(NS, "/a.md")
        assert (state.generation, state.next_generation) == (41, 42)
        _commit(store, "/a.md", 3)  # the re-ingest swaps in a newer generation, never one below the visible
        state = store.source_state(NS, "/a.md")
        assert state.generation == 42
        assert len(store.search(NS, np.ones(8, dtype=np.float32), top_k=10)) == 3


def test_a_missing_index_is_looked_for_again_after_ten_seconds(pg: Any, pg_schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = types.SimpleNamespace(monotonic=lambda: 1000.0)
    monkeypatch.setattr(store_module, "time", clock)  # the store's clock only (the pool keeps the real one)
    unindexed = PgVectorStoreConfig(schema=pg_schema, hnsw_min_chunks=10**9)
    with PgVectorStore(unindexed, dsn=pg.dsn) as writer:
        _commit(writer, "/a.md", 3)
    config = PgVectorStoreConfig(schema=pg_schema, hnsw_min_chunks=4)
    with PgVectorStore(config, dsn=pg.dsn) as reader:  # 3 chunks: opened without building the index
        assert reader.plan(NS) == "exact"  # no index at 1000.0 s: that answer is kept for ten seconds
        with PgVectorStore(unindexed, dsn=pg.dsn) as writer:
            _commit(writer, "/b.md", 1)
        PgVectorStore(config, dsn=pg.dsn).close()  # another process's open builds the index over the 4 chunks
        clock.monotonic = lambda: 1010.0
        assert reader.plan(NS) == "exact"  # ten seconds exactly: not yet
        clock.monotonic = lambda: 1010.5
        assert reader.plan(NS) == "hnsw"
