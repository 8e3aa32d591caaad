"""The DuckDB store's reads and deletes beyond the shared contract: each action named in the error of a
damaged file, an empty store's answers, ``get_vectors``' refusals, ``iter_chunks``' batches and ``stats``
(written against the surviving mutants of ``store.py``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from duckdb_writes import DIM, NS
from duckdb_writes import commit_source as _commit
from duckdb_writes import seeded_vectors as _vectors

from ragloom.filters import parse_filter
from ragloom.plugin import SourceState, StoreError
from ragloom.testing import make_chunks
from ragloom_duckdb import SCHEMA_VERSION, DuckDBStore


def _stage_new(store: DuckDBStore, sources: list[str], state: SourceState) -> None:
    with store.session(NS) as session:
        for source in sources:
            stage = session.stage(source, state)
            stage.write(make_chunks(source, 1), _vectors(1, 5))
            stage.commit()


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "store.duckdb"


def _failure(call: Callable[[], Any]) -> str:
    with pytest.raises(StoreError) as info:
        call()
    return str(info.value)


def test_each_action_is_named_in_the_error_of_a_damaged_file(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 2, seed=1)
        cursor = store._db.cursor()
        cursor.execute("DROP VIEW visible_chunks")
        cursor.execute("DROP TABLE sources")  # the file's tables gone behind the store's back: every read is a DuckDB error
        query = _vectors(1, 2)[0]
        actions: dict[str, Callable[[], Any]] = {
            "search": lambda: store.search(NS, query, top_k=1),
            "keyword search": lambda: store.keyword_search(NS, "chunk", top_k=1),
            "hybrid search": lambda: store.hybrid_candidates(NS, None, "chunk", top_k=1),
            "reading vectors": lambda: store.get_vectors(NS, ["x"]),
            "listing chunks": lambda: list(store.iter_chunks(NS)),
            "listing sources": lambda: store.sources(NS),
            "counting sources": lambda: store.source_counts(NS),
            "counting": lambda: store.count(NS),
            "stats": lambda: store.stats(NS),
            "delete": lambda: store.delete(NS, None),
            "reading the state of 2 sources": lambda: store.source_states(NS, ["/a.md", "/b.md", "/a.md"]),
            "committing /n.md": lambda: _stage_new(store, ["/n.md"], SourceState()),
            "committing 2 sources": lambda: _stage_new(store, ["/n1.md", "/n2.md"], SourceState()),
        }
        for action, call in actions.items():
            message = _failure(call)
            assert message.startswith(f"DuckDB store {path}: {action} failed: "), message
            assert "does not exist" in message
        assert _failure(lambda: store.keyword_ceiling(NS, "chunk")).startswith(f"DuckDB store {path}: keyword search failed: ")
        cursor.execute("DROP TABLE chunks")
        # a commit of a source with a visible generation counts the rows it removes first
        stage = store.session(NS).stage("/a.md", SourceState(generation=1, next_generation=2))
        assert _failure(stage.commit).startswith(f"DuckDB store {path}: committing /a.md failed: ")


def test_an_empty_store_answers_without_rows(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        assert store.delete(NS, None) == 0
        assert store.delete(NS, parse_filter({"source": "/a.md"})) == 0
        assert store.count(NS) == 0 and store.sources(NS) == [] and store.source_counts(NS) == {}
        assert store.keyword_search(NS, "chunk", top_k=3) == []
        assert store.search(NS, _vectors(1, 1)[0], top_k=3) == []
        assert list(store.iter_chunks(NS)) == []
        assert store.get_vectors(NS, []).shape == (0, 0)
        ids = [f"c{i}" for i in range(7)]
        assert _failure(lambda: store.get_vectors(NS, ids)) == "unknown chunk id(s): c0, c1, c2, c3, c4"
        assert store.stats(NS) == {
            "chunks": 0, "sources": 0, "documents": 0, "dimension": None, "path": str(path),
            "file_size": os.path.getsize(path) + (os.path.getsize(f"{path}.wal") if os.path.exists(f"{path}.wal") else 0),
            "index": "exact", "schema_version": SCHEMA_VERSION,
        }


def test_get_vectors_in_the_order_asked_and_unknown_ids_named_with_the_namespace(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        chunks = _commit(store, "/a.md", 3, seed=1)
        _commit(store, "/b.md", 2, seed=2, namespace="other")
        ids = [c.id for c in chunks]
        vectors = store.get_vectors(NS, [ids[2], ids[0]])
        assert vectors.dtype == np.float32 and vectors.shape == (2, DIM)
        expected = _vectors(3, 1)
        expected /= np.linalg.norm(expected, axis=1, keepdims=True)
        np.testing.assert_allclose(vectors, expected[[2, 0]], rtol=1e-6)
        missing = [f"m{i}" for i in range(6)]
        assert _failure(lambda: store.get_vectors(NS, [ids[0], *missing])) == f"unknown chunk id(s) in namespace {NS!r}: m0, m1, m2, m3, m4"
        other = make_chunks("/b.md", 1)[0].id
        assert _failure(lambda: store.get_vectors(NS, [other])) == f"unknown chunk id(s) in namespace {NS!r}: {other}"


def test_iter_chunks_gives_batches_of_batch_size_in_row_order(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        first = _commit(store, "/b.md", 3, seed=1, metadata={"lang": "en"}, tags=("t",))
        second = _commit(store, "/a.md", 2, seed=2)
        _commit(store, "/c.md", 2, seed=3, namespace="other")
        batches = list(store.iter_chunks(NS, batch_size=2))
        assert [len(b) for b in batches] == [2, 2, 1]
        listed = [c for b in batches for c in b]
        assert [c.id for c in listed] == [c.id for c in [*first, *second]]
        assert listed[0].metadata == {"lang": "en", "order": 0} and listed[0].tags == ("t",)
        assert listed[4].metadata == {"order": 1} and listed[4].tags == ()
        assert [len(b) for b in store.iter_chunks(NS)] == [5]


def test_stats_count_the_namespace_and_the_file_with_its_wal(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 3, seed=1, part=1)
        _commit(store, "/a.md", 0, seed=1)  # an empty commit of the same source: nothing visible left of it
        for part in (1, 2):
            chunks = make_chunks("/b.md", 2, part=part)
            with store.session(NS) as session:
                stage = session.stage("/b.md")
                if part == 2:
                    stage.keep([make_chunks("/b.md", 1, part=1)[0].document_id])
                stage.write(chunks, _vectors(2, part))
                stage.commit()
        _commit(store, "/c.md", 4, seed=3, namespace="other")
        stats = store.stats(NS)
        wal = f"{path}.wal"
        size = os.path.getsize(path) + (os.path.getsize(wal) if os.path.exists(wal) else 0)
        assert stats == {
            "chunks": 4, "sources": 1, "documents": 2, "dimension": DIM, "path": str(path), "file_size": size,
            "index": "exact", "schema_version": SCHEMA_VERSION,
        }
        assert os.path.exists(wal) and os.path.getsize(wal) > 0  # the WAL counts: it holds the commits not yet checkpointed
        assert store.sources(NS) == ["/b.md"] and store.sources("other") == ["/c.md"]


def test_keyword_search_is_the_namespace_bm25_ranking_cut_at_top_k_and_narrowed_by_a_filter(path: Path) -> None:
    from ragloom.plugin import BM25Index

    with DuckDBStore(path=path) as store:
        assert store.keyword_search(NS, "lamp", top_k=3, filter=parse_filter({"lang": "en"})) == []  # no chunks yet
        texts = ["lamp glows", "dark room", "lamp oil lamp", "a lamp and a lamp and a lamp"]
        chunks = _commit(store, "/a.md", 4, seed=1, texts=texts, metadata={"lang": "en"}, tags=("t",))
        _commit(store, "/b.md", 1, seed=2, texts=["lamp lamp lamp lamp lamp"], namespace="other")
        index = BM25Index()
        index.add([c.id for c in chunks], texts)
        expected = index.search("lamp", top_k=10)
        found = store.keyword_search(NS, "lamp", top_k=10)
        assert [r.chunk_id for r in found] == [k for k, _ in expected]
        np.testing.assert_allclose([r.score for r in found], [s for _, s in expected], rtol=1e-6)
        best = store.keyword_search(NS, "lamp", top_k=1)
        assert [r.chunk_id for r in best] == [expected[0][0]]
        assert best[0].metadata == {"lang": "en", "order": chunks.index(next(c for c in chunks if c.id == expected[0][0]))}
        assert best[0].tags == ("t",) and best[0].source == "/a.md"
        assert store.keyword_search(NS, "lamp", top_k=0) == [] and store.keyword_search(NS, "lamp", top_k=-1) == []
        narrowed = store.keyword_search(NS, "lamp", top_k=10, filter=parse_filter({"order": {"$gte": 2}}))
        assert [r.chunk_id for r in narrowed] == [k for k, _ in expected if k in {chunks[2].id, chunks[3].id}]
        assert [r.chunk_id for r in store.keyword_search("other", "lamp", top_k=10)] == [make_chunks("/b.md", 1)[0].id]
