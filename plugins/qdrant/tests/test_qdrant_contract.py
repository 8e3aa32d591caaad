"""The qdrant store runs the shared store contract: local mode in a folder (reopened), and the selected
target (local memory, or the server of ``RAGLOOM_TEST_QDRANT_URL``).

The folder runs ``StoreContract``, not ``PersistentStoreContract``: its kill -9 test (240 sources, three
child processes) takes many minutes in qdrant-client's local mode, which scans every point in Python for
each filtered operation. Crash recovery is tested by injected faults at each step of a commit instead
(test_qdrant_store.py::test_a_crash_during_a_commit_leaves_the_source_old_or_new).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qdrant_targets import drop, server_or_memory

from ragloom.testing import StoreContract
from ragloom_qdrant import QdrantStore, QdrantStoreConfig


class TestQdrantLocalFolderContract(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[QdrantStore]:
        self.path = tmp_path / "qdrant"
        self.opened: list[QdrantStore] = []
        store = QdrantStore(QdrantStoreConfig(), path=self.path)
        self.opened.append(store)
        yield store
        for opened in self.opened:
            opened.close()

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
