"""Every write the qdrant store sends waits for Qdrant to apply it, written against the qdrant_store mutation survivors.

A Qdrant server acknowledges a write sent with ``wait = false`` before applying it, so a read that follows may not
see it (a manifest naming points not yet written, a flip not yet visible). Local mode applies every write at once,
so these tests check what the client hands local mode: each write's ``wait`` must be True.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient
from qdrant_client.local.qdrant_local import QdrantLocal
from test_qdrant_store_mutants_migrate import (
    test_a_first_layout_commit_interrupted_after_its_commit_point_is_finished_with_its_kept_documents as migration,
)

from ragloom.plugin import parse_filter
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore

NS = "t"
WRITES = ("upsert", "delete", "set_payload", "create_payload_index")


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Any]]]:
    """``(method, wait)`` of every write local mode receives during the test."""
    seen: list[tuple[str, Any]] = []
    for name in WRITES:

        def checked(self: QdrantLocal, *args: Any, __original: Any = getattr(QdrantLocal, name), __name: str = name, **kwargs: Any) -> Any:
            seen.append((__name, kwargs.get("wait")))
            return __original(self, *args, **kwargs)

        monkeypatch.setattr(QdrantLocal, name, checked)
    yield seen


def _commit(store: QdrantStore, source: str, count: int, version: int) -> None:
    with store.session(NS) as session:
        stage = session.stage(source)
        stage.write(make_chunks(source, count, texts=[f"{source} v{version} {i}" for i in range(count)]), np.ones((count, 8), dtype=np.float32))
        stage.commit()


def _work(store: QdrantStore) -> None:
    """Commits, a re-ingest (its old generation dropped), a delete, an aborted stage."""
    _commit(store, "/a.md", 3, 1)
    _commit(store, "/b.md", 2, 1)
    _commit(store, "/a.md", 2, 2)
    assert store.delete(NS, parse_filter({"source": "/b.md"})) == 2
    stage = store.session(NS).stage("/c.md")
    stage.write(make_chunks("/c.md", 1), np.ones((1, 8), dtype=np.float32))
    stage.abort()
    assert store.count(NS) == 2


@pytest.mark.parametrize("mode", ["exclusive", "shared"])
def test_every_write_waits(writes: list[tuple[str, Any]], tmp_path: Path, mode: str) -> None:
    path = tmp_path / "qdrant"
    store = QdrantStore(path=path) if mode == "exclusive" else QdrantStore(client=QdrantClient(location=":memory:"))
    try:
        _work(store)
        if mode == "exclusive":  # a stage a killed process left: dropped on opening
            stage = store.session(NS).stage("/d.md")
            stage.write(make_chunks("/d.md", 1), np.ones((1, 8), dtype=np.float32))
    finally:
        store.close()
    if mode == "exclusive":
        QdrantStore(path=path).close()
    assert {name for name, _ in writes} >= ({"upsert", "delete"} if mode == "exclusive" else {"upsert", "delete", "set_payload"})
    assert [w for w in writes if w[1] is not True] == []


@pytest.mark.parametrize("mode", ["exclusive", "shared"])
def test_every_write_of_a_migration_waits(writes: list[tuple[str, Any]], tmp_path: Path, mode: str) -> None:
    migration(tmp_path, mode)
    assert {name for name, _ in writes} >= {"upsert", "delete", "set_payload"}
    assert [w for w in writes if w[1] is not True] == []
