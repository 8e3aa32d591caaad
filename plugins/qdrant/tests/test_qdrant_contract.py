"""The qdrant store runs the shared store contract: local mode in a folder (reopened), and each backend
of ``qdrant_targets.BACKENDS`` (local memory, plus the server of ``RAGLOOM_TEST_QDRANT_URL`` when set).

The folder runs ``StoreContract``, not ``PersistentStoreContract``: the contract's kill -9 test (240
sources, three child processes, each manifest write a synced SQLite transaction) passes on a folder but took 120 s in
local mode at load 10 (too long for the suite). Crash recovery is tested by injected faults at each step of a commit
(test_qdrant_store.py::test_a_crash_during_a_commit_leaves_the_source_old_or_new) and by a SIGKILLed
re-ingest (test_qdrant_kill.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qdrant_targets import drop, open_store

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
    def store(self, backend: str) -> Iterator[QdrantStore]:
        store = open_store(backend)
        yield store
        drop(store)
