"""The qdrant store's search edges, written against the qdrant_store mutation survivors."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.errors import DimensionMismatchError
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore, QdrantStoreConfig

NS = "t"


def test_search_edges() -> None:
    store = QdrantStore(QdrantStoreConfig(path=":memory:", collection="kb"))
    try:
        chunks = make_chunks("/a.md", 3)
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(chunks, np.eye(8, dtype=np.float32)[:3])
            stage.commit()
        query = np.eye(8, dtype=np.float32)[1]
        assert [r.chunk_id for r in store.search(NS, query, top_k=1)] == [chunks[1].id]  # one result asked, one given
        assert store.search(NS, query, top_k=0) == []
        assert [r.chunk_id for r in store.search(NS, query.reshape(1, 8), top_k=1)] == [chunks[1].id]  # a row vector is flattened
        with pytest.raises(DimensionMismatchError) as info:
            store.search(NS, np.ones(5, dtype=np.float32), top_k=1)
        assert (info.value.store_dim, info.value.embedder_dim) == (8, 5)
        assert str(info.value).startswith("qdrant collection 'kb' holds vectors of dimension 8, but the embedder makes dimension 5;")
    finally:
        store.close()
