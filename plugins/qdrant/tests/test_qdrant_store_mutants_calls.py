"""The qdrant store's errors, its collection's distance and its batched requests, written against the
qdrant_store mutation survivors (faults are injected into a real local-mode client)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient

from ragloom import StoreError
from ragloom.errors import DimensionMismatchError
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore, QdrantStoreConfig

NS = "t"


class Refused(Exception):
    """A fault injected into the client."""


def _commit(store: QdrantStore, source: str, count: int, dim: int = 8) -> None:
    with store.session(NS) as session:
        stage = session.stage(source)
        stage.write(make_chunks(source, count), np.random.default_rng(count).standard_normal((count, dim)).astype(np.float32))
        stage.commit()


def test_a_client_failure_names_the_step_and_the_error_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    store = QdrantStore(QdrantStoreConfig(path=":memory:"))
    try:
        _commit(store, "/a.md", 2)

        def refusing(*args: Any, **kwargs: Any) -> Any:
            raise Refused("no space left")

        monkeypatch.setattr(store.client, "query_points", refusing)
        with pytest.raises(StoreError, match=r"^qdrant store: search failed: Refused: no space left$") as info:
            store.search(NS, np.ones(8, dtype=np.float32), top_k=3)
        assert isinstance(info.value.__cause__, Refused)
    finally:
        store.close()


def test_a_dimension_mismatch_names_both_dimensions_and_the_collection() -> None:
    store = QdrantStore(QdrantStoreConfig(path=":memory:", collection="kb"))
    try:
        _commit(store, "/a.md", 2, dim=8)
        with pytest.raises(DimensionMismatchError) as info:
            _commit(store, "/b.md", 2, dim=5)
        assert (info.value.store_dim, info.value.embedder_dim) == (8, 5)
        assert str(info.value).startswith("qdrant collection 'kb' holds vectors of dimension 8, but the embedder makes dimension 5;")
    finally:
        store.close()


def test_a_shared_collection_uses_the_cosine_and_an_exclusive_one_the_dot_product() -> None:
    shared = QdrantStore(client=QdrantClient(location=":memory:"))
    exclusive = QdrantStore(QdrantStoreConfig(path=":memory:"))
    try:
        for store, distance in ((shared, "Cosine"), (exclusive, "Dot")):
            _commit(store, "/a.md", 3)
            assert store.client.get_collection(store.collection).config.params.vectors.distance == distance  # type: ignore[union-attr]
        # the same scores either way: the stored vectors and the query are unit length
        query = np.ones(8, dtype=np.float32)
        assert [round(r.score, 5) for r in shared.search(NS, query, top_k=3)] == [round(r.score, 5) for r in exclusive.search(NS, query, top_k=3)]
    finally:
        shared.close()
        exclusive.close()


def test_the_states_of_more_sources_than_one_request_holds() -> None:
    """Manifests are read 4096 ids a request: a source past the second request's ids is still found."""
    store = QdrantStore(QdrantStoreConfig(path=":memory:"))
    try:
        _commit(store, "/real.md", 2)
        wanted = [f"/missing-{i}.md" for i in range(8192)] + ["/real.md"]
        states = store.source_states(NS, wanted)
        assert len(states) == 8193
        assert states["/real.md"].generation == 1 and len(states["/real.md"].documents) == 1
        assert states["/missing-0.md"].generation == 0
    finally:
        store.close()
