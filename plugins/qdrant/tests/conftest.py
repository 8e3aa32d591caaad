"""Which Qdrant the tests run against.

By default qdrant-client's embedded local mode (in memory, or a folder for the
persistence tests). With ``RAGLOOM_TEST_QDRANT_URL`` set (and ``QDRANT_API_KEY``
when the server needs one) the ``qdrant_store`` factory connects to that server
instead, each store in a collection of its own, dropped afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from qdrant_targets import drop, server_or_memory

from ragloom_qdrant import QdrantStore


@pytest.fixture
def qdrant_store() -> Iterator[Callable[..., QdrantStore]]:
    """``qdrant_store(**options)``: fresh stores on the selected target, cleaned up after the test."""
    made: list[QdrantStore] = []

    def make(**options: Any) -> QdrantStore:
        store = server_or_memory(**options)
        made.append(store)
        return store

    yield make
    for store in made:
        drop(store)
