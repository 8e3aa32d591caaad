"""Deletes and re-staged sources in the DuckDB store beyond the shared contract: a source whose last visible row is
deleted has no committed generation left, a delete keeps the HNSW graph in step, and staging a source again after
its abort does not flush the session (written against the surviving mutants of ``store.py`` and ``session.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragloom.filters import parse_filter
from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig

NS = "ns"
DIM = 4


def _vectors(count: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)


def _commit(store: DuckDBStore, source: str, count: int, seed: int, *, namespace: str = NS) -> None:
    with store.session(namespace) as session:
        stage = session.stage(source)
        stage.write(make_chunks(source, count), _vectors(count, seed))
        stage.commit()


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "store.duckdb"


def test_a_source_deleted_whole_has_no_committed_generation_and_a_partly_deleted_one_keeps_it(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 2, seed=1)
        _commit(store, "/b.md", 3, seed=2)
        _commit(store, "/a.md", 2, seed=3, namespace="other")
        assert store.delete(NS, parse_filter({"source": "/a.md"})) == 2
        assert store.delete(NS, parse_filter({"$and": [{"source": "/b.md"}, {"order": 0}]})) == 1
        states = store.source_states(NS, ["/a.md", "/b.md"])
        assert (states["/a.md"].generation, states["/a.md"].next_generation, dict(states["/a.md"].documents)) == (0, 2, {})
        assert not states["/a.md"].exists
        assert (states["/b.md"].generation, states["/b.md"].next_generation) == (1, 2) and states["/b.md"].exists
        assert store.source_states("other", ["/a.md"])["/a.md"].generation == 1  # the same source elsewhere is untouched
        with store.session(NS) as session:  # staged again: a fresh generation, nothing of the old one removed twice
            stage = session.stage("/a.md")
            assert stage.generation == 2
            stage.write(make_chunks("/a.md", 1), _vectors(1, 4))
            assert stage.commit() == 0
        assert store.source_counts(NS) == {"/a.md": 1, "/b.md": 2} and store.count("other") == 2


def test_a_delete_keeps_the_hnsw_graph_in_step(path: Path) -> None:
    with DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=1), path=path) as store:
        _commit(store, "/a.md", 6, seed=1)
        _commit(store, "/b.md", 6, seed=2)
        query = _vectors(1, 9)[0]
        assert store.plan(NS) == "hnsw" and len(store.search(NS, query, top_k=12)) == 12  # the graph is built
        assert store.delete(NS, parse_filter({"source": "/a.md"})) == 6
        found = store.search(NS, query, top_k=12)
        assert {r.source for r in found} == {"/b.md"} and len(found) == 6


def test_staging_an_aborted_source_again_does_not_flush_the_session(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        with store.session(NS) as session:
            aborted = session.stage("/a.md")
            aborted.write(make_chunks("/a.md", 1), _vectors(1, 1))
            aborted.abort()
            session.flush()
            other = session.stage("/b.md")
            other.write(make_chunks("/b.md", 2), _vectors(2, 2))
            other.commit()
            again = session.stage("/a.md")  # nothing of /a.md is waiting: /b.md's commit stays buffered
            assert store.count(NS) == 0
            again.write(make_chunks("/a.md", 1), _vectors(1, 3))
            again.commit()
        assert store.source_counts(NS) == {"/a.md": 1, "/b.md": 2}
