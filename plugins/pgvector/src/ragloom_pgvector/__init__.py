"""ragloom-pgvector: the shared ``pgvector`` store (PostgreSQL + pgvector) for ragloom.

``PgVectorStore`` is imported lazily, so discovering the plugin does not import
psycopg.
"""

from __future__ import annotations

from typing import Any

from ragloom_pgvector.config import PgVectorStoreConfig

__all__ = ["SCHEMA_VERSION", "PgVectorStore", "PgVectorStoreConfig"]


def __getattr__(name: str) -> Any:
    if name == "PgVectorStore":
        from ragloom_pgvector.store import PgVectorStore

        return PgVectorStore
    if name == "SCHEMA_VERSION":
        from ragloom_pgvector.schema import SCHEMA_VERSION

        return SCHEMA_VERSION
    raise AttributeError(f"module 'ragloom_pgvector' has no attribute {name!r}")
