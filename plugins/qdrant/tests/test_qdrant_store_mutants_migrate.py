"""Migrating a collection of ragloom-qdrant's first layout, written against the qdrant_store mutation survivors.

The first layout (before chunks had a source type) wrote points without a ``source_type`` field and
manifests without a document list. A shared store (a server, or a client passed in) reads only points of
``source_type = "document"``: the migration must give those points the field, or the migrated sources'
chunks are counted in their manifests but never found.
"""

from __future__ import annotations

from pathlib import Path

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
