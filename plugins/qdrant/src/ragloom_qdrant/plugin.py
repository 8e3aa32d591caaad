"""The ragloom plugin: registers the ``qdrant`` store."""

from __future__ import annotations

from ragloom.plugin import BuildContext, Store, hookimpl
from ragloom_qdrant.config import QdrantStoreConfig


def _qdrant(config: QdrantStoreConfig, context: BuildContext) -> Store:
    """Qdrant: a server (url + API key) or the embedded local mode; cosine search, payload filters, atomic re-ingest."""
    from ragloom_qdrant.store import QdrantStore

    if config.url is not None or config.path == ":memory:":
        return QdrantStore(config)
    return QdrantStore(config, path=str(context.resolve_path(config.path)))


@hookimpl
def register_stores(register):  # type: ignore[no-untyped-def]
    register("qdrant", _qdrant, config=QdrantStoreConfig)
