"""A stage whose postings reach the commit statement's buffer COPYs them on the way (mutation tests of pgvector_store)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ragloom.keyword import BM25Index
from ragloom.types import Chunk
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig
from ragloom_pgvector import store as store_mod

NS = "copy"


def _chunks(count: int, words: int, rng: np.random.Generator, start: int = 0) -> list[Chunk]:
    """``count`` chunks of ``words`` distinct made-up words each (one posting per word)."""
    vocabulary = np.array([f"zq{i}x" for i in range(60)])
    chunks = []
    for i in range(start, start + count):
        text = " ".join(rng.choice(vocabulary, size=words, replace=False))
        chunks.append(Chunk(id=f"/big.md#:{i}", document_id="/big.md#", index=i, text=text, start=0, end=len(text), source="/big.md"))
    return chunks


def _postings(conn: Any, schema: str) -> tuple[int, int]:
    ((rows, distinct),) = conn.execute(f"SELECT count(*), count(DISTINCT (term_key, row_id)) FROM {schema}.postings").fetchall()
    return int(rows), int(distinct)


def test_postings_reaching_the_buffer_are_copied_once_and_score_as_bm25(pg: Any, pg_schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the buffer's size only trades memory for round trips: a small one runs the COPY path on a small write
    monkeypatch.setattr(store_mod, "_POSTINGS_BUFFER", 100)
    rng = np.random.default_rng(5)
    first = _chunks(10, 10, rng)  # exactly 100 postings: the buffer is full, this write COPYs them
    second = _chunks(9, 11, rng, start=10)  # 99: they wait for the commit statement
    third = _chunks(2, 3, rng, start=19)  # 6 more: 105 buffered, COPYed
    fourth = _chunks(4, 5, rng, start=21)  # 20: with the commit
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=0), dsn=pg.dsn) as store:
        with store.session(NS) as session:
            stage = session.stage("/big.md")
            # each COPY runs inside the open transaction: this session's own connection sees its rows
            for chunks, buffered, copied in ((first, 0, 100), (second, 99, 100), (third, 0, 205), (fourth, 20, 205)):
                stage.write(chunks, rng.normal(size=(len(chunks), 8)).astype(np.float32))
                assert stage._buffered == buffered and sum(len(p) for p in stage._postings) == buffered
                assert _postings(session._conn, pg_schema) == (copied, copied)
            stage.commit()
        assert pg.execute(f"SELECT count(*), count(DISTINCT (term_key, row_id)) FROM {pg_schema}.postings") == [(225, 225)]
        everything = first + second + third + fourth
        index = BM25Index()
        index.add([c.id for c in everything], [c.text for c in everything])
        for query in ["zq7x", "zq12x zq59x", "zq1x zq2x zq3x"]:
            expected = index.score_all(query)
            got = store.keyword_search(NS, query, top_k=100)
            assert {r.chunk_id for r in got} == set(expected), query
            np.testing.assert_allclose([r.score for r in got], [expected[r.chunk_id] for r in got], rtol=1e-5)
