"""A shared qdrant store (a client passed in, as on a server), paging, residual filters on tags and the manifest
layout, written against the qdrant_store mutation survivors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient

from ragloom import StoreError
from ragloom.plugin import parse_filter
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore, QdrantStoreConfig
from ragloom_qdrant.store import manifest_id

NS = "t"
MANIFEST_KEYS = {"ns", "source", "committed", "next", "pending", "keep", "staged", "docs", "drop", "others"}


def _write(store: QdrantStore, source: str, chunks: list[Any], keep: list[str] = ()) -> None:  # type: ignore[assignment]
    with store.session(NS) as session:
        stage = session.stage(source)
        stage.keep(keep)
        stage.write(chunks, np.random.default_rng(len(chunks)).standard_normal((len(chunks), 8)).astype(np.float32))
        stage.commit()


def _leftover(store: QdrantStore, source: str, generation: int) -> None:
    """A point a killed writer staged and never committed (live = false)."""
    points = store._points(NS, generation, make_chunks(source, 1, texts=[f"leftover of {source}"]), np.ones((1, 8), dtype=np.float32))
    store.client.upsert(store.collection, points=points)


def _texts(store: QdrantStore) -> list[str]:
    return sorted(r.text for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=100))


def test_opening_a_second_store_leaves_another_writers_stage_alone() -> None:
    client = QdrantClient(location=":memory:")
    first = QdrantStore(client=client)
    _write(first, "/a.md", make_chunks("/a.md", 2, texts=["a 0", "a 1"]))
    session = first.session(NS)
    stage = session.stage("/a.md")
    stage.write(make_chunks("/a.md", 1, texts=["a new"], content_hash="v2"), np.ones((1, 8), dtype=np.float32))
    second = QdrantStore(client=client)  # another process opens the same collection meanwhile
    stage.commit()
    session.close()
    assert _texts(second) == ["a new"] and second.count(NS) == 1
    assert client.count(first.collection, exact=True).count == 1


def test_a_shared_reingest_keeps_kept_documents_and_drops_leftovers() -> None:
    store = QdrantStore(client=QdrantClient(location=":memory:"))
    d1 = make_chunks("/a.md", 2, part="d1", texts=["d1 0", "d1 1"])
    d2 = make_chunks("/a.md", 1, part="d2", texts=["d2 old"])
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(d1 + d2, np.ones((3, 8), dtype=np.float32))
        stage.commit()
    _leftover(store, "/a.md", 9)
    _write(store, "/b.md", make_chunks("/b.md", 1, texts=["b"]))
    _write(store, "/a.md", make_chunks("/a.md", 1, part="d2", texts=["d2 new"], content_hash="v2"), keep=[d1[0].document_id])
    assert _texts(store) == ["b", "d1 0", "d1 1", "d2 new"]
    assert store.client.count(store.collection, exact=True).count == 4  # the leftover and the replaced d2 are deleted


def test_a_shared_flip_finished_on_opening_touches_only_its_source(monkeypatch: pytest.MonkeyPatch) -> None:
    client = QdrantClient(location=":memory:")
    store = QdrantStore(client=client)
    _write(store, "/a.md", make_chunks("/a.md", 1, texts=["a old"]))
    _write(store, "/b.md", make_chunks("/b.md", 1, texts=["b"]))
    _leftover(store, "/b.md", 7)
    original = client.set_payload

    def dying(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("killed before the flip")

    monkeypatch.setattr(client, "set_payload", dying)
    with pytest.raises(StoreError):
        _write(store, "/a.md", make_chunks("/a.md", 1, texts=["a new"], content_hash="v2"))
    monkeypatch.setattr(client, "set_payload", original)
    reopened = QdrantStore(client=client)  # finishes /a.md's flip
    assert _texts(reopened) == ["a new", "b"]


def test_a_string_ordering_combined_with_tags_reads_the_stored_tags() -> None:
    store = QdrantStore(QdrantStoreConfig(path=":memory:"))
    try:
        tagged = make_chunks("/a.md", 2, texts=["alpha", "beta"], tags=("x",), metadata={"title": "apple"})
        _write(store, "/a.md", tagged)
        _write(store, "/b.md", make_chunks("/b.md", 1, texts=["gamma"], metadata={"title": "avocado"}))
        node = parse_filter({"$and": [{"tags": {"$in": ["x"]}}, {"title": {"$lt": "b"}}]})
        assert sorted(r.text for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=10, filter=node)) == ["alpha", "beta"]
        node = parse_filter({"$or": [{"tags": {"$in": ["x"]}}, {"title": {"$gt": "b"}}]})
        assert sorted(r.text for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=10, filter=node)) == ["alpha", "beta"]
    finally:
        store.close()


def _guard(monkeypatch: pytest.MonkeyPatch, client: QdrantClient, collection: str, most: int) -> list[int]:
    """Fail a scroll that keeps asking for pages (a scroll that never advances would loop for ever)."""
    original = client.scroll
    calls = [0]

    def counted(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == collection:
            calls[0] += 1
            if calls[0] > most:
                raise RuntimeError("the scroll does not advance")
        return original(name, *args, **kwargs)

    monkeypatch.setattr(client, "scroll", counted)
    return calls


def test_more_manifests_than_one_page(monkeypatch: pytest.MonkeyPatch) -> None:
    store = QdrantStore(QdrantStoreConfig(path=":memory:"))
    try:
        with store.session(NS) as session:
            for i in range(300):
                stage = session.stage(f"/s{i:03}.md")
                stage.write(make_chunks(f"/s{i:03}.md", 1), np.ones((1, 8), dtype=np.float32))
                stage.commit()
        calls = _guard(monkeypatch, store.client, store.manifest, 40)
        counts = store.source_counts(NS)
        assert len(counts) == 300 and set(counts.values()) == {1} and calls[0] >= 2
    finally:
        store.close()


def test_more_points_than_one_page(monkeypatch: pytest.MonkeyPatch) -> None:
    store = QdrantStore(QdrantStoreConfig(path=":memory:"))
    try:
        _write(store, "/a.md", make_chunks("/a.md", 1100, metadata={"title": "a"}))
        calls = _guard(monkeypatch, store.client, store.collection, 40)
        assert store.delete(NS, parse_filter({"title": {"$lt": "b"}})) == 1100  # a residual filter: two scrolls of the points
        assert store.count(NS) == 0 and calls[0] >= 2
    finally:
        store.close()


def _manifest(store: QdrantStore, source: str) -> dict[str, Any]:
    (point,) = store.client.retrieve(store.manifest, ids=[manifest_id(NS, source)], with_payload=True)
    return dict(point.payload or {})


@pytest.mark.parametrize("shared", [False, True])
def test_the_manifest_layout_while_staged_and_once_committed(shared: bool) -> None:
    store = QdrantStore(client=QdrantClient(location=":memory:")) if shared else QdrantStore(QdrantStoreConfig(path=":memory:"))
    try:
        session = store.session(NS)
        stage = session.stage("/a.md")
        staged = _manifest(store, "/a.md")
        assert set(staged) == MANIFEST_KEYS - {"others"}
        assert {k: staged[k] for k in ("committed", "next", "pending", "keep", "staged", "docs", "drop")} == {
            "committed": 0, "next": 1, "pending": False, "keep": [], "staged": [1], "docs": {}, "drop": [],
        }
        chunks = make_chunks("/a.md", 2, content_hash="v1", metadata_hash="m1")
        stage.write(chunks, np.ones((2, 8), dtype=np.float32))
        stage.commit()
        session.close()
        _write(store, "/a.md", make_chunks("/a.md", 1, content_hash="v2", metadata_hash="m2"))
        committed = _manifest(store, "/a.md")
        assert set(committed) == MANIFEST_KEYS
        document = chunks[0].document_id
        assert {k: committed[k] for k in ("committed", "next", "pending", "keep", "staged", "drop", "others")} == {
            "committed": 2, "next": 2, "pending": False, "keep": [], "staged": [], "drop": [], "others": False,
        }
        assert committed["docs"] == {document: {"g": 2, "c": "v2", "m": "m2", "ids": [chunks[0].id], "n": 1}}
    finally:
        store.close()


def test_a_recovery_on_opening_rewrites_each_manifest_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """/a.md's re-ingest dies after its commit point (pending), /b.md's stage is never committed nor aborted."""
    path = tmp_path / "qdrant"
    store = QdrantStore(path=path)
    _write(store, "/a.md", make_chunks("/a.md", 2, texts=["a 0", "a 1"]))
    _write(store, "/b.md", make_chunks("/b.md", 1, texts=["b"]))
    stage = store.session(NS).stage("/b.md")
    stage.write(make_chunks("/b.md", 1, texts=["b staged"], content_hash="v2"), np.ones((1, 8), dtype=np.float32))
    original = store.client.delete

    def dying(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("killed while dropping the old generation")

    monkeypatch.setattr(store.client, "delete", dying)
    session = store.session(NS)
    new = session.stage("/a.md")
    new.write(make_chunks("/a.md", 1, texts=["a new"], content_hash="v2"), np.ones((1, 8), dtype=np.float32))
    new.commit()
    with pytest.raises(StoreError):
        session.flush()
    monkeypatch.setattr(store.client, "delete", original)
    store.close()
    reopened = QdrantStore(path=path)
    try:
        assert _texts(reopened) == ["a new", "b"]
        assert reopened.client.count(reopened.manifest, exact=True).count == 2
        for source, generation in (("/a.md", 2), ("/b.md", 1)):
            manifest = _manifest(reopened, source)
            assert set(manifest) == MANIFEST_KEYS
            assert (manifest["committed"], manifest["pending"], manifest["staged"], manifest["drop"]) == (generation, False, [], [])
    finally:
        reopened.close()
