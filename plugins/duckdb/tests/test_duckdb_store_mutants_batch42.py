"""The DuckDB store's query checks and its HNSW path, beyond the shared contract: the refusal of a query of another
dimension, the query's shape and precision, an empty store's vectors, and which searches consult the HNSW index and
with which limits (written against the surviving mutants of ``store.py``).

The HNSW index is the real one; a wrapper around ``HnswIndex.search`` only records its calls (limit and beam width)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from duckdb_writes import DIM, NS
from duckdb_writes import commit_source as _commit
from duckdb_writes import seeded_vectors as _vectors

from ragloom.errors import DimensionMismatchError
from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore
from ragloom_duckdb.config import DuckDBStoreConfig
from ragloom_duckdb.hnsw import HnswIndex


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "store.duckdb"


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, Any]]:
    """(limit, ef_search) of every call of the HNSW index's search, which still answers."""
    calls: list[tuple[int, Any]] = []
    real = HnswIndex.search

    def recorded(self: HnswIndex, query: np.ndarray, limit: int, ef_search: int | None = None) -> np.ndarray:
        calls.append((limit, ef_search))
        return real(self, query, limit, ef_search)

    monkeypatch.setattr(HnswIndex, "search", recorded)
    return calls


def _write(store: DuckDBStore, source: str, vectors: np.ndarray, namespace: str = NS) -> None:
    with store.session(namespace) as session:
        stage = session.stage(source)
        stage.write(make_chunks(source, len(vectors)), vectors.astype(np.float32))
        stage.commit()


def _answers(results: list[Any]) -> list[tuple[str, float]]:
    return [(r.chunk_id, r.score) for r in results]


def test_a_query_of_another_dimension_names_both_dimensions_and_the_file(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 2, seed=1)
        with pytest.raises(DimensionMismatchError) as info:
            store.search(NS, np.ones(DIM - 1, dtype=np.float32), top_k=1)
    assert (info.value.store_dim, info.value.embedder_dim) == (DIM, DIM - 1)
    assert f"DuckDB store {path} holds vectors of dimension {DIM}, but the embedder makes dimension {DIM - 1}" in str(info.value)


def test_a_query_shaped_as_one_row_is_the_same_query(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 5, seed=1)
        query = _vectors(1, 2)
        flat = store.search(NS, query[0], top_k=3)
        assert len(flat) == 3
        assert _answers(store.search(NS, query, top_k=3)) == _answers(flat)  # shape (1, DIM) flattened, not refused


def test_an_empty_stores_vectors_are_float32(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        vectors = store.get_vectors(NS, [])
    assert vectors.shape == (0, 0) and vectors.dtype == np.float32


def test_an_exact_store_never_consults_an_hnsw_index(path: Path, searches: list[tuple[int, Any]]) -> None:
    with DuckDBStore(DuckDBStoreConfig(index="exact", hnsw_min_chunks=0), path=path) as store:
        _commit(store, "/a.md", 6, seed=1)
        assert len(store.search(NS, _vectors(1, 2)[0], top_k=2)) == 2
    assert searches == []


def test_hnsw_answers_from_exactly_hnsw_min_chunks(path: Path, searches: list[tuple[int, Any]]) -> None:
    with DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=5, ef_search=7), path=path) as store:
        _commit(store, "/a.md", 4, seed=1)
        query = _vectors(1, 2)[0]
        assert len(store.search(NS, query, top_k=2)) == 2
        assert searches == []  # 4 chunks, fewer than hnsw_min_chunks: exact
        _commit(store, "/b.md", 1, seed=3)
        assert store.plan(NS) == "hnsw"
        assert len(store.search(NS, query, top_k=2)) == 2
    assert searches == [(2, 7)]  # 5 chunks: the index, asked for top_k with the configured beam width


def test_hnsw_answers_a_namespace_of_one_chunk_when_the_minimum_allows(path: Path, searches: list[tuple[int, Any]]) -> None:
    with DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=1), path=path) as store:
        _commit(store, "/a.md", 1, seed=1)
        assert len(store.search(NS, _vectors(1, 2)[0], top_k=3)) == 1
    assert searches == [(3, 256)]


def _lopsided(store: DuckDBStore, others: int) -> np.ndarray:
    """``others`` chunks in namespace "b" near the query, one chunk of NS opposite it; the query."""
    rng = np.random.default_rng(5)
    query = np.zeros(DIM, dtype=np.float32)
    query[0] = 1.0
    near = query + 0.1 * rng.standard_normal((others, DIM)).astype(np.float32)
    _write(store, "/b.md", near, namespace="b")
    _write(store, "/a.md", -query[None, :])
    return query


def test_hnsw_widens_its_limit_fourfold_until_it_holds_the_namespace(path: Path, searches: list[tuple[int, Any]]) -> None:
    with DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=1), path=path) as store:
        query = _lopsided(store, 40)
        results = store.search(NS, query, top_k=1)
    assert [r.source for r in results] == ["/a.md"]
    assert [limit for limit, _ in searches] == [1, 4, 16, 64]  # the last asks for more than the 41 indexed rows


def test_hnsw_gives_up_after_six_searches(path: Path, searches: list[tuple[int, Any]]) -> None:
    with DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=1), path=path) as store:
        query = _lopsided(store, 1100)
        results = store.search(NS, query, top_k=1)
    assert [r.source for r in results] == ["/a.md"]  # answered by the exact search
    assert [limit for limit, _ in searches] == [1, 4, 16, 64, 256, 1024]


def test_hnsw_stops_widening_once_its_limit_reaches_the_index_size(path: Path, searches: list[tuple[int, Any]]) -> None:
    config = DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=1, threads=1)
    with DuckDBStore(config, path=path) as store:
        query = np.zeros(DIM, dtype=np.float32)
        query[0] = 1.0
        _write(store, "/b.md", np.tile(query, (1020, 1)), namespace="b")  # 1020 equal vectors: a graph walk reaches few
        _write(store, "/a.md", -query + 0.1 * np.random.default_rng(2).standard_normal((4, DIM)).astype(np.float32))
        results = store.search(NS, query, top_k=4)
    assert sorted(r.source for r in results) == ["/a.md"] * 4  # answered by the exact search
    # the search asking for all 1024 indexed rows misses the namespace's: no wider search follows it
    assert [limit for limit, _ in searches] == [4, 16, 64, 256, 1024]
