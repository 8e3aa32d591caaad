"""Which Qdrant the qdrant plugin's tests run against (see conftest.py)."""

from __future__ import annotations

import os
import uuid
from typing import Any

from ragloom_qdrant import QdrantStore, QdrantStoreConfig

SERVER = os.environ.get("RAGLOOM_TEST_QDRANT_URL") or None


def server_or_memory(**options: Any) -> QdrantStore:
    """A fresh, empty store on the test server (a new collection) or in local memory."""
    if SERVER:
        return QdrantStore(QdrantStoreConfig(url=SERVER, collection=f"ragloom_test_{uuid.uuid4().hex[:12]}", **options))
    return QdrantStore(QdrantStoreConfig(path=":memory:", **options))


def drop(store: QdrantStore) -> None:
    """Delete the store's collections on a server (local memory goes with the client), then close."""
    if SERVER:
        for name in (store.collection, store.manifest):
            if store.client.collection_exists(name):
                store.client.delete_collection(name)
    store.close()
