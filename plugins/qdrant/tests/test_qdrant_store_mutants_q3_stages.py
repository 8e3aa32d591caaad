"""Stages and sessions of a qdrant store: refusals and their messages, what a commit queues, open stages at a
crash, rows of another source type across a reopen.

Written against the qdrant_store mutation survivors (``QdrantStage``, ``QdrantSession``, ``_publish``,
``_unstage``, ``_stage_update``). A crash is the store closed with sessions still open: nothing else runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from qdrant_mutant_helpers import fresh_store
from qdrant_mutant_helpers import seeded_vectors as _vectors

from ragloom import StoreError
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore

NS = "t"


@pytest.fixture
def store() -> Iterator[QdrantStore]:
    yield from fresh_store()


def _commit(store: QdrantStore, chunks: list[Any]) -> None:
    with store.session(NS) as session:
        stage = session.stage(chunks[0].source)
        stage.write(chunks, _vectors(len(chunks)))
        stage.commit()


def _texts(store: QdrantStore) -> list[str]:
    return sorted(r.text for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=100))


def _stored(store: QdrantStore) -> int:
    """Points in the collection, visible or not."""
    return int(store.client.count(store.collection, exact=True).count)


def test_a_closed_stage_refuses_everything_with_a_message(store: QdrantStore) -> None:
    chunks = make_chunks("/a.md", 2)
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(chunks, _vectors(2))
        stage.commit()
        closed = f"the stage of /a.md (generation {stage.generation}) is already closed"
        with pytest.raises(StoreError, match=f"^cannot commit: {re.escape(closed)}$"):
            stage.commit()
        with pytest.raises(StoreError, match=f"^cannot write: {re.escape(closed)}$"):
            stage.write(chunks, _vectors(2))
        with pytest.raises(StoreError, match=f"^cannot keep documents: {re.escape(closed)}$"):
            stage.keep([chunks[0].document_id])
        with pytest.raises(StoreError, match=f"^cannot update metadata: {re.escape(closed)}$"):
            stage.update_metadata(chunks)
        stage.abort()  # a committed stage ignores an abort: its points stay
    assert sorted(r.chunk_id for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=10)) == sorted(c.id for c in chunks)


def test_a_chunk_of_another_source_is_named(store: QdrantStore) -> None:
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        with pytest.raises(StoreError, match=r"^a chunk of '/b\.md' was staged for the source '/a\.md'$"):
            stage.write([*make_chunks("/a.md", 1), *make_chunks("/b.md", 1)], _vectors(2))
        with pytest.raises(StoreError, match=r"^a chunk of '/b\.md' was staged for the source '/a\.md'$"):
            stage.update_metadata(make_chunks("/b.md", 1))
        stage.abort()
    assert store.dimension() is None  # refused before anything was written


def test_a_closed_session_refuses_new_stages_and_flushes(store: QdrantStore) -> None:
    session = store.session(NS)
    session.close()
    session.close()  # twice: nothing more
    with pytest.raises(StoreError, match="^the write session is closed$"):
        session.stage("/a.md")
    with pytest.raises(StoreError, match="^the write session is closed$"):
        session.flush()


def test_the_first_five_missing_chunks_are_named(store: QdrantStore) -> None:
    _commit(store, make_chunks("/a.md", 1))
    missing = make_chunks("/a.md", 7, part="never")
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        with pytest.raises(StoreError) as info:
            stage.update_metadata(missing)
        stage.abort()
    assert str(info.value) == f"update_metadata of /a.md: no stored chunk {', '.join(c.id for c in missing[:5])}"


def test_a_commit_is_visible_at_the_flush_and_a_queued_source_is_flushed_only_when_staged_again(store: QdrantStore) -> None:
    with store.session(NS) as session:
        first = session.stage("/a.md")
        first.write(make_chunks("/a.md", 2), _vectors(2))
        first.commit()
        other = session.stage("/b.md")  # another source: /a.md stays queued
        assert store.count(NS) == 0 and store.sources(NS) == []
        other.write(make_chunks("/b.md", 1), _vectors(1))
        other.commit()
        session.stage("/a.md").abort()  # /a.md again: its queued commit is flushed first (and /b.md's with it)
        assert store.sources(NS) == ["/a.md", "/b.md"] and store.count(NS) == 3


def test_writes_and_metadata_updates_of_one_stage_are_all_committed(store: QdrantStore) -> None:
    kept = make_chunks("/a.md", 2, part="kept", metadata={"lang": "en"}, metadata_hash="m1")
    _commit(store, kept)
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 1, part="new", texts=["new 0"]), _vectors(1, 2))
        stage.update_metadata(make_chunks("/a.md", 2, part="kept", metadata={"lang": "de"}, metadata_hash="m2"))
        stage.write(make_chunks("/a.md", 1, part="newer", texts=["newer 0"]), _vectors(1, 3))
        assert stage.commit() == 0
    results = store.search(NS, np.ones(8, dtype=np.float32), top_k=10)
    assert sorted(r.text for r in results) == sorted(["new 0", "newer 0", *(c.text for c in kept)])
    assert {r.metadata["lang"] for r in results if r.document_id == kept[0].document_id} == {"de"}
    assert store.count(NS) == 4 == _stored(store)


def test_every_open_stage_is_aborted_when_a_session_fails(store: QdrantStore) -> None:
    _commit(store, make_chunks("/c.md", 1))
    with pytest.raises(RuntimeError), store.session(NS) as session:
        for source in ("/a.md", "/b.md"):
            session.stage(source).write(make_chunks(source, 2), _vectors(2))
        raise RuntimeError("the loader failed")
    assert store.sources(NS) == ["/c.md"] and _stored(store) == 1
    with store.session(NS) as session:  # nothing of the aborted stages comes back with a later commit
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 1, texts=["again"]), _vectors(1))
        stage.commit()
    assert _texts(store) == sorted(["again", make_chunks("/c.md", 1)[0].text])


def test_open_and_aborted_stages_of_one_source_at_a_crash(tmp_path: Path) -> None:
    """Stages of one source in several sessions: an abort or a commit of one keeps the others recorded, so opening drops them."""
    path = tmp_path / "qdrant"
    store = QdrantStore(path=path)
    _commit(store, make_chunks("/a.md", 2, texts=["v1 0", "v1 1"]))
    left_open = store.session(NS).stage("/a.md")
    left_open.write(make_chunks("/a.md", 3, texts=["open 0", "open 1", "open 2"]), _vectors(3, 2))
    aborted = store.session(NS).stage("/a.md")
    aborted.write(make_chunks("/a.md", 1, texts=["aborted 0"]), _vectors(1, 3))
    aborted.abort()
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 2, texts=["v2 0", "v2 1"], content_hash="v2"), _vectors(2, 4))
        stage.commit()
    assert _texts(store) == ["v2 0", "v2 1"]
    store.close()  # the process dies: the first session never closes
    reopened = QdrantStore(path=path)
    try:
        assert _texts(reopened) == ["v2 0", "v2 1"]
        assert reopened.count(NS) == 2 == _stored(reopened)
        assert reopened.stats(NS)["documents"] == 1
    finally:
        reopened.close()


def test_an_abort_leaves_one_manifest_per_source(store: QdrantStore) -> None:
    first = make_chunks("/a.md", 2, part="one")
    _commit(store, first)
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 1, part="aborted"), _vectors(1))
        stage.abort()
    assert store.client.count(store.manifest, exact=True).count == 1  # the source's own manifest, nothing beside it
    _commit(store, make_chunks("/a.md", 3, part="two"))
    assert store.stats(NS)["documents"] == 1 and store.source_counts(NS) == {"/a.md": 3}
    assert store.client.count(store.manifest, exact=True).count == 1


def _rows(source: str, count: int, kind: str, **options: Any) -> list[Any]:
    return [attrs.evolve(c, source_type=kind) for c in make_chunks(source, count, **options)]


def test_rows_of_another_source_type_stay_hidden_after_a_reopen(tmp_path: Path) -> None:
    """The manifest records them (``others``), also when a later commit of the source only keeps them."""
    path = tmp_path / "qdrant"
    store = QdrantStore(path=path)
    documents = make_chunks("/m.md", 2, part="doc", texts=["doc 0", "doc 1"])
    memory = _rows("/m.md", 2, "memory", part="mem", texts=["mem 0", "mem 1"])
    with store.session(NS) as session:
        stage = session.stage("/m.md")
        stage.write(memory + documents, _vectors(4))
        stage.commit()
    store.close()
    store = QdrantStore(path=path)
    try:
        assert _texts(store) == ["doc 0", "doc 1"] and store.count(NS) == 2
        with store.session(NS) as session:  # keep both documents, write nothing
            stage = session.stage("/m.md")
            stage.keep([documents[0].document_id, memory[0].document_id])
            assert stage.commit() == 0
        with store.session(NS) as session:  # a new document beside the kept rows
            stage = session.stage("/m.md")
            stage.keep([documents[0].document_id, memory[0].document_id])
            stage.write(make_chunks("/m.md", 1, part="new", texts=["new 0"]), _vectors(1, 5))
            stage.commit()
    finally:
        store.close()
    store = QdrantStore(path=path)
    try:
        assert _texts(store) == ["doc 0", "doc 1", "new 0"] and store.count(NS) == 3
        assert sorted(c.text for batch in store.iter_chunks(NS) for c in batch) == ["doc 0", "doc 1", "new 0"]
        assert _stored(store) == 5
    finally:
        store.close()


def test_a_reopened_store_reads_without_conditions_when_no_other_rows_were_stored(tmp_path: Path) -> None:
    """Only rows of another source type make reads filter on it (local mode checks conditions per point)."""
    path = tmp_path / "qdrant"
    store = QdrantStore(path=path)
    one, two = make_chunks("/a.md", 2, part="one"), make_chunks("/a.md", 1, part="two")
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(one + two, _vectors(3))
        stage.commit()
    with store.session(NS) as session:  # a carried document beside a new one
        stage = session.stage("/a.md")
        stage.keep([one[0].document_id])
        stage.write(make_chunks("/a.md", 1, part="three"), _vectors(1, 2))
        stage.commit()
    store.close()
    reopened = QdrantStore(path=path)
    try:
        assert reopened.count(NS) == 3 and reopened._where(NS) is None
    finally:
        reopened.close()


def test_a_metadata_update_before_anything_is_stored_names_the_chunks(store: QdrantStore) -> None:
    chunks = make_chunks("/a.md", 2)
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        with pytest.raises(StoreError, match=f"^update_metadata of /a.md: no stored chunk {chunks[0].id}, {chunks[1].id}$"):
            stage.update_metadata(chunks)
        stage.abort()


def test_chunks_carried_by_a_metadata_update_are_replaced_by_the_next_ingest(store: QdrantStore) -> None:
    chunks = make_chunks("/a.md", 2, metadata={"lang": "en"})
    _commit(store, chunks)
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.update_metadata(make_chunks("/a.md", 2, metadata={"lang": "de"}, metadata_hash="m2"))
        stage.commit()
    assert {r.metadata["lang"] for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=10)} == {"de"}
    _commit(store, make_chunks("/a.md", 1, part="new", texts=["new 0"]))
    assert _texts(store) == ["new 0"] and store.count(NS) == 1 == _stored(store)


def test_a_stage_carries_the_state_it_was_made_from(store: QdrantStore) -> None:
    before = store.source_states(NS, ["/a.md"])["/a.md"]
    with store.session(NS) as session:
        first = session.stage("/a.md")
        assert first.state == before and not first.state.exists
        first.write(make_chunks("/a.md", 1), _vectors(1))
        assert first.commit() == 0  # a new source removes nothing
        second = session.stage("/a.md")  # the queued commit is flushed: the state read after it
        assert second.state.generation == first.generation and second.state.exists


def test_an_aborted_stage_refuses_writes_and_commits(store: QdrantStore) -> None:
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 1), _vectors(1))
        stage.abort()
        with pytest.raises(StoreError, match="^cannot write: "):
            stage.write(make_chunks("/a.md", 1), _vectors(1))
        with pytest.raises(StoreError, match="^cannot commit: "):
            stage.commit()
    assert store.count(NS) == 0 == _stored(store)
