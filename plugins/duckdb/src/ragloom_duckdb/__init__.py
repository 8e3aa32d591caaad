"""ragloom-duckdb: the embedded, persistent ``duckdb`` store for ragloom.

``DuckDBStore`` is imported lazily, so discovering the plugin does not import
duckdb or pyarrow.
"""

from __future__ import annotations

from typing import Any

from ragloom_duckdb.config import DuckDBStoreConfig

__all__ = ["SCHEMA_VERSION", "DuckDBStore", "DuckDBStoreConfig"]


def __getattr__(name: str) -> Any:
    if name in ("DuckDBStore", "SCHEMA_VERSION"):
        from ragloom_duckdb import store

        return getattr(store, name)
    raise AttributeError(f"module 'ragloom_duckdb' has no attribute {name!r}")
