"""The ragloom plugin: registers the ``duckdb`` store."""

from __future__ import annotations

from ragloom.plugin import BuildContext, Store, hookimpl
from ragloom_duckdb.config import DuckDBStoreConfig


def _duckdb(config: DuckDBStoreConfig, context: BuildContext) -> Store:
    """One DuckDB file: exact or HNSW vector search, BM25 keyword search, crash-safe writes."""
    from ragloom_duckdb.store import DuckDBStore

    path = config.path if config.path == ":memory:" else str(context.resolve_path(config.path))
    return DuckDBStore(config, path=path)


@hookimpl
def register_stores(register):  # type: ignore[no-untyped-def]
    register("duckdb", _duckdb, config=DuckDBStoreConfig)
