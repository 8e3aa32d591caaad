"""Helpers shared by the qdrant store's mutation tests: a fresh in-memory store, seeded vectors, and a record of the
writes local mode receives (the real methods still run)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from qdrant_client.local.qdrant_local import QdrantLocal

from ragloom_qdrant import QdrantStore, QdrantStoreConfig


def fresh_store() -> Iterator[QdrantStore]:
    """A fresh store in local mode, in memory, closed afterwards (``yield from`` it in a fixture)."""
    opened = QdrantStore(QdrantStoreConfig(path=":memory:"))
    yield opened
    opened.close()


def seeded_vectors(count: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, 8)).astype(np.float32)


def record_writes(monkeypatch: pytest.MonkeyPatch, methods: Sequence[str]) -> list[tuple[str, str, Any]]:
    """(method, collection, wait) of every call of ``methods`` local mode receives from now on (a server applies an
    unwaited write later)."""
    calls: list[tuple[str, str, Any]] = []
    for name in methods:
        original = getattr(QdrantLocal, name)

        def recording(self: QdrantLocal, collection_name: str, *args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            calls.append((_name, collection_name, kwargs.get("wait")))
            return _original(self, collection_name, *args, **kwargs)

        monkeypatch.setattr(QdrantLocal, name, recording)
    return calls
