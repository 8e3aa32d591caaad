"""HNSW and exact vector search, BM25 in SQL scored exactly as ragloom's BM25Index."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest

from ragloom.filters import parse_filter
from ragloom.keyword import BM25Index
from ragloom.types import Chunk
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

NS = "search"
WORDS = "lamp glows warm cold light fox dog river stone cloud rain sun moon star tree leaf wind fire ice sea".split()


def _chunks(source: str, count: int, rng: np.random.Generator, start: int = 0) -> list[Chunk]:
    chunks = []
    for i in range(count):
        text = " ".join(rng.choice(WORDS, size=int(rng.integers(3, 30))))
        chunks.append(
            Chunk(
                id=f"{source}#:{start + i}",
                document_id=f"{source}#",
                index=start + i,
                text=text,
                start=0,
                end=len(text),
                source=source,
                metadata={"n": i % 5},
            )
        )
    return chunks


def _write(store: PgVectorStore, namespace: str, chunks: list[Chunk], vectors: np.ndarray) -> None:
    with store.session(namespace) as session:
        stage = session.stage(chunks[0].source)
        for start in range(0, len(chunks), 1000):
            stage.write(chunks[start : start + 1000], vectors[start : start + 1000])
        stage.commit()


def test_hnsw_answers_large_unfiltered_searches_with_high_recall(pg: Any, pg_schema: str) -> None:
    rng = np.random.default_rng(7)
    dim, n = 32, 3000
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    store = PgVectorStore(PgVectorStoreConfig(schema=pg_schema, hnsw_min_chunks=1000, ef_search=64), dsn=pg.dsn)
    try:
        _write(store, NS, _chunks("/big.md", n, rng), vectors)
        _write(store, "small", _chunks("/s.md", 20, rng), rng.normal(size=(20, dim)).astype(np.float32))
        assert store.plan(NS) == "exact"  # no index until it is built
        store.build_index()
        assert store.stats(NS)["index"] == "hnsw"
        assert store.plan(NS) == "hnsw" and store.plan("small") == "exact"
        assert "chunks_hnsw" in store.explain(NS, vectors[0], top_k=10)
        assert "chunks_hnsw" not in store.explain(NS, vectors[0], top_k=10, exact=True)
        assert "chunks_hnsw" not in store.explain(NS, vectors[0], top_k=10, filter=parse_filter({"n": 1}))
        assert store.plan(NS, parse_filter({"n": 1})) == "exact" and store.plan(NS, exact=True) == "exact"
        recalls = []
        for q in rng.normal(size=(20, dim)).astype(np.float32):
            exact = [r.chunk_id for r in store.search(NS, q, top_k=10, exact=True)]
            approx = store.search(NS, q, top_k=10)
            assert [r.score for r in approx] == sorted((r.score for r in approx), reverse=True)
            recalls.append(len(set(exact) & {r.chunk_id for r in approx}) / 10)
        assert np.mean(recalls) >= 0.9
        # exact scores are cosine similarities of the normalised vectors
        q = rng.normal(size=dim).astype(np.float32)
        best = store.search(NS, q, top_k=1, exact=True)[0]
        expected = vectors @ q / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(q))
        assert best.chunk_id == f"/big.md#:{int(np.argmax(expected))}"
        assert best.score == pytest.approx(float(expected.max()), abs=1e-5)
        # a namespace that is a small part of the index still gets its top-k (fallback past the post-filter)
        store_all = PgVectorStore(PgVectorStoreConfig(schema=pg_schema, hnsw_min_chunks=0, ef_search=10), dsn=pg.dsn)
        try:
            small = store_all.search("small", q, top_k=10)
            assert len(small) == 10 and {r.source for r in small} == {"/s.md"}
            assert [r.chunk_id for r in small] == [r.chunk_id for r in store_all.search("small", q, top_k=10, exact=True)]
        finally:
            store_all.close()
    finally:
        store.close()


def test_bm25_scores_equal_ragloom_bm25_index(pg: Any, pg_schema: str) -> None:
    rng = np.random.default_rng(3)
    store = PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn)
    try:
        a, b = _chunks("/a.md", 150, rng), _chunks("/b.md", 80, rng)
        _write(store, NS, a, rng.normal(size=(150, 8)))
        _write(store, NS, b, rng.normal(size=(80, 8)))
        _write(store, "other", _chunks("/o.md", 50, rng), rng.normal(size=(50, 8)))  # must not change N, df or avgdl
        # replace /b.md: its old postings must leave the statistics
        b2 = _chunks("/b.md", 40, rng, start=1000)
        _write(store, NS, b2, rng.normal(size=(40, 8)))
        index = BM25Index()
        index.add([c.id for c in a + b2], [c.text for c in a + b2])
        for query in ["lamp", "warm light", "fox fox river", "moon star tree sun", "nothing"]:
            expected = index.search(query, top_k=25)
            got = store.keyword_search(NS, query, top_k=25)
            assert [r.chunk_id for r in got] == [k for k, _ in expected], query
            np.testing.assert_allclose([r.score for r in got], [s for _, s in expected], rtol=1e-5)
        filtered = store.keyword_search(NS, "fox", top_k=500, filter=parse_filter({"n": 2, "source": "/a.md"}))
        assert filtered and all(r.metadata["n"] == 2 and r.source == "/a.md" for r in filtered)
        scores = index.score_all("fox")
        assert {r.chunk_id for r in filtered} == {c.id for c in a if c.metadata["n"] == 2 and c.id in scores}
    finally:
        store.close()


def test_keyword_off_drops_the_capability(pg: Any, pg_schema: str) -> None:
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema, keyword=False), dsn=pg.dsn) as store:
        assert "keyword_search" not in store.capabilities
        rng = np.random.default_rng(1)
        _write(store, NS, _chunks("/a.md", 5, rng), rng.normal(size=(5, 8)))
        assert store.count(NS) == 5
        assert pg.execute(f"SELECT count(*) FROM {pg_schema}.postings") == [(0,)]


def test_numpy_bm25_ranks_as_the_sql_statement_ties_included(pg: Any, pg_schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(11)
    chunks = _chunks("/ties.md", 300, rng)
    # equal texts score equally: their order comes from the tie-break (row id), in both paths
    chunks += [attrs.evolve(c, id=f"{c.id}-twin", index=c.index + 1000) for c in chunks[:40]]
    vectors = rng.standard_normal((len(chunks), 8)).astype(np.float32)
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn) as store:
        _write(store, NS, chunks, vectors)
        queries = ["lamp", "fox dog dog", "river stone cloud", "sun moon star tree leaf", "nothing matches this"]
        numpy_path = [[(r.chunk_id, round(r.score, 9)) for r in store.keyword_search(NS, q, top_k=25)] for q in queries]
        monkeypatch.setattr(store, "_keyword_numpy", lambda *args: None)  # the SQL statement (the fallback path)
        sql_path = [[(r.chunk_id, round(r.score, 9)) for r in store.keyword_search(NS, q, top_k=25)] for q in queries]
    assert numpy_path == sql_path
    assert len(numpy_path[0]) == 25 and numpy_path[-1] == []


def test_a_write_sent_in_several_copy_parts_stores_every_row_and_posting(pg: Any, pg_schema: str) -> None:
    """600 chunks in one write go out as one COPY in parts of 256 rows, each part with its own postings."""
    rng = np.random.default_rng(5)
    store = PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn)
    try:
        chunks = _chunks("/parts.md", 600, rng)
        vectors = rng.normal(size=(600, 8))
        _write(store, NS, chunks, vectors)
        assert store.count(NS) == 600
        picked = [0, 255, 256, 511, 512, 599]
        expected = vectors[picked] / np.linalg.norm(vectors[picked], axis=1, keepdims=True)
        np.testing.assert_allclose(store.get_vectors(NS, [chunks[i].id for i in picked]), expected, rtol=1e-5)
        assert [store.search(NS, vectors[i], top_k=1)[0].text for i in picked] == [chunks[i].text for i in picked]
        index = BM25Index()
        index.add([c.id for c in chunks], [c.text for c in chunks])
        for query in ["lamp", "fox river", "moon star tree sun"]:
            expected_scores = index.score_all(query)
            got = {r.chunk_id: r.score for r in store.keyword_search(NS, query, top_k=600)}
            assert got.keys() == expected_scores.keys(), query
            np.testing.assert_allclose([got[k] for k in expected_scores], list(expected_scores.values()), rtol=1e-5)
    finally:
        store.close()
