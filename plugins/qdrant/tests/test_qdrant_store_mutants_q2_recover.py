"""Opening a folder a process left behind: interrupted stages dropped, commits finished, every write waited for.

Written against the qdrant_store mutation survivors (``_recover``, ``_migrate``, ``_flip``). A writer "dies" by
closing its client with a session still open; qdrant-client's local mode then reopens the folder. Writes are
recorded by wrapping local mode's own methods (they still run): a server applies a write sent without
``wait=True`` later, so every write of the store must ask to wait (local mode ignores the flag).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient
from qdrant_client.local.qdrant_local import QdrantLocal
from qdrant_mutant_helpers import record_writes

from ragloom import StoreError
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore
from ragloom_qdrant.store import manifest_id

NS = "t"


class Crash(Exception):
    """A fault injected into the client, standing in for a failing disk or server."""


def _commit(store: QdrantStore, source: str, count: int, version: int = 1, namespace: str = NS) -> list[str]:
    chunks = make_chunks(source, count, texts=[f"{source} version {version} chunk {i}" for i in range(count)], content_hash=f"v{version}")
    with store.session(namespace) as session:
        stage = session.stage(source)
        stage.write(chunks, np.random.default_rng(version).standard_normal((count, 8)).astype(np.float32))
        stage.commit()
    return [c.id for c in chunks]


def _record_writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Any]]:
    return record_writes(monkeypatch, ("upsert", "delete", "set_payload", "overwrite_payload"))


def _manifest(store: QdrantStore, source: str, namespace: str = NS) -> dict[str, Any]:
    (point,) = store.client.retrieve(store.manifest, ids=[manifest_id(namespace, source)], with_payload=True)
    return dict(point.payload or {})


def _texts(store: QdrantStore, namespace: str = NS) -> list[str]:
    return sorted(r.text for r in store.search(namespace, np.ones(8, dtype=np.float32), top_k=100))


def _die_while_staging(path: Path) -> QdrantStore:
    """/a.md (3 chunks) and /b.md (2) committed in NS, /c.md (1) in "other"; then /a.md version 2 staged, never committed."""
    store = QdrantStore(path=path)
    _commit(store, "/a.md", 3)
    _commit(store, "/b.md", 2)
    _commit(store, "/c.md", 1, namespace="other")
    session = store.session(NS)
    stage = session.stage("/a.md")
    stage.write(make_chunks("/a.md", 4, texts=[f"staged {i}" for i in range(4)], content_hash="v2"), np.ones((4, 8), dtype=np.float32))
    assert _manifest(store, "/a.md")["staged"] == [2]
    store.close()  # the process dies: the session is never closed
    return store


def test_a_stage_a_dead_process_left_is_dropped_from_the_folder_on_opening(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "qdrant"
    _die_while_staging(path)
    writes = _record_writes(monkeypatch)
    store = QdrantStore(path=path)
    try:
        # the staged points are gone from the folder, not only hidden; nothing else went
        assert store.client.count(store.collection, exact=True).count == 6
        assert _texts(store) == sorted([f"/a.md version 1 chunk {i}" for i in range(3)] + [f"/b.md version 1 chunk {i}" for i in range(2)])
        # the manifest forgets the generation (stored as such: the next opening has nothing to drop)
        manifest = _manifest(store, "/a.md")
        assert manifest["staged"] == [] and manifest["committed"] == 1 and manifest["next"] == 2
        assert store.client.count(store.manifest, exact=True).count == 3  # no manifest written under another id
        assert writes and {wait for _, _, wait in writes} == {True}
        assert ("delete", store.collection, True) in writes
        # one namespace stored beside another: reads name theirs
        assert store.count(NS) == 5 and store.count("other") == 1
    finally:
        store.close()
    writes.clear()
    again = QdrantStore(path=path)  # nothing left to recover: no write at all
    try:
        assert writes == []
        assert again.count(NS) == 5
    finally:
        again.close()


def test_a_failure_dropping_an_interrupted_stage_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "qdrant"
    _die_while_staging(path)

    def failing(self: QdrantLocal, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        raise Crash("disk gone")

    monkeypatch.setattr(QdrantLocal, "delete", failing)
    with pytest.raises(StoreError, match=r"^qdrant store: dropping an interrupted stage failed: Crash: disk gone$"):
        QdrantStore(path=path)


def test_a_folder_with_one_namespace_is_read_without_conditions_after_reopening(tmp_path: Path) -> None:
    path = tmp_path / "qdrant"
    store = QdrantStore(path=path)
    _commit(store, "/a.md", 3)
    store.close()
    reopened = QdrantStore(path=path)
    try:
        assert reopened._where(NS) is None  # the one namespace stored needs no condition (local mode checks each in Python)
        assert reopened.count(NS) == 3
        _commit(reopened, "/b.md", 2, namespace="other")
    finally:
        reopened.close()
    two = QdrantStore(path=path)
    try:
        assert two._where(NS) is not None  # another namespace stored: reads name theirs
        assert two.count(NS) == 3 and two.count("other") == 2
    finally:
        two.close()


def _open(path: Path, mode: str) -> QdrantStore:
    return QdrantStore(path=path) if mode == "exclusive" else QdrantStore(client=QdrantClient(path=str(path)))


@pytest.mark.parametrize("mode", ["exclusive", "shared"])
def test_opening_a_folder_finishes_its_pending_commit_and_waits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    path = tmp_path / "qdrant"
    store = _open(path, mode)
    _commit(store, "/a.md", 3)
    _commit(store, "/b.md", 2)
    dead = store.session(NS)  # a writer that died while staging /b.md: its points stay hidden (shared) or go (exclusive)
    dead.stage("/b.md").write(make_chunks("/b.md", 1, texts=["dead"], content_hash="v9"), np.ones((1, 8), dtype=np.float32))
    session = store.session(NS)
    stage = session.stage("/a.md")
    stage.write(make_chunks("/a.md", 2, texts=["new 0", "new 1"], content_hash="v2"), np.ones((2, 8), dtype=np.float32))
    stage.commit()
    # shared: the flip (live = true) fails; exclusive: dropping the replaced points fails
    method = "set_payload" if mode == "shared" else "delete"
    original = getattr(QdrantLocal, method)

    def dying(self: QdrantLocal, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        raise Crash("killed")

    monkeypatch.setattr(QdrantLocal, method, dying)
    what = "making a generation visible" if mode == "shared" else "dropping the old generation"
    with pytest.raises(StoreError, match=rf"^qdrant store: {what} failed: Crash: killed$"):
        session.flush()  # the commit point is written (pending), the rest is not
    monkeypatch.setattr(QdrantLocal, method, original)
    assert _manifest(store, "/a.md")["pending"] is True
    store.close()
    writes = _record_writes(monkeypatch)
    reopened = _open(path, mode)
    try:
        assert _texts(reopened) == sorted(["new 0", "new 1"] + [f"/b.md version 1 chunk {i}" for i in range(2)])
        assert reopened.client.count(reopened.collection, exact=True).count == (4 if mode == "exclusive" else 5)
        manifest = _manifest(reopened, "/a.md")
        assert manifest["pending"] is False and manifest["committed"] == 2 and manifest["drop"] == [] and manifest["keep"] == []
        assert reopened.client.count(reopened.manifest, exact=True).count == 2
        assert writes and {wait for _, _, wait in writes} == {True}
    finally:
        reopened.close()


def test_a_shared_store_opened_while_another_writes_leaves_its_stages_alone() -> None:
    client = QdrantClient(location=":memory:")
    writer = QdrantStore(client=client)
    _commit(writer, "/old.md", 2)
    session = writer.session(NS)
    new = session.stage("/new.md")  # a new source: its manifest has an empty document list so far
    new.write(make_chunks("/new.md", 3, texts=[f"new {i}" for i in range(3)]), np.ones((3, 8), dtype=np.float32))
    again = session.stage("/old.md")
    again.write(make_chunks("/old.md", 2, texts=["old v2 0", "old v2 1"], content_hash="v2"), np.ones((2, 8), dtype=np.float32))
    reader = QdrantStore(client=client)  # another process opens the collection meanwhile: nothing of it is to migrate
    assert client.count(writer.collection, exact=True).count == 7
    new.commit()
    again.commit()
    session.close()
    try:
        assert _texts(reader) == ["new 0", "new 1", "new 2", "old v2 0", "old v2 1"]
        assert client.count(writer.collection, exact=True).count == 5
    finally:
        writer.close()
