"""The qdrant store runs the shared store contract, in local mode (a folder) and in memory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragloom.testing import PersistentStoreContract, StoreContract
from ragloom_qdrant import QdrantStore, QdrantStoreConfig


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


class TestQdrantInMemoryContract(StoreContract):
    @pytest.fixture
    def store(self) -> Iterator[QdrantStore]:
        store = QdrantStore(QdrantStoreConfig(path=":memory:"))
        yield store
        store.close()
