"""The ragloom plugin: registers the ``pgvector`` store."""

from __future__ import annotations

from typing import Any

from ragloom.plugin import hookimpl
from ragloom_pgvector.config import PgVectorStoreConfig


def _pgvector(config: PgVectorStoreConfig, context: Any) -> Any:
    """PostgreSQL + pgvector: many processes, HNSW or exact search, BM25 in SQL, exact concurrent re-ingest."""
    from ragloom_pgvector.store import PgVectorStore

    return PgVectorStore(config)


@hookimpl
def register_stores(register):  # type: ignore[no-untyped-def]
    register("pgvector", _pgvector, config=PgVectorStoreConfig)
