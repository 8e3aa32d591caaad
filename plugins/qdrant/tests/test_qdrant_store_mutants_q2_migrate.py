"""Migrating manifests of earlier layouts (no document list), exclusive and shared: the manifest rebuilt, exactly.

Written against the qdrant_store mutation survivors (``_migrate``, ``_recover``). The earlier layout
between d036d9d and add0ef8 is rebuilt by hand from a folder of today's: points with a ``source_type``
(possibly of another type than "document"), manifests without ``docs``, ``staged``, ``drop`` or ``others``,
staged points hidden with ``live = false`` (d19c541's points without ``source_type``:
test_qdrant_store_mutants_migrate.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from qdrant_client import QdrantClient
from qdrant_client.local.qdrant_local import QdrantLocal

from ragloom import StoreError
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore
from ragloom_qdrant.store import manifest_id

NS = "t"
#: the keys of a manifest today's layout writes ("others" only when a row of another source type was seen)
KEYS = {"ns", "source", "committed", "next", "pending", "keep", "staged", "docs", "drop"}


class Crash(Exception):
    """A fault injected into the client."""


def _open(path: Path, mode: str) -> QdrantStore:
    return QdrantStore(path=path) if mode == "exclusive" else QdrantStore(client=QdrantClient(path=str(path)))


def _write(store: QdrantStore, source: str, chunks: list[Any], namespace: str = NS) -> None:
    with store.session(namespace) as session:
        stage = session.stage(source)
        stage.write(chunks, np.random.default_rng(len(chunks)).standard_normal((len(chunks), 8)).astype(np.float32))
        stage.commit()


def _manifest(store: QdrantStore, source: str, namespace: str = NS) -> dict[str, Any]:
    (point,) = store.client.retrieve(store.manifest, ids=[manifest_id(namespace, source)], with_payload=True)
    return dict(point.payload or {})


def _old_manifest(store: QdrantStore, source: str, namespace: str = NS, **changes: Any) -> None:
    payload = {k: v for k, v in _manifest(store, source, namespace).items() if k not in ("docs", "staged", "drop", "others")}
    store.client.overwrite_payload(store.manifest, payload={**payload, **changes}, points=[manifest_id(namespace, source)])


def _hidden_points(store: QdrantStore, generation: int, chunks: list[Any], namespace: str = NS) -> None:
    """Points of ``generation`` staged the earlier layouts' way: ``live = false``."""
    points = store._points(namespace, generation, chunks, np.ones((len(chunks), 8), dtype=np.float32))
    for point in points:
        (point.payload or {})["live"] = False
    store.client.upsert(store.collection, points=points)


