"""Making a generation visible (steps 2-4 of a commit): the leftovers of dead writers, the failures named, the manifest left.

Written against the qdrant_store mutation survivors (``_flip``). "shared" is local mode in a folder opened
through a client passed in (points hidden by ``live = false``, as on a server); "exclusive" is the folder
opened by the store.
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
    """A fault injected into the client."""


def _open(path: Path, mode: str) -> QdrantStore:
    return QdrantStore(path=path) if mode == "exclusive" else QdrantStore(client=QdrantClient(path=str(path)))


def _commit(store: QdrantStore, source: str, count: int, version: int = 1, namespace: str = NS) -> None:
    chunks = make_chunks(source, count, texts=[f"{source} version {version} chunk {i}" for i in range(count)], content_hash=f"v{version}")
    with store.session(namespace) as session:
        stage = session.stage(source)
        stage.write(chunks, np.random.default_rng(version).standard_normal((count, 8)).astype(np.float32))
        stage.commit()


def _manifest(store: QdrantStore, source: str, namespace: str = NS) -> dict[str, Any]:
    (point,) = store.client.retrieve(store.manifest, ids=[manifest_id(namespace, source)], with_payload=True)
    return dict(point.payload or {})


def _record_waits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Any]]:
    return record_writes(monkeypatch, ("upsert", "delete", "set_payload"))


def _all_points(store: QdrantStore) -> int:
    return store.client.count(store.collection, exact=True).count


def test_a_shared_commit_drops_the_stages_dead_writers_left_of_its_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "qdrant"
    store = _open(path, "shared")
    _commit(store, "/a.md", 3)
    _commit(store, "/b.md", 2)
    _commit(store, "/a.md", 1, namespace="other")
    for source, namespace in (("/a.md", NS), ("/b.md", NS), ("/a.md", "other")):  # three writers die while staging
        session = store.session(namespace)
        stage = session.stage(source)
        stage.write(make_chunks(source, 2, texts=[f"leftover {i}" for i in range(2)]), np.ones((2, 8), dtype=np.float32))
    store.close()
    store = _open(path, "shared")
    try:
        assert _all_points(store) == 6 + 6  # hidden (live = false), not deleted: nothing says they are dead
        assert store.count(NS) == 5
        writes = _record_waits(monkeypatch)
        _commit(store, "/a.md", 2, version=2)
        assert {w[0] for w in writes} == {"upsert", "set_payload", "delete"} and {w[2] for w in writes} == {True}
        # the new generation replaced the old one, and /a.md's leftovers in this namespace went with it
        assert _all_points(store) == 2 + 2 + 2 + 1 + 2
        assert sorted(r.text for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=50) if r.source == "/a.md") == [
            "/a.md version 2 chunk 0",
            "/a.md version 2 chunk 1",
        ]
        assert store.count(NS) == 4 and store.count("other") == 1
    finally:
        store.close()


@pytest.mark.parametrize("mode", ["exclusive", "shared"])
def test_a_failure_dropping_the_old_generation_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    store = _open(tmp_path / "qdrant", mode)
    try:
        _commit(store, "/a.md", 3)

        def failing(self: QdrantLocal, collection_name: str, *args: Any, **kwargs: Any) -> Any:
            raise Crash("disk gone")

        monkeypatch.setattr(QdrantLocal, "delete", failing)
        # shared: the first delete is the one of dead writers' stages; exclusive: the one of the replaced points
        with pytest.raises(StoreError, match=r"^qdrant store: dropping the old generation failed: Crash: disk gone$"):
            _commit(store, "/a.md", 2, version=2)
    finally:
        store.close()


@pytest.mark.parametrize("mode", ["exclusive", "shared"])
def test_a_flip_leaves_the_manifest_committed_and_nothing_pending(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    path = tmp_path / "qdrant"
    store = _open(path, mode)
    try:
        first, second = make_chunks("/a.md", 2, part=1), make_chunks("/a.md", 3, part=2)
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(first + second, np.ones((5, 8), dtype=np.float32))
            stage.commit()
        writes = _record_waits(monkeypatch)
        replaced = make_chunks("/a.md", 1, part=2, texts=["second, version 2"], content_hash="v2")
        with store.session(NS) as session:  # the first document kept, the second replaced: keep and drop both used
            stage = session.stage("/a.md")
            stage.keep([first[0].document_id])
            stage.write(replaced, np.ones((1, 8), dtype=np.float32))
            stage.commit()
        assert ("delete", store.collection, True) in writes and {w[2] for w in writes} == {True}
        manifest = _manifest(store, "/a.md")
        assert (manifest["committed"], manifest["pending"], manifest["keep"], manifest["drop"], manifest["staged"]) == (2, False, [], [], [])
        assert store.client.count(store.manifest, exact=True).count == 1
        assert store.count(NS) == 3 and _all_points(store) == 3
    finally:
        store.close()
