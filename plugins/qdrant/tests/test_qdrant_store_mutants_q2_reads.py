"""Reads of the qdrant store: residual filters checked on every field, and the reads' own edges.

Written against the qdrant_store mutation survivors (``_live``, ``_where``, ``source_states``, ``search``,
``get_vectors``, ``iter_chunks``, ``count``, ``stats``). "shared" is local mode in memory through a client
passed in (every read filtered on ``ns``, ``live`` and ``source_type``, as on a server).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from qdrant_client import QdrantClient
from qdrant_client.local.qdrant_local import QdrantLocal

from ragloom import DimensionMismatchError, StoreError
from ragloom.plugin import parse_filter
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore, QdrantStoreConfig

NS = "t"


@pytest.fixture(params=["exclusive", "shared"])
def store(request: pytest.FixtureRequest) -> Iterator[QdrantStore]:
    made = QdrantStore(QdrantStoreConfig(path=":memory:")) if request.param == "exclusive" else QdrantStore(client=QdrantClient(location=":memory:"))
    yield made
    made.close()


def _commit(store: QdrantStore, source: str, chunks: list[Any], namespace: str = NS, vectors: np.ndarray | None = None) -> None:
    with store.session(namespace) as session:
        stage = session.stage(source)
        stage.write(chunks, np.ones((len(chunks), 8), dtype=np.float32) if vectors is None else vectors)
        stage.commit()


def test_a_residual_filter_is_checked_on_metadata_source_document_and_tags(store: QdrantStore) -> None:
    records = {"/a.md": ("cat", ("x",)), "/b.md": ("dog", ()), "/c.md": ("eel", ("x",)), "/0.md": ("ant", ("x",))}
    for source, (title, tags) in records.items():
        _commit(store, source, make_chunks(source, 1, metadata={"title": title}, tags=tags))
    _commit(store, "/a.md", make_chunks("/a.md", 1, metadata={"title": "cat"}, tags=("x",)), namespace="other")
    # every condition residual or not, each on another field; the string orderings are checked by the plugin
    node = parse_filter(
        {"title": {"$gte": "c"}, "source": {"$lt": "/c"}, "document_id": {"$gte": ""}, "tags": "x"}
    )
    results = store.search(NS, np.ones(8, dtype=np.float32), top_k=10, filter=node)
    assert [(r.source, r.metadata["title"], r.tags) for r in results] == [("/a.md", "cat", ("x",))]
    either = parse_filter({"$or": [{"title": {"$lt": "b"}}, {"source": {"$gte": "/c"}}]})
    assert sorted(r.source for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=10, filter=either)) == ["/0.md", "/c.md"]


class Crash(Exception):
    """A fault injected into the client."""


def _fail(monkeypatch: pytest.MonkeyPatch, method: str, collection: str | None = None) -> None:
    """Local mode's ``method`` raises (only for ``collection`` when given)."""
    original = getattr(QdrantLocal, method)

    def failing(self: QdrantLocal, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        if collection is None or collection_name == collection:
            raise Crash("disk gone")
        return original(self, collection_name, *args, **kwargs)

    monkeypatch.setattr(QdrantLocal, method, failing)


def test_read_failures_are_named(store: QdrantStore, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = make_chunks("/a.md", 3, metadata={"title": "cat"})
    _commit(store, "/a.md", chunks)
    cases: list[tuple[str, str | None, str, Any]] = [
        ("query_points", None, "search", lambda: store.search(NS, np.ones(8, dtype=np.float32), top_k=3)),
        ("count", None, "count", lambda: store.count(NS)),
        ("scroll", None, "scrolling chunks", lambda: list(store.iter_chunks(NS))),
        ("scroll", None, "scrolling points", lambda: store.get_vectors(NS, [chunks[0].id])),
        ("retrieve", store.collection, "reading vectors", lambda: _update(store, chunks)),
    ]
    for method, collection, what, call in cases:
        with monkeypatch.context() as patch:
            _fail(patch, method, collection)
            with pytest.raises(StoreError, match=rf"^qdrant store: {what} failed: Crash: disk gone$"):
                call()


def _update(store: QdrantStore, chunks: list[Any]) -> None:
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.update_metadata([attrs.evolve(c, metadata={"title": "dog"}) for c in chunks])
        stage.commit()


def test_a_dimension_mismatch_names_both_dimensions_and_the_collection(store: QdrantStore) -> None:
    _commit(store, "/a.md", make_chunks("/a.md", 1))
    with pytest.raises(DimensionMismatchError) as info:
        store.search(NS, np.ones(4, dtype=np.float32), top_k=3)
    assert (info.value.store_dim, info.value.embedder_dim) == (8, 4)
    assert f"qdrant collection {store.collection!r}" in str(info.value)


def test_search_returns_top_k_and_nothing_for_no_k(store: QdrantStore) -> None:
    _commit(store, "/a.md", make_chunks("/a.md", 12), vectors=np.eye(12, 8, dtype=np.float32) + 0.1)
    assert store.search(NS, np.ones(8, dtype=np.float32), top_k=0) == []
    assert len(store.search(NS, np.ones(8, dtype=np.float32), top_k=1)) == 1
    assert len(store.search(NS, np.ones(8, dtype=np.float32), top_k=12)) == 12
    # a query of one row (an embedder's batch of one) is the same query
    flat = store.search(NS, np.arange(8, dtype=np.float32), top_k=5)
    assert [(r.chunk_id, r.score) for r in store.search(NS, np.arange(8, dtype=np.float32).reshape(1, 8), top_k=5)] == [(r.chunk_id, r.score) for r in flat]


def test_get_vectors_edges(store: QdrantStore) -> None:
    assert store.get_vectors(NS, []).shape == (0, 0)  # before the first write: no dimension yet
    with pytest.raises(StoreError, match=r"^unknown chunk id\(s\): x$"):
        store.get_vectors(NS, ["x"])
    chunks = make_chunks("/a.md", 2)
    _commit(store, "/a.md", chunks, vectors=np.array([[3.0, 4.0, 0, 0, 0, 0, 0, 0], [0, 0, 1.0, 0, 0, 0, 0, 0]], dtype=np.float32))
    elsewhere = make_chunks("/z.md", 1)
    _commit(store, "/z.md", elsewhere, namespace="other")
    empty = store.get_vectors(NS, [])
    assert empty.shape == (0, 8) and empty.dtype == np.float32
    got = store.get_vectors(NS, [chunks[1].id, chunks[0].id, chunks[1].id])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [[0, 0, 1, 0, 0, 0, 0, 0], [0.6, 0.8, 0, 0, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0, 0, 0]], rtol=1e-6)
    with pytest.raises(StoreError, match=rf"^unknown chunk id\(s\): {elsewhere[0].id}$"):  # another namespace's chunk
        store.get_vectors(NS, [elsewhere[0].id])
    asked = [chunks[0].id, *[f"missing-{i}" for i in range(6)]]
    with pytest.raises(StoreError, match=r"^unknown chunk id\(s\): missing-0, missing-1, missing-2, missing-3, missing-4$"):
        store.get_vectors(NS, asked)


def test_get_vectors_of_a_store_without_vectors_is_refused_in_so_many_words() -> None:
    store = QdrantStore(QdrantStoreConfig(path=":memory:", vectors=False))
    try:
        with pytest.raises(StoreError, match=r"^this qdrant store is configured with vectors = false: it does not return stored vectors$"):
            store.get_vectors(NS, [])
    finally:
        store.close()


def test_iter_chunks_pages(store: QdrantStore) -> None:
    assert list(store.iter_chunks(NS)) == []
    chunks = make_chunks("/a.md", 1001)
    _commit(store, "/a.md", chunks)
    _commit(store, "/z.md", make_chunks("/z.md", 2), namespace="other")
    assert [len(batch) for batch in store.iter_chunks(NS)] == [1000, 1]  # pages of 1000 unless asked otherwise
    assert [len(batch) for batch in store.iter_chunks(NS, batch_size=400)] == [400, 400, 201]
    assert sorted(c.id for batch in store.iter_chunks(NS, batch_size=400) for c in batch) == sorted(c.id for c in chunks)
    assert [c.source for batch in store.iter_chunks("other") for c in batch] == ["/z.md", "/z.md"]


def test_counts_are_asked_exact(store: QdrantStore, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Any] = []
    original = QdrantLocal.count

    def recording(self: QdrantLocal, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs.get("exact"))
        return original(self, collection_name, *args, **kwargs)

    monkeypatch.setattr(QdrantLocal, "count", recording)
    assert store.count(NS) == 0  # before the first write: no collection to ask
    _commit(store, "/a.md", make_chunks("/a.md", 3))
    _commit(store, "/z.md", make_chunks("/z.md", 2), namespace="other")
    assert (store.count(NS), store.count("other")) == (3, 2)
    # a server estimates a filtered count unless asked for an exact one
    assert asked == [True, True]


@pytest.mark.parametrize("where", ["memory", "folder"])
def test_stats_say_what_is_stored_and_where(tmp_path: Path, where: str) -> None:
    path = tmp_path / "qdrant"
    store = QdrantStore(QdrantStoreConfig(path=":memory:", collection="kb")) if where == "memory" else QdrantStore(QdrantStoreConfig(collection="kb"), path=path)
    try:
        assert store.stats(NS) == {"chunks": 0, "sources": 0, "documents": 0, "dimension": None, "collection": "kb", "server": "local: memory" if where == "memory" else f"local: {path}"}
        _commit(store, "/a.md", make_chunks("/a.md", 2, part=1) + make_chunks("/a.md", 1, part=2))
        _commit(store, "/b.md", make_chunks("/b.md", 2))
        remembered = attrs.evolve(make_chunks("/m.md", 1)[0], source_type="memory")
        _commit(store, "/m.md", [remembered])
        _commit(store, "/z.md", make_chunks("/z.md", 4), namespace="other")
        assert store.stats(NS) == {"chunks": 5, "sources": 2, "documents": 3, "dimension": 8, "collection": "kb", "server": "local: memory" if where == "memory" else f"local: {path}"}
        assert store.source_counts(NS) == {"/a.md": 3, "/b.md": 2} and store.sources(NS) == ["/a.md", "/b.md"]
        assert store.stats("other")["chunks"] == 4 and store.stats("other")["documents"] == 1
    finally:
        store.close()


def test_scroll_follows_the_pages_to_the_end_once(store: QdrantStore) -> None:
    chunks = make_chunks("/a.md", 5)
    _commit(store, "/a.md", chunks)
    # pages of 2 points: three pages, each point once (a bounded read: a scroll restarting at the first page never ends)
    got = [p.payload["chunk_id"] for p in itertools.islice(store._scroll(store._where(NS), ["chunk_id"], batch=2), 50)]
    assert sorted(got) == sorted(c.id for c in chunks)


def test_update_metadata_reads_the_stored_vectors_of_more_chunks_than_two_requests_hold() -> None:
    store = QdrantStore(QdrantStoreConfig(path=":memory:"))
    try:
        count = 2 * 4096 + 3  # the stored vectors are read 4096 points per request
        chunks = make_chunks("/big.md", count, texts=[f"chunk {i}" for i in range(count)])
        vectors = np.random.default_rng(7).standard_normal((count, 8)).astype(np.float32)
        _commit(store, "/big.md", chunks, vectors=vectors)
        with store.session(NS) as session:
            stage = session.stage("/big.md")
            stage.update_metadata([attrs.evolve(c, metadata={"v": 2}) for c in chunks])
            stage.commit()
        ends = [chunks[0].id, chunks[-1].id]
        expected = vectors[[0, -1]] / np.linalg.norm(vectors[[0, -1]], axis=1, keepdims=True)
        np.testing.assert_allclose(store.get_vectors(NS, ends), expected, rtol=1e-5)
        assert store.count(NS) == count
    finally:
        store.close()
