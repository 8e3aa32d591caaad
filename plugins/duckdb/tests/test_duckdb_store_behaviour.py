"""The DuckDB store's reads beyond the shared contract: hybrid candidates, the keyword ceiling, per-source
counts, the search plan and the HNSW path against exact search."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragloom.filters import parse_filter
from ragloom.plugin import BM25Index
from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig

NS = "ns"
DIM = 4


def _vectors(count: int, seed: int, dim: int = DIM) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)


def _commit(store: DuckDBStore, source: str, count: int, seed: int, *, namespace: str = NS, vectors: np.ndarray | None = None, **kwargs: object) -> list:
    chunks = make_chunks(source, count, **kwargs)  # type: ignore[arg-type]
    with store.session(namespace) as session:
        stage = session.stage(source)
        stage.write(chunks, _vectors(len(chunks), seed) if vectors is None else vectors)
        stage.commit()
    return chunks


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "store.duckdb"


def test_hybrid_candidates_are_both_searches_from_one_snapshot(path: Path) -> None:
    with DuckDBStore(DuckDBStoreConfig(), path=path) as store:
        query = _vectors(1, 7)[0]
        empty = store.hybrid_candidates(NS, query, "lamp", top_k=3)  # a store without chunks yet
        assert empty is not None and len(empty.vector.keys) == 0 and len(empty.keyword.keys) == 0 and empty.keyword_ceiling == 0.0
        _commit(store, "/a.md", 4, seed=1, texts=["lamp glows", "dark room", "lamp lamp oil", "nothing here"], metadata={"lang": "en"})
        _commit(store, "/b.md", 3, seed=2, texts=["lamp in german", "dunkel", "oil"], metadata={"lang": "de"})
        _commit(store, "/c.md", 2, seed=3, texts=["lamp elsewhere", "x"], namespace="other")
        for filter in (None, parse_filter({"lang": "en"})):
            both = store.hybrid_candidates(NS, query, "lamp oil", top_k=3, filter=filter)
            assert both is not None
            vector = store.search(NS, query, top_k=3, filter=filter)
            keyword = store.keyword_search(NS, "lamp oil", top_k=3, filter=filter)
            assert [c[0] for c in both.vector.payloads] == [r.chunk_id for r in vector]
            assert both.vector.keys.dtype == np.int64 and both.vector.scores.dtype == np.float64
            np.testing.assert_allclose(both.vector.scores, [r.score for r in vector], rtol=1e-6)
            assert [c[0] for c in both.keyword.payloads] == [r.chunk_id for r in keyword]
            assert both.keyword.keys.dtype == np.int64
            np.testing.assert_allclose(both.keyword.scores, [r.score for r in keyword], rtol=1e-6)
            assert both.keyword_ceiling == pytest.approx(store.keyword_ceiling(NS, "lamp oil")) and both.keyword_ceiling > 0
            # the same chunk has the same key in both members
            keys = {c[0]: int(k) for k, c in zip(both.vector.keys, both.vector.payloads, strict=True)}
            assert len(set(keys.values())) == len(keys)
            for key, chunk in zip(both.keyword.keys, both.keyword.payloads, strict=True):
                assert keys.get(chunk[0], int(key)) == int(key)
            result = both.result(both.keyword.payloads[0], 0.25)
            assert _fields(result) == {**_fields(keyword[0]), "score": 0.25}
        filtered = store.hybrid_candidates(NS, query, "lamp", top_k=10, filter=parse_filter({"lang": "de"}))
        assert filtered is not None
        assert {c[3] for c in filtered.vector.payloads} == {"/b.md"} and {c[3] for c in filtered.keyword.payloads} == {"/b.md"}
        only_vector = store.hybrid_candidates(NS, query, None, top_k=3)
        assert only_vector is not None
        assert len(only_vector.vector.keys) == 3 and len(only_vector.keyword.keys) == 0 and only_vector.keyword_ceiling == 0.0
        only_keyword = store.hybrid_candidates(NS, None, "lamp", top_k=10)
        assert only_keyword is not None and len(only_keyword.vector.keys) == 0
        assert {c[0] for c in only_keyword.keyword.payloads} == {c.id for batch in store.iter_chunks(NS) for c in batch if "lamp" in c.text}
        no_match = store.hybrid_candidates(NS, query, "quokka", top_k=3)
        assert no_match is not None and len(no_match.keyword.keys) == 0 and len(no_match.vector.keys) == 3
        one = store.hybrid_candidates(NS, query, "lamp oil", top_k=1)
        assert one is not None and len(one.vector.keys) == 1 and len(one.keyword.keys) == 1
        for top_k in (0, -1):
            none = store.hybrid_candidates(NS, query, "lamp", top_k=top_k)
            assert none is not None and len(none.vector.keys) == 0 and len(none.keyword.keys) == 0 and none.keyword_ceiling == 0.0
        nothing = store.hybrid_candidates("empty", query, "lamp", top_k=3)
        assert nothing is not None and len(nothing.vector.keys) == 0 and len(nothing.keyword.keys) == 0 and nothing.keyword_ceiling == 0.0


def _fields(result: object) -> dict[str, object]:
    return {name: getattr(result, name) for name in ("chunk_id", "document_id", "text", "score", "source", "metadata", "span", "tags")}


def test_hybrid_candidates_leave_the_vector_side_to_hnsw_when_it_would_answer(path: Path) -> None:
    with DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=4), path=path) as store:
        _commit(store, "/a.md", 6, seed=1, texts=[f"lamp {i}" for i in range(6)])
        query = _vectors(1, 3)[0]
        assert store.hybrid_candidates(NS, query, "lamp", top_k=3) is None  # the retriever calls both searches then
        keyword_only = store.hybrid_candidates(NS, None, "lamp", top_k=3)
        assert keyword_only is not None and len(keyword_only.keyword.keys) == 3
        filtered = store.hybrid_candidates(NS, query, "lamp", top_k=3, filter=parse_filter({"order": {"$gte": 0}}))
        assert filtered is not None and len(filtered.vector.keys) == 3  # a filtered search stays exact
        small = store.hybrid_candidates("other", query, "lamp", top_k=3)  # under hnsw_min_chunks: exact
        assert small is not None and len(small.vector.keys) == 0


def test_keyword_ceiling_is_the_namespace_index_ceiling(path: Path) -> None:
    with DuckDBStore(DuckDBStoreConfig(), path=path) as store:
        assert store.keyword_ceiling(NS, "lamp") == 0.0
        texts = ["lamp glows", "dark room", "lamp oil lamp"]
        chunks = _commit(store, "/a.md", 3, seed=1, texts=texts)
        _commit(store, "/b.md", 1, seed=2, texts=["lamp lamp lamp lamp"], namespace="other")
        index = BM25Index()
        index.add([c.id for c in chunks], texts)
        for query in ("lamp", "lamp dark", "unknownword"):
            assert store.keyword_ceiling(NS, query) == pytest.approx(index.ceiling(query))
        assert store.keyword_ceiling(NS, "lamp") > 0 and store.keyword_ceiling("empty", "lamp") == 0.0


def test_source_counts_are_the_visible_chunks_per_source_in_source_order(path: Path) -> None:
    with DuckDBStore(DuckDBStoreConfig(), path=path) as store:
        assert store.source_counts(NS) == {}
        _commit(store, "/b.md", 3, seed=1)
        _commit(store, "/a.md", 2, seed=2, part="one")
        _commit(store, "/a.md", 1, seed=3, part="two")  # replaces part one: one source, one chunk
        _commit(store, "/c.md", 4, seed=4, namespace="other")
        counts = store.source_counts(NS)
        assert counts == {"/a.md": 1, "/b.md": 3} and list(counts) == ["/a.md", "/b.md"]
        assert all(type(n) is int for n in counts.values())
        assert store.source_counts("other") == {"/c.md": 4} and store.source_counts("empty") == {}


def test_the_plan_is_hnsw_only_for_an_unfiltered_namespace_of_at_least_hnsw_min_chunks(path: Path) -> None:
    with DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=5), path=path) as store:
        assert store.plan(NS) == "exact"  # no chunks at all
        _commit(store, "/a.md", 4, seed=1)
        assert store.plan(NS) == "exact"  # 4 < 5
        _commit(store, "/b.md", 1, seed=2)
        assert store.plan(NS) == "hnsw"  # exactly hnsw_min_chunks
        assert store.plan(NS, parse_filter({"order": 0})) == "exact"
        assert store.plan("empty") == "exact"
    with DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0), path=path) as store:
        assert store.plan(NS) == "hnsw" and store.plan("empty") == "exact"  # an empty namespace is never hnsw
        assert store.search("empty", _vectors(1, 1)[0], top_k=3) == []
    with DuckDBStore(DuckDBStoreConfig(index="exact", hnsw_min_chunks=0), path=path) as store:
        assert store.plan(NS) == "exact"


def _rows(results: list) -> list[tuple[object, ...]]:
    return [(r.chunk_id, round(r.score, 5), r.text, r.source, r.span, r.tags, sorted(r.metadata.items())) for r in results]


def test_hnsw_search_equals_exact_search_on_a_small_graph_with_ties_and_other_namespaces(path: Path) -> None:
    vectors = _vectors(30, 11)
    vectors[10:16] = vectors[3]  # ties: equal scores are ordered by row, as exact search orders them
    with DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=20), path=path) as store:
        _commit(store, "/a.md", 30, seed=0, vectors=vectors, tags=("t",))
        # a bigger namespace beside it: the graph holds both, a search keeps only its own namespace's rows
        _commit(store, "/big.md", 120, seed=5, namespace="big")
        exact = DuckDBStore(DuckDBStoreConfig(), path=path)  # the same file through exact search
        try:
            assert store.plan(NS) == "hnsw" and store.plan("big") == "hnsw"
            probes = [vectors[3], *_vectors(5, 12)]
            for probe in probes:
                for top_k in (1, 4, 9, 30, 31):
                    got, truth = store.search(NS, probe, top_k=top_k), exact.search(NS, probe, top_k=top_k)
                    if top_k >= 30:  # every row: equal scores in row order, as exact search orders them
                        assert _rows(got) == _rows(truth), top_k
                    else:  # a cut inside the tied rows may keep any of them: the same scores, best first
                        assert [round(r.score, 5) for r in got] == [round(r.score, 5) for r in truth], top_k
                    assert len(got) == min(top_k, 30) and {r.source for r in got} == {"/a.md"}
            tied = store.search(NS, vectors[3], top_k=7)
            assert [r.chunk_id for r in tied] == [f"{tied[0].document_id}:{i}" for i in (3, 10, 11, 12, 13, 14, 15)]
            assert store.search(NS, probes[1], top_k=0) == []
            big = store.search("big", probes[1], top_k=5)
            assert _rows(big) == _rows(exact.search("big", probes[1], top_k=5)) and {r.source for r in big} == {"/big.md"}
        finally:
            exact.close()
