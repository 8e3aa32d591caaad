"""Migrating a collection of ragloom-qdrant's first layout, written against the qdrant_store mutation survivors.

The first layout (before chunks had a source type) wrote points without a ``source_type`` field and
manifests without a document list. A shared store (a server, or a client passed in) reads only points of
``source_type = "document"``: the migration must give those points the field, or the migrated sources'
chunks are counted in their manifests but never found.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient

from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore
from ragloom_qdrant.store import manifest_id

NS = "t"


def _open(path: Path, mode: str) -> QdrantStore:
    return QdrantStore(path=path) if mode == "exclusive" else QdrantStore(client=QdrantClient(path=str(path)))


def _first_layout(path: Path, mode: str) -> list[str]:
    """A folder as the first layout left it: two committed sources, no source_type on the points, no document lists."""
    store = _open(path, mode)
    ids = []
    with store.session(NS) as session:
        for source, count in (("/a.md", 3), ("/b.md", 2)):
            chunks = make_chunks(source, count, texts=[f"{source} chunk {i}" for i in range(count)])
            stage = session.stage(source)
            stage.write(chunks, np.random.default_rng(count).standard_normal((count, 8)).astype(np.float32))
            stage.commit()
            ids += [c.id for c in chunks]
    client = store.client
    points, _ = client.scroll(store.collection, limit=100, with_payload=True)
    for point in points:
        client.overwrite_payload(store.collection, payload={k: v for k, v in (point.payload or {}).items() if k != "source_type"}, points=[point.id])
    for source in ("/a.md", "/b.md"):
        (manifest,) = client.retrieve(store.manifest, ids=[manifest_id(NS, source)], with_payload=True)
        payload = {k: v for k, v in (manifest.payload or {}).items() if k not in ("docs", "staged", "drop", "others")}
        client.overwrite_payload(store.manifest, payload=payload, points=[manifest_id(NS, source)])
    store.close()
    return ids


@pytest.mark.parametrize("mode", ["exclusive", "shared"])
def test_points_of_the_first_layout_without_a_source_type_stay_visible(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "qdrant"
    ids = _first_layout(path, mode)
    store = _open(path, mode)
    try:
        assert store.source_counts(NS) == {"/a.md": 3, "/b.md": 2}
        assert store.count(NS) == 5
        assert sorted(r.chunk_id for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=10)) == sorted(ids)
        chunks = [c for batch in store.iter_chunks(NS) for c in batch]
        assert sorted(c.id for c in chunks) == sorted(ids)
        assert {c.source_type for c in chunks} == {"document"}
    finally:
        store.close()


def _to_first_layout(store: QdrantStore, sources: list[str]) -> None:
    """Strip ``sources``' points of their source_type and their manifests of the fields the first layout lacked."""
    client = store.client
    points, _ = client.scroll(store.collection, limit=1000, with_payload=True)
    for point in points:
        payload = point.payload or {}
        if payload["source"] in sources:
            client.overwrite_payload(store.collection, payload={k: v for k, v in payload.items() if k != "source_type"}, points=[point.id])
    for source in sources:
        (manifest,) = client.retrieve(store.manifest, ids=[manifest_id(NS, source)], with_payload=True)
        payload = {k: v for k, v in (manifest.payload or {}).items() if k not in ("docs", "staged", "drop", "others")}
        client.overwrite_payload(store.manifest, payload=payload, points=[manifest_id(NS, source)])


def _unlisted(store: QdrantStore, source: str, generation: int, chunks: list[Any]) -> None:
    """Points of ``chunks`` in ``generation`` as the first layout staged them: live = false, no source_type."""
    points = store._points(NS, generation, chunks, np.ones((len(chunks), 8), dtype=np.float32))
    for point in points:
        payload = point.payload or {}
        payload["live"] = False
        del payload["source_type"]
    store.client.upsert(store.collection, points=points)


