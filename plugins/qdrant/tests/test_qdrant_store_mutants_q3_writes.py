"""Writing to a qdrant store: deletes chunk by chunk, generations handed out, batches, waits and error messages.

Written against the qdrant_store mutation survivors (``delete``, ``_reserve``, ``_upsert``, ``_abort``). The
requests the store sends are recorded by wrapping the local-mode client's own methods (they still run): the
store must wait for every write (a server would otherwise apply it later) and send batches of the documented
sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from qdrant_mutant_helpers import fresh_store
from qdrant_mutant_helpers import seeded_vectors as _vectors

import ragloom_qdrant.store as store_module
from ragloom import StoreError
from ragloom.plugin import SourceState, parse_filter
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore, QdrantStoreConfig

NS = "t"


@pytest.fixture
def store() -> Iterator[QdrantStore]:
    yield from fresh_store()


class Crash(Exception):
    """A fault injected into one client request."""


def _commit(store: QdrantStore, chunks: list[Any], keep: tuple[str, ...] = (), namespace: str = NS) -> int:
    with store.session(namespace) as session:
        stage = session.stage(chunks[0].source)
        stage.write(chunks, _vectors(len(chunks)))
        stage.keep(keep)
        return int(stage.commit())


def _record(monkeypatch: pytest.MonkeyPatch, store: QdrantStore, method: str) -> list[tuple[str, int, Any]]:
    """Record ``(collection, points, wait)`` of each ``method`` request the local client receives (it still runs)."""
    calls: list[tuple[str, int, Any]] = []
    local = store.client._client
    original = getattr(local, method)

    def recording(collection_name: str, *args: Any, **kwargs: Any) -> Any:
        selector = kwargs.get("points_selector", kwargs.get("points"))
        size = len(getattr(selector, "points", selector)) if isinstance(getattr(selector, "points", selector), list) else -1
        calls.append((collection_name, size, kwargs.get("wait", "absent")))
        return original(collection_name, *args, **kwargs)

    monkeypatch.setattr(local, method, recording)
    return calls


def _fail(monkeypatch: pytest.MonkeyPatch, store: QdrantStore, method: str, collection: str) -> None:
    local = store.client._client
    original = getattr(local, method)

    def failing(collection_name: str, *args: Any, **kwargs: Any) -> Any:
        if collection_name == collection:
            raise Crash("injected")
        return original(collection_name, *args, **kwargs)

    monkeypatch.setattr(local, method, failing)


def test_a_delete_before_any_write_deletes_nothing(store: QdrantStore) -> None:
    assert store.delete(NS, None) == 0
    assert store.delete(NS, parse_filter({"source": "/a.md"})) == 0


def test_deleting_a_source_chunk_by_chunk_keeps_its_counts_and_state(store: QdrantStore) -> None:
    a = make_chunks("/a.md", 3, content_hash="ha", metadata_hash="ma")
    b = make_chunks("/b.md", 2, content_hash="hb")
    _commit(store, a)
    _commit(store, b)
    assert store.delete(NS, parse_filter({"order": 0})) == 2
    assert store.source_counts(NS) == {"/a.md": 2, "/b.md": 1}
    state = store.source_states(NS, ["/a.md"])["/a.md"]
    assert state.exists and state.documents == {a[0].document_id: "ha"} and state.metadata == {a[0].document_id: "ma"}
    assert store.stats(NS)["documents"] == 2 and store.count(NS) == 3
    assert store.delete(NS, parse_filter({"order": 1})) == 2
    assert store.source_counts(NS) == {"/a.md": 1} and store.sources(NS) == ["/a.md"]
    gone = store.source_states(NS, ["/b.md"])["/b.md"]
    assert not gone.exists and gone.documents == {} and gone.next_generation == 2
    # a re-ingest of /a.md replaces what is left of it: one chunk
    with store.session(NS) as session:
        assert session.stage("/a.md").commit() == 1
    assert store.sources(NS) == [] and store.count(NS) == 0


def test_a_partial_delete_then_a_commit_keeping_the_document(store: QdrantStore) -> None:
    a = make_chunks("/a.md", 3, content_hash="ha")
    _commit(store, a)
    assert store.delete(NS, parse_filter({"order": 2})) == 1
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.keep([a[0].document_id])
        assert stage.commit() == 0
    assert sorted(r.chunk_id for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=10)) == [a[0].id, a[1].id]
    assert store.source_counts(NS) == {"/a.md": 2}


def test_generations_are_handed_out_one_by_one(store: QdrantStore) -> None:
    fresh = store.source_states(NS, ["/a.md"])["/a.md"]
    with store.session(NS) as session:
        first = session.stage("/a.md")
        assert first.generation == fresh.next_generation == 1
        first.write(make_chunks("/a.md", 1), _vectors(1))
        first.commit()
    with store.session(NS) as session:
        assert session.stage("/a.md").generation == 2
        # a state the caller read before: the store still hands out a generation never used
        again = session.stage("/a.md", fresh)
        assert again.generation == 3
        # a caller's state asking for a later generation gets it
        assert session.stage("/a.md", SourceState(generation=0, next_generation=7)).generation == 7
        assert session.stage("/a.md", fresh).generation == 8


def test_a_stale_state_after_an_abort_gets_a_new_generation(store: QdrantStore) -> None:
    state = store.source_states(NS, ["/a.md"])["/a.md"]
    with store.session(NS) as session:
        first = session.stage("/a.md", state)
        first.write(make_chunks("/a.md", 2), _vectors(2))
        first.abort()
        second = session.stage("/a.md", state)
        assert second.generation == first.generation + 1


def test_a_commit_leaves_the_next_generation_of_a_later_open_stage(store: QdrantStore) -> None:
    _commit(store, make_chunks("/a.md", 1))
    early, late = store.session(NS), store.session(NS)
    first = early.stage("/a.md")
    second = late.stage("/a.md")
    assert second.generation == first.generation + 1
    first.write(make_chunks("/a.md", 2, content_hash="v2"), _vectors(2))
    first.commit()
    early.close()
    with store.session(NS) as session:
        assert session.stage("/a.md").generation == second.generation + 1
    late.close()


def test_writes_deletes_and_aborts_wait_for_the_client(store: QdrantStore, monkeypatch: pytest.MonkeyPatch) -> None:
    upserts = _record(monkeypatch, store, "upsert")
    deletes = _record(monkeypatch, store, "delete")
    _commit(store, make_chunks("/a.md", 3))
    with store.session(NS) as session:
        stage = session.stage("/b.md")
        stage.write(make_chunks("/b.md", 2), _vectors(2))
        stage.abort()
    _commit(store, make_chunks("/a.md", 1, content_hash="v2"))
    assert store.delete(NS, None) == 1
    assert {wait for _, _, wait in upserts} == {True}
    assert {wait for _, _, wait in deletes} == {True}
    assert (store.collection, 2, True) in deletes  # the aborted stage
    assert deletes[-1] == (store.collection, 1, True)


def test_points_go_in_batches_of_the_configured_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    store = QdrantStore(QdrantStoreConfig(path=":memory:", batch_size=2))
    try:
        monkeypatch.setattr(store_module, "_BATCH", 2)
        upserts = _record(monkeypatch, store, "upsert")
        deletes = _record(monkeypatch, store, "delete")
        chunks = make_chunks("/a.md", 5)
        _commit(store, chunks)
        assert [size for collection, size, _ in upserts if collection == store.collection] == [2, 2, 1]
        assert sorted(r.chunk_id for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=10)) == sorted(
            c.id for c in chunks
        )
        with store.session(NS) as session:
            stage = session.stage("/b.md")
            stage.write(make_chunks("/b.md", 5), _vectors(5))
            del deletes[:]
            stage.abort()
        assert [size for collection, size, _ in deletes if collection == store.collection] == [2, 2, 1]
        assert store.client.count(store.collection, exact=True).count == 5  # the aborted stage's points are gone
        del deletes[:]
        assert store.delete(NS, parse_filter({"source": "/a.md"})) == 5
        assert [size for collection, size, _ in deletes if collection == store.collection] == [2, 2, 1]
        assert store.client.count(store.collection, exact=True).count == 0
        assert store.sources(NS) == []
    finally:
        store.close()


@pytest.mark.parametrize(
    ("method", "step", "message"),
    [
        ("upsert", "write", "writing points failed"),
        ("delete", "abort", "dropping an aborted stage failed"),
        ("delete", "delete", "delete failed"),
    ],
)
def test_a_failing_request_is_named_in_the_store_error(
    store: QdrantStore, monkeypatch: pytest.MonkeyPatch, method: str, step: str, message: str
) -> None:
    _commit(store, make_chunks("/a.md", 2))
    session = store.session(NS)
    stage = session.stage("/b.md")
    if step != "write":
        stage.write(make_chunks("/b.md", 1), _vectors(1))
    _fail(monkeypatch, store, method, store.collection)
    run: dict[str, Callable[[], Any]] = {
        "write": lambda: stage.write(make_chunks("/b.md", 1), _vectors(1)),
        "abort": stage.abort,
        "delete": lambda: store.delete(NS, None),
    }
    with pytest.raises(StoreError, match=f"^qdrant store: {message}: Crash: injected$"):
        run[step]()


def test_iter_chunks_gives_back_every_field_written(store: QdrantStore) -> None:
    chunks = make_chunks(
        "/a.md", 3, metadata={"lang": "en"}, tags=("public",), content_hash="content-v1", metadata_hash="meta-v1"
    )
    _commit(store, chunks)
    assert sorted((c for batch in store.iter_chunks(NS) for c in batch), key=lambda c: c.index) == chunks