def _record_waits(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    waits: list[Any] = []
    for name in ("upsert", "delete", "set_payload"):
        original = getattr(QdrantLocal, name)

        def recording(self: QdrantLocal, collection_name: str, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            waits.append(kwargs.get("wait"))
            return _original(self, collection_name, *args, **kwargs)

        monkeypatch.setattr(QdrantLocal, name, recording)
    return waits


def _settled(path: Path, mode: str) -> dict[str, Any]:
    """A folder of the earlier layout: /a.md (a document and a row of another source type), /b.md, /a.md in
    "other"; leftovers of stages (live = false) of /a.md in both namespaces."""
    store = _open(path, mode)
    first = make_chunks("/a.md", 2, part=1, content_hash="c1", metadata_hash="m1")
    remembered = attrs.evolve(make_chunks("/a.md", 1, part=2, content_hash="cm", metadata_hash="mm")[0], source_type="memory")
    second = make_chunks("/b.md", 3, content_hash="cb", metadata_hash="mb")
    elsewhere = make_chunks("/a.md", 1, texts=["elsewhere"])
    _write(store, "/a.md", [*first, remembered])
    _write(store, "/b.md", second)
    _write(store, "/a.md", elsewhere, namespace="other")
    _hidden_points(store, 9, make_chunks("/a.md", 2, part=3, texts=["leftover 0", "leftover 1"]))
    _hidden_points(store, 9, make_chunks("/a.md", 1, part=3, texts=["leftover elsewhere"]), namespace="other")
    for source, namespace in (("/a.md", NS), ("/b.md", NS), ("/a.md", "other")):
        _old_manifest(store, source, namespace)
    store.close()
    return {"first": first, "remembered": remembered, "second": second}


def _docs(manifest: dict[str, Any]) -> dict[str, Any]:
    return {d: {**e, "ids": sorted(e["ids"])} for d, e in manifest["docs"].items()}


@pytest.mark.parametrize("mode", ["exclusive", "shared"])
def test_a_settled_manifest_of_an_earlier_layout_is_rebuilt_from_its_live_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    path = tmp_path / "qdrant"
    made = _settled(path, mode)
    first, remembered, second = made["first"], made["remembered"], made["second"]
    waits = _record_waits(monkeypatch)
    store = _open(path, mode)
    try:
        assert waits and set(waits) == {True}
        assert store.client.count(store.collection, exact=True).count == 7  # the three leftovers deleted, nothing else
        a = _manifest(store, "/a.md")
        assert _docs(a) == {
            first[0].document_id: {"g": 1, "c": "c1", "m": "m1", "ids": sorted(c.id for c in first), "n": 2},
            remembered.document_id: {"g": 1, "c": "", "m": "", "ids": [remembered.id], "n": 0},
        }
        assert (a["others"], a["staged"], a["drop"], a["pending"], a["keep"], a["committed"]) == (True, [], [], False, [], 1)
        assert set(a) == KEYS | {"others"}
        b = _manifest(store, "/b.md")
        assert _docs(b) == {second[0].document_id: {"g": 1, "c": "cb", "m": "mb", "ids": sorted(c.id for c in second), "n": 3}}
        assert set(b) == KEYS and (b["staged"], b["drop"]) == ([], [])
        assert _docs(_manifest(store, "/a.md", "other")) == {make_chunks("/a.md", 1)[0].document_id: {"g": 1, "c": "hash-1", "m": "meta-1", "ids": [make_chunks("/a.md", 1)[0].id], "n": 1}}
        assert store.client.count(store.manifest, exact=True).count == 3
        states = store.source_states(NS, ["/a.md", "/b.md"])
        assert states["/a.md"].documents == {first[0].document_id: "c1"} and states["/a.md"].metadata == {first[0].document_id: "m1"}
        assert states["/b.md"].documents == {second[0].document_id: "cb"}
        assert store.count(NS) == 5 and store.count("other") == 1  # the row of another source type is not a chunk
        assert sorted(r.chunk_id for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=50)) == sorted(c.id for c in [*first, *second])
        assert store.source_counts(NS) == {"/a.md": 2, "/b.md": 3}
    finally:
        store.close()


@pytest.mark.parametrize("mode", ["exclusive", "shared"])
def test_a_pending_flip_of_an_earlier_layout_keeps_the_documents_it_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    path = tmp_path / "qdrant"
    store = _open(path, mode)
    one, two, three = (make_chunks("/a.md", n, part=p, texts=[f"doc {p} v1 chunk {i}" for i in range(n)]) for p, n in ((1, 2), (2, 2), (3, 1)))
    _write(store, "/a.md", [*one, *two, *three])
    _write(store, "/b.md", make_chunks("/b.md", 1, texts=["b"]))
    writer = store.session(NS)  # another writer's stage of today's layout, in progress: it stays invisible
    writer.stage("/c.md").write(make_chunks("/c.md", 1, texts=["staged elsewhere"]), np.ones((1, 8), dtype=np.float32))
    # killed after its commit point: generation 2 rewrote document 1, kept document 2, left document 3 out
    _hidden_points(store, 2, make_chunks("/a.md", 1, part=1, texts=["doc 1 v2"], content_hash="v2"))
    _hidden_points(store, 7, make_chunks("/a.md", 1, part=9, texts=["leftover"]))
    _old_manifest(store, "/a.md", committed=2, next=2, pending=True, keep=[two[0].document_id])
    _old_manifest(store, "/b.md")
    store.close()
    waits = _record_waits(monkeypatch)
    store = _open(path, mode)
    try:
        assert waits and set(waits) == {True}
        texts = sorted(r.text for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=50))
        assert texts == ["b", "doc 1 v2", "doc 2 v1 chunk 0", "doc 2 v1 chunk 1"]
        assert store.client.count(store.collection, exact=True).count == (4 if mode == "exclusive" else 5)
        manifest = _manifest(store, "/a.md")
        assert _docs(manifest) == {
            one[0].document_id: {"g": 2, "c": "v2", "m": "meta-1", "ids": [one[0].id], "n": 1},
            two[0].document_id: {"g": 1, "c": "hash-1", "m": "meta-1", "ids": sorted(c.id for c in two), "n": 2},
        }
        assert (manifest["committed"], manifest["pending"], manifest["keep"], manifest["drop"], manifest["staged"]) == (2, False, [], [], [])
        assert set(manifest) == KEYS
        assert store.source_counts(NS) == {"/a.md": 3, "/b.md": 1}
    finally:
        store.close()


@pytest.mark.parametrize("mode", ["exclusive", "shared"])
def test_manifests_of_an_earlier_layout_without_a_collection_are_migrated(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "qdrant"
    store = _open(path, mode)
    with store.session(NS) as session:
        session.stage("/empty.md").commit()  # a source committed with no chunks: no collection made
    assert store.dimension() is None
    _old_manifest(store, "/empty.md", pending=True, keep=["x"])
    store.close()
    store = _open(path, mode)
    try:
        manifest = _manifest(store, "/empty.md")
        assert (manifest["docs"], manifest["pending"], manifest["keep"], manifest["staged"], manifest["drop"]) == ({}, False, [], [], [])
        assert set(manifest) == KEYS
        assert store.count(NS) == 0 and store.sources(NS) == []
    finally:
        store.close()


@pytest.mark.parametrize(("pending", "method"), [(True, "set_payload"), (True, "delete"), (False, "delete"), (False, "set_payload")])
def test_a_failure_migrating_a_manifest_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pending: bool, method: str) -> None:
    path = tmp_path / "qdrant"
    store = _open(path, "exclusive")
    _write(store, "/a.md", make_chunks("/a.md", 2))
    _old_manifest(store, "/a.md", **({"pending": True, "keep": []} if pending else {}))
    store.close()

    def failing(self: QdrantLocal, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        raise Crash("disk gone")

    monkeypatch.setattr(QdrantLocal, method, failing)  # the first call of that kind in the migration
    with pytest.raises(StoreError, match=r"^qdrant store: migrating a manifest failed: Crash: disk gone$"):
        QdrantStore(path=path)
