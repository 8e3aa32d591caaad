"""SQL injection attempts through filter keys and values, namespaces and source names change nothing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ragloom.filters import parse_filter
from ragloom.types import Chunk
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

PAYLOADS = [
    "x'; DROP TABLE chunks; --",
    'x"; DROP TABLE sources; --',
    "') OR ('1'='1",
    "%s %(ns)s {s} $1",
    "ns\\'; SELECT pg_sleep(5); --",
    "robert'); DELETE FROM postings; --",
]


def _chunks(source: str, texts: list[str], metadata: dict[str, Any]) -> list[Chunk]:
    return [
        Chunk(
            id=f"{source}#:{i}",
            document_id=f"{source}#",
            index=i,
            text=t,
            start=0,
            end=len(t),
            source=source,
            metadata=metadata,
            tags=("t'ag",),
        )
        for i, t in enumerate(texts)
    ]


def _write(store: PgVectorStore, namespace: str, chunks: list[Chunk]) -> None:
    with store.session(namespace) as session:
        stage = session.stage(chunks[0].source)
        stage.write(chunks, np.ones((len(chunks), 8), dtype=np.float32))
        stage.commit()


def _tables_intact(pg: Any, schema: str) -> None:
    names = {r[0] for r in pg.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", [schema])}
    assert {"chunks", "sources", "postings", "meta", "schema_version"} <= names


@pytest.mark.parametrize("payload", PAYLOADS)
def test_injection_through_namespace_source_and_filters_is_inert(pg: Any, pg_schema: str, payload: str) -> None:
    store = PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn)
    try:
        _write(store, "safe", _chunks("/safe.md", ["the lamp glows"], {"k": "v"}))
        evil = _chunks(payload, ["a fox " + payload, "another fox"], {payload: payload, "k": "v"})
        _write(store, payload, evil)
        assert store.sources(payload) == [payload]
        assert store.count(payload) == 2 and store.count("safe") == 1
        state = store.source_states(payload, [payload])[payload]
        assert state.exists and set(state.documents) == {f"{payload}#"}
        query = np.ones(8, dtype=np.float32)
        assert len(store.search(payload, query, top_k=10, filter=parse_filter({payload: payload}))) == 2
        assert store.search(payload, query, top_k=10, filter=parse_filter({payload: payload + "x"})) == []
        assert store.search(payload, query, top_k=10, filter=parse_filter({"k": payload})) == []
        assert len(store.search(payload, query, top_k=10, filter=parse_filter({"source": payload}))) == 2
        assert len(store.search(payload, query, top_k=10, filter=parse_filter({"tags": "t'ag"}))) == 2
        assert len(store.keyword_search(payload, "fox", top_k=10, filter=parse_filter({payload: {"$in": [payload]}}))) == 2
        assert store.keyword_search(payload, payload, top_k=10, filter=parse_filter({"document_id": payload})) == []
        assert store.delete(payload, parse_filter({payload: {"$ne": payload}})) == 0
        assert store.delete("safe", parse_filter({"k": {"$in": [payload, payload + "'"]}})) == 0
        _tables_intact(pg, pg_schema)
        assert store.count("safe") == 1 and store.count(payload) == 2
        assert store.delete(payload, parse_filter({"source": payload})) == 2
        assert store.count("safe") == 1
    finally:
        store.close()


@pytest.mark.parametrize("schema", ["ragloom; DROP TABLE x", 'a"b', "Upper", "x" * 64, ""])
def test_schema_names_are_checked_before_any_sql(schema: str) -> None:
    with pytest.raises(ValueError, match="schema"):
        PgVectorStoreConfig(schema=schema)
