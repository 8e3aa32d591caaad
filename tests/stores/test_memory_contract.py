"""The memory store runs the shared store contract."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragloom.stores.memory import MemoryStore
from ragloom.testing import StoreContract


class TestMemoryStoreContract(StoreContract):

    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:
        store = MemoryStore()
        yield store
        store.close()
