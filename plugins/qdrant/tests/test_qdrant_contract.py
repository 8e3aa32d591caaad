"""The qdrant store runs the shared store contract: local mode in a folder (with the kill -9 test), and the
selected target (local memory, or the server of ``RAGLOOM_TEST_QDRANT_URL``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qdrant_targets import drop, server_or_memory
from ragloom_qdrant import QdrantStore, QdrantStoreConfig

from ragloom.testing import PersistentStoreContract, StoreContract


class TestQdrantLocalFolderContract(PersistentStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[QdrantStore]:
        self.path = tmp_path / "qdrant"
        self.opened: list[QdrantStore] = []
        store = QdrantStore(QdrantStoreConfig(), path=self.path)
        self.opened.append(store)
        yield store
        for opened in self.opened:
            opened.close()

    def child_store_code(self, store: Any) -> str:
        return f"from ragloom_qdrant import QdrantStore\nstore = QdrantStore(path={str(self.path)!r})"

    def reopen(self, store: Any) -> Any:
        store.close()
        fresh = QdrantStore(QdrantStoreConfig(), path=self.path)
        self.opened.append(fresh)
        return fresh


class TestQdrantContract(StoreContract):
    @pytest.fixture
    def store(self) -> Iterator[QdrantStore]:
        store = server_or_memory()
        yield store
        drop(store)