@pytest.mark.parametrize("mode", ["exclusive", "shared"])
def test_a_first_layout_commit_interrupted_after_its_commit_point_is_finished_with_its_kept_documents(tmp_path: Path, mode: str) -> None:
    """/a.md was re-ingested keeping d1 and replacing d2 (generation 2), killed after its commit point; other sources hold
    stages the first layout left behind; /m.md holds rows of another source type (written by today's layout)."""
    import attrs

    path = tmp_path / "qdrant"
    store = _open(path, mode)
    d1 = make_chunks("/a.md", 2, part="d1", content_hash="v1", metadata_hash="m1")
    d2 = make_chunks("/a.md", 1, part="d2", content_hash="v1", metadata_hash="m1")
    others = {s: make_chunks(s, 1, content_hash="v1", metadata_hash="m1") for s in ("/b.md", "/c.md", "/g.md", "/h.md")}  # manifests read before and after /a.md's
    memory = [attrs.evolve(c, source_type="memory") for c in make_chunks("/m.md", 2)]
    with store.session(NS) as session:
        for source, chunks in (("/a.md", d1 + d2), *others.items(), ("/m.md", memory)):
            stage = session.stage(source)
            stage.write(chunks, np.random.default_rng(len(chunks)).standard_normal((len(chunks), 8)).astype(np.float32))
            stage.commit()
    _to_first_layout(store, ["/a.md", *others])
    new_d2 = make_chunks("/a.md", 1, part="d2", texts=["d2 version 2"], content_hash="v2", metadata_hash="m2")
    _unlisted(store, "/a.md", 2, new_d2)
    for source in others:
        _unlisted(store, source, 5, make_chunks(source, 1, texts=[f"leftover of {source}"]))
    layout = {"ns": NS, "source": "/a.md", "committed": 2, "next": 2, "pending": True, "keep": [d1[0].document_id]}
    store.client.overwrite_payload(store.manifest, payload=layout, points=[manifest_id(NS, "/a.md")])
    store.close()

    store = _open(path, mode)
    try:
        visible = {r.chunk_id: r.text for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=50)}
        expected = {c.id: c.text for c in d1 + new_d2 + [c for chunks in others.values() for c in chunks]}
        assert visible == expected
        assert sorted(c.id for batch in store.iter_chunks(NS) for c in batch) == sorted(expected)
        assert store.count(NS) == len(expected)
        state = store.source_states(NS, ["/a.md", "/b.md"])
        assert state["/a.md"].generation == 2
        assert state["/a.md"].documents == {d1[0].document_id: "v1", new_d2[0].document_id: "v2"}
        assert state["/a.md"].metadata == {d1[0].document_id: "m1", new_d2[0].document_id: "m2"}
        assert state["/b.md"].documents == {others["/b.md"][0].document_id: "v1"} and state["/b.md"].metadata == {others["/b.md"][0].document_id: "m1"}
        assert store.source_counts(NS) == {"/a.md": 3, "/b.md": 1, "/c.md": 1, "/g.md": 1, "/h.md": 1, "/m.md": 0} or store.source_counts(NS) == {
            "/a.md": 3, "/b.md": 1, "/c.md": 1, "/g.md": 1, "/h.md": 1,
        }
        # the migrated manifests hold today's layout, the interrupted commit finished
        for source in ("/a.md", "/b.md"):
            (point,) = store.client.retrieve(store.manifest, ids=[manifest_id(NS, source)], with_payload=True)
            manifest = point.payload or {}
            assert set(manifest) == {"ns", "source", "committed", "next", "pending", "keep", "staged", "docs", "drop"}
            assert (manifest["pending"], manifest["keep"], manifest["staged"], manifest["drop"]) == (False, [], [], [])
        # the replaced and the leftover points are gone from the collection, not only hidden
        assert store.client.count(store.collection, exact=True).count == len(expected) + len(memory)
        # a re-ingest after the migration replaces both documents
        TestReingest.commit(store, "/a.md")
        assert sorted(r.text for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=50) if r.source == "/a.md") == ["/a.md v3"]
    finally:
        store.close()


class TestReingest:
    @staticmethod
    def commit(store: QdrantStore, source: str) -> None:
        with store.session(NS) as session:
            stage = session.stage(source)
            stage.write(make_chunks(source, 1, texts=[f"{source} v3"], content_hash="v3"), np.ones((1, 8), dtype=np.float32))
            stage.commit()
