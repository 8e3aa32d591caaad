"""source_type in PostgreSQL: rows of another kind inserted with SQL stay invisible; schema 1 gains the column."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ragloom.plugin import StoreError
from ragloom.types import Chunk
from ragloom_pgvector import SCHEMA_VERSION, PgVectorStore, PgVectorStoreConfig
from ragloom_pgvector.keyword import TermKeys

NS = "types"


def _chunks(source: str, texts: list[str]) -> list[Chunk]:
    return [
        Chunk(id=f"{source}:{i}", document_id=f"{source}#", index=i, text=t, start=0, end=len(t), source=source)
        for i, t in enumerate(texts)
    ]


def _vectors(count: int) -> np.ndarray:
    return np.random.default_rng(7).standard_normal((count, 8)).astype(np.float32)


def test_a_memory_row_inserted_with_sql_is_never_read(pg: Any, pg_schema: str) -> None:
    vectors = _vectors(3)
    store = PgVectorStore(PgVectorStoreConfig(schema=pg_schema, hnsw_min_chunks=1), dsn=pg.dsn)
    try:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(_chunks("/a.md", ["lamp of the document", "river stone", "cloud rain"]), vectors)
            stage.commit()
        store.build_index()
        # an application's own row in the same table: same source and generation, the first chunk's vector,
        # and even BM25 postings for "lamp" (ragloom writes none for such rows)
        pg.execute(
            f"INSERT INTO {pg_schema}.chunks (row_id, namespace, source, generation, document_id, chunk_id, chunk_index, text, "
            "start_offset, end_offset, metadata, tags, content_hash, metadata_hash, doc_length, vector, source_type) "
            f"SELECT -1, namespace, source, generation, 'memory#', 'memory:0', 0, 'lamp lamp lamp remembered', 0, 25, '{{}}', "
            f"ARRAY[]::text[], 'h', 'h', 3, vector, 'memory' FROM {pg_schema}.chunks WHERE chunk_id = '/a.md:0'"
        )
        lamp = TermKeys().key(NS, "lamp")
        pg.execute(f"INSERT INTO {pg_schema}.postings VALUES (%s, -1, 3, 3)", [lamp])
        stored = pg.execute(f"SELECT source_type, count(*) FROM {pg_schema}.chunks GROUP BY 1 ORDER BY 1")
        assert stored == [("document", 3), ("memory", 1)]

        documents = ["/a.md:0", "/a.md:1", "/a.md:2"]
        assert store.plan(NS) == "hnsw"
        for exact in (False, True):
            assert sorted(r.chunk_id for r in store.search(NS, vectors[0], top_k=10, exact=exact)) == documents
            assert store.search(NS, vectors[0], top_k=1, exact=exact)[0].chunk_id == "/a.md:0"
        assert [r.chunk_id for r in store.keyword_search(NS, "lamp", top_k=10)] == ["/a.md:0"]
        assert store.keyword_search(NS, "remembered", top_k=10) == []
        assert store.get_vectors(NS, ["/a.md:0"]).shape == (1, 8)
        with pytest.raises(StoreError, match="memory:0"):
            store.get_vectors(NS, ["memory:0"])
        assert set(store.source_state(NS, "/a.md").documents) == {"/a.md#"}
        assert store.count(NS) == 3 and store.sources(NS) == ["/a.md"]
        assert store.stats(NS)["documents"] == 1 and store.stats(NS)["chunks"] == 3
    finally:
        store.close()


def test_a_schema_1_store_gains_the_column_and_keeps_its_rows(pg: Any, pg_schema: str) -> None:
    vectors = _vectors(2)
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn) as store, store.session(NS) as session:
        stage = session.stage("/old.md")
        stage.write(_chunks("/old.md", ["lamp glows", "fox"]), vectors)
        stage.commit()
    # back to what ragloom-pgvector with schema 1 left behind
    pg.execute(f"ALTER TABLE {pg_schema}.chunks DROP COLUMN source_type")
    pg.execute(f"DELETE FROM {pg_schema}.schema_version WHERE version > 1")

    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn) as store:
        assert store.stats(NS)["schema_version"] == SCHEMA_VERSION == 2
        assert pg.execute(f"SELECT DISTINCT source_type FROM {pg_schema}.chunks") == [("document",)]
        assert [r.chunk_id for r in store.keyword_search(NS, "lamp", top_k=5)] == ["/old.md:0"]
        assert store.search(NS, vectors[1], top_k=1)[0].chunk_id == "/old.md:1"
    assert [r[0] for r in pg.execute(f"SELECT version FROM {pg_schema}.schema_version ORDER BY version")] == [1, 2]
