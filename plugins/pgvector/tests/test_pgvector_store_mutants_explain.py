"""``explain``: the plan of the very query ``search`` would run (its namespace, query vector and filter)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ragloom.filters import parse_filter
from ragloom.testing import make_chunks
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig


def test_a_store_without_vectors_has_no_plan(pg: Any, pg_schema: str) -> None:
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn) as store:
        assert store.explain("ns", np.ones(8, dtype=np.float32), top_k=3) == ""


def test_the_exact_plan_binds_the_namespace_the_normalized_query_and_the_filter(pg: Any, pg_schema: str) -> None:
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn) as store:
        with store.session("ns") as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 3), np.random.default_rng(1).standard_normal((3, 8)))
            stage.commit()
        query = np.full(8, 2.0, dtype=np.float32)  # normalized: every component 1 / sqrt(8) = 0.35355338
        plain = store.explain("ns", query, top_k=3, exact=True)
        assert "(namespace = 'ns'::text)" in plain
        assert "vector <=> '[0.35355338,0.35355338," in plain
        assert "metadata" not in plain
        filtered = store.explain("ns", query, top_k=3, filter=parse_filter({"n": 1}))
        assert "(namespace = 'ns'::text)" in filtered and "(metadata ->> 'n'::text)" in filtered
