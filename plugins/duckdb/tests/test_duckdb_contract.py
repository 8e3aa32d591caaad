"""The duckdb store runs the shared store contract on a real database file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragloom.testing import PersistentStoreContract
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig


class TestDuckDBFileContract(PersistentStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[DuckDBStore]:
        self.path = tmp_path / "store.duckdb"
        self.opened: list[DuckDBStore] = []
        store = DuckDBStore(DuckDBStoreConfig(), path=self.path)
        self.opened.append(store)
        yield store
        for opened in self.opened:
            opened.close()

    def child_store_code(self, store: Any) -> str:
        return f"from ragloom_duckdb import DuckDBStore\nstore = DuckDBStore(path={str(self.path)!r})"

    def reopen(self, store: Any) -> Any:
        store.close()
        fresh = DuckDBStore(DuckDBStoreConfig(), path=self.path)
        self.opened.append(fresh)
        return fresh
