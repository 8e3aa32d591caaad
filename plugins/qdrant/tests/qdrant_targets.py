"""Which Qdrant the qdrant plugin's tests run against (see conftest.py).

``BACKENDS`` always holds ``"local"`` (qdrant-client's embedded local mode, in memory)
and, when ``RAGLOOM_TEST_QDRANT_URL`` is set, ``"server"``: the fixtures are parametrized
over it, so with a server every such test runs twice (local and server), and without one
the server variant does not exist (it is not a skipped test).
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from ragloom_qdrant import QdrantStore, QdrantStoreConfig

SERVER = os.environ.get("RAGLOOM_TEST_QDRANT_URL") or None
BACKENDS = ["local", "server"] if SERVER else ["local"]


def open_store(backend: str, **options: Any) -> QdrantStore:
    """A fresh, empty store: local mode in memory, or a new collection on the test server.

    On the server the API key comes from ``QDRANT_API_KEY`` (the config's default ``Secret``).
    """
    if backend == "server":
        assert SERVER is not None
        return QdrantStore(QdrantStoreConfig(url=SERVER, collection=f"ragloom_test_{uuid.uuid4().hex[:12]}", **options))
    return QdrantStore(QdrantStoreConfig(path=":memory:", **options))


def drop(store: QdrantStore) -> None:
    """Delete the store's collections on a server (local memory goes with the client), then close."""
    if store._server:
        for name in (store.collection, store.manifest):
            if store.client.collection_exists(name):
                store.client.delete_collection(name)
    store.close()
