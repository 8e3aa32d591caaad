"""Which Qdrant the tests run against.

Every test using ``qdrant_store`` runs on qdrant-client's embedded local mode (in memory)
and, when ``RAGLOOM_TEST_QDRANT_URL`` is set (with ``QDRANT_API_KEY`` when the server needs
one), once more against that server, each store in a collection of its own, dropped
afterwards. The folder tests (persistence, crashes, kill -9) are local mode only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from qdrant_targets import BACKENDS, drop, open_store

from ragloom_qdrant import QdrantStore


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """``"local"``, and ``"server"`` when RAGLOOM_TEST_QDRANT_URL is set."""
    return str(request.param)


@pytest.fixture
def qdrant_store(backend: str) -> Iterator[Callable[..., QdrantStore]]:
    """``qdrant_store(**options)``: fresh stores on the fixture's backend, cleaned up after the test."""
    made: list[QdrantStore] = []

    def make(**options: Any) -> QdrantStore:
        store = open_store(backend, **options)
        made.append(store)
        return store

    yield make
    for store in made:
        drop(store)
