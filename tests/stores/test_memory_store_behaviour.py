"""The memory store's own behaviour beyond the shared contract: growth, compaction, hybrid candidates, sessions."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.errors import DimensionMismatchError, StoreError
from ragloom.filters import parse_filter
from ragloom.keyword import BM25Index
from ragloom.stores.memory import MemoryStore, MemoryStoreConfig
from ragloom.testing.store_contract import make_chunks
from ragloom.types import make_document_id

NS = "ns"
DIM = 4


def _vectors(count: int, seed: int, dim: int = DIM) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)


def _commit(store: MemoryStore, source: str, count: int, seed: int, *, namespace: str = NS, texts: list[str] | None = None, **kwargs: object) -> list:
    chunks = make_chunks(source, count, texts=texts, **kwargs)  # type: ignore[arg-type]
    with store.session(namespace) as session:
        stage = session.stage(source)
        stage.write(chunks, _vectors(len(chunks), seed))
        stage.commit()
    return chunks


def _snapshot(store: MemoryStore, namespace: str = NS) -> dict[str, object]:
    """What a user can read of a namespace (search by several vectors, keyword search, listings)."""
    count = store.count(namespace)
    probes = _vectors(3, 99)
    return {
        "count": count,
        "sources": store.sources(namespace),
        "source_counts": store.source_counts(namespace),
        "stats": store.stats(namespace),
        "chunks": [c.id for c in store.chunks(namespace)],
        "search": [[(r.chunk_id, round(r.score, 5)) for r in store.search(namespace, p, top_k=count + 1)] for p in probes],
        "keyword": [(r.chunk_id, round(r.score, 4)) for r in store.keyword_search(namespace, "lamp seven", top_k=count + 1)],
        "states": {s: store.source_states(namespace, [s])[s].documents for s in store.sources(namespace)},
    }


def test_initial_capacity_must_be_positive_and_a_capacity_of_one_grows() -> None:
    with pytest.raises(ValueError, match="initial_capacity"):
        MemoryStoreConfig(initial_capacity=0)
    store = MemoryStore(MemoryStoreConfig(initial_capacity=1))
    expected = {}
    for i in range(7):  # grows 1 -> 2 -> 4 -> 8, one and then three rows at a time
        chunks = _commit(store, f"/s{i}.md", 1 + 2 * (i % 2), seed=i)
        vectors = _vectors(len(chunks), i)
        for chunk, vector in zip(chunks, vectors, strict=True):
            expected[chunk.id] = vector / np.linalg.norm(vector)
    ids = list(expected)
    np.testing.assert_allclose(store.get_vectors(NS, ids), np.stack([expected[i] for i in ids]), rtol=1e-5, atol=1e-6)
    assert store.count(NS) == len(ids) and [c.id for c in store.chunks(NS)] == ids


def test_compaction_after_deleting_most_rows_changes_nothing_a_user_sees() -> None:
    """Over 4096 rows with most deleted the store compacts; it answers like a store holding only the rest."""
    texts = [f"lamp {'seven' if i % 7 == 0 else 'other'} word{i % 13}" for i in range(100)]
    store, fresh = MemoryStore(), MemoryStore()
    for i in range(45):  # 4500 rows in two namespaces
        _commit(store, f"/s{i:02d}.md", 100, seed=i, texts=texts, namespace=NS if i % 3 else "other")
    doomed = [f"/s{i:02d}.md" for i in range(45) if i % 3 and i >= 8]
    assert store.delete(NS, parse_filter({"source": {"$in": doomed}})) == 100 * len(doomed)
    for i in range(45):
        if f"/s{i:02d}.md" not in doomed:
            _commit(fresh, f"/s{i:02d}.md", 100, seed=i, texts=texts, namespace=NS if i % 3 else "other")
    assert _snapshot(store) == _snapshot(fresh)
    assert _snapshot(store, "other") == _snapshot(fresh, "other")
    # writes after the compaction land in the right namespace and replace the right rows
    for target in (store, fresh):
        _commit(target, "/s01.md", 2, seed=500, texts=["lamp seven again", "new text"])
        _commit(target, "/s00.md", 1, seed=501, texts=["lamp other namespace"], namespace="other")
    assert _snapshot(store) == _snapshot(fresh)
    assert _snapshot(store, "other") == _snapshot(fresh, "other")


def test_a_compaction_by_a_commit_keeps_every_source_whole() -> None:
    """Re-ingesting sources with fewer chunks frees most rows; the commit that compacts keeps the rest right."""
    texts = [f"lamp word{i}" for i in range(600)]
    store, fresh = MemoryStore(), MemoryStore()
    for i in range(8):
        _commit(store, f"/s{i}.md", 600, seed=i, texts=texts)
    for i in range(8):
        _commit(store, f"/s{i}.md", 3, seed=100 + i, texts=["lamp seven", "seven", "other"])
        _commit(fresh, f"/s{i}.md", 3, seed=100 + i, texts=["lamp seven", "seven", "other"])
    assert _snapshot(store) == _snapshot(fresh)
    assert store.source_states(NS, ["/s3.md"])["/s3.md"].documents == {make_document_id("/s3.md"): "hash-1"}


def test_hybrid_candidates_are_both_searches_from_one_snapshot() -> None:
    store = MemoryStore()
    _commit(store, "/a.md", 4, seed=1, texts=["lamp glows", "dark room", "lamp lamp oil", "nothing here"], metadata={"lang": "en"})
    _commit(store, "/b.md", 3, seed=2, texts=["lamp in german", "dunkel", "oil"], metadata={"lang": "de"})
    _commit(store, "/c.md", 2, seed=3, texts=["lamp elsewhere", "x"], namespace="other")
    query = _vectors(1, 7)[0]
    for filter in (None, parse_filter({"lang": "en"})):
        both = store.hybrid_candidates(NS, query, "lamp oil", top_k=3, filter=filter)
        vector = store.search(NS, query, top_k=3, filter=filter)
        keyword = store.keyword_search(NS, "lamp oil", top_k=3, filter=filter)
        assert [c.id for c in both.vector.payloads] == [r.chunk_id for r in vector]
        assert both.vector.scores.dtype == np.float64
        np.testing.assert_allclose(both.vector.scores, [r.score for r in vector], rtol=1e-6)
        assert [c.id for c in both.keyword.payloads] == [r.chunk_id for r in keyword]
        np.testing.assert_allclose(both.keyword.scores, [r.score for r in keyword], rtol=1e-6)
        assert both.keyword_ceiling == pytest.approx(store.keyword_ceiling(NS, "lamp oil")) and both.keyword_ceiling > 0
        # the same chunk has the same key in both members
        keys = {c.id: int(k) for k, c in zip(both.vector.keys, both.vector.payloads, strict=True)}
        for key, chunk in zip(both.keyword.keys, both.keyword.payloads, strict=True):
            assert keys.get(chunk.id, int(key)) == int(key)
        result = both.result(both.keyword.payloads[0], 0.25)
        assert result.chunk_id == both.keyword.payloads[0].id and result.score == 0.25
    only_vector = store.hybrid_candidates(NS, query, None, top_k=3)
    assert len(only_vector.vector.keys) == 3 and len(only_vector.keyword.keys) == 0 and only_vector.keyword_ceiling == 0.0
    only_keyword = store.hybrid_candidates(NS, None, "lamp", top_k=10)
    assert len(only_keyword.vector.keys) == 0 and {c.id for c in only_keyword.keyword.payloads} == {
        c.id for c in store.chunks(NS) if "lamp" in c.text
    }
    nothing = store.hybrid_candidates("empty", query, "lamp", top_k=3)
    assert len(nothing.vector.keys) == 0 and len(nothing.keyword.keys) == 0 and nothing.keyword_ceiling == 0.0


def test_keyword_ceiling_is_the_namespace_index_ceiling() -> None:
    store = MemoryStore()
    assert store.keyword_ceiling(NS, "lamp") == 0.0
    texts = ["lamp glows", "dark room", "lamp oil lamp"]
    chunks = _commit(store, "/a.md", 3, seed=1, texts=texts)
    _commit(store, "/b.md", 1, seed=2, texts=["lamp lamp lamp lamp"], namespace="other")
    index = BM25Index()
    index.add([c.id for c in chunks], texts)
    for query in ("lamp", "lamp dark", "unknownword"):
        assert store.keyword_ceiling(NS, query) == pytest.approx(index.ceiling(query))
    assert store.keyword_search(NS, "lamp", top_k=0) == []
    assert store.keyword_search("empty", "lamp", top_k=5) == []


def test_search_breaks_ties_by_insertion_order_and_keeps_top_k() -> None:
    store = MemoryStore()
    chunks = make_chunks("/a.md", 6)
    vectors = np.tile(np.array([[1, 0, 0, 0]], dtype=np.float32), (6, 1))
    vectors[3] = [0, 1, 0, 0]
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(chunks, vectors)
        stage.commit()
    probe = np.array([1, 0, 0, 0], dtype=np.float32)
    for top_k in range(1, 8):
        got = [r.chunk_id for r in store.search(NS, probe, top_k=top_k)]
        assert got == [chunks[i].id for i in (0, 1, 2, 4, 5, 3)][:top_k]
    with pytest.raises(DimensionMismatchError):
        store.search(NS, np.ones(DIM + 1, dtype=np.float32), top_k=2)
    assert store.search(NS, probe, top_k=-1) == []
    assert MemoryStore().search(NS, probe, top_k=3) == []


def test_listings_count_what_is_visible() -> None:
    store = MemoryStore()
    _commit(store, "/b.md", 3, seed=1)
    _commit(store, "/a.md", 2, seed=2, part="one")
    _commit(store, "/a.md", 1, seed=3, part="two")  # replaces part one: one source, one document
    _commit(store, "/c.md", 4, seed=4, namespace="other")
    assert store.source_counts(NS) == {"/a.md": 1, "/b.md": 3} and list(store.source_counts(NS)) == ["/a.md", "/b.md"]
    assert store.stats(NS) == {"chunks": 4, "sources": 2, "documents": 2, "dimension": DIM}
    assert store.stats("empty") == {"chunks": 0, "sources": 0, "documents": 0, "dimension": DIM}
    batches = list(store.iter_chunks(NS, batch_size=3))
    assert [len(b) for b in batches] == [3, 1]
    assert [c.id for b in batches for c in b] == [c.id for c in store.chunks(NS)]
    assert [len(b) for b in store.iter_chunks(NS)] == [4]
    store.close()


def test_state_after_deleting_every_chunk_and_after_an_empty_commit() -> None:
    store = MemoryStore()
    _commit(store, "/a.md", 2, seed=1)
    generation = store.source_states(NS, ["/a.md"])["/a.md"].generation
    assert store.delete(NS, parse_filter({"order": 0})) == 1
    state = store.source_states(NS, ["/a.md"])["/a.md"]
    assert state.generation == generation and len(state.documents) == 1  # one chunk left: still committed
    assert store.delete(NS, parse_filter({"order": 1})) == 1
    state = store.source_states(NS, ["/a.md"])["/a.md"]
    assert state.generation == 0 and state.documents == {} and state.next_generation == generation + 1
    with store.session(NS) as session:
        stage = session.stage("/empty.md")
        assert stage.commit() == 0
    state = store.source_states(NS, ["/empty.md"])["/empty.md"]
    assert state.exists and state.generation == stage.generation and state.next_generation == stage.generation + 1


def test_generations_stay_above_every_one_handed_out() -> None:
    store = MemoryStore()
    with store.session(NS) as session:
        first = session.stage("/a.md")
        second = session.stage("/a.md")  # two stages of one source at once
        third = session.stage("/a.md", state=first.state)  # a stale state does not hand out a used number
        assert first.generation < second.generation < third.generation
        third.write(make_chunks("/a.md", 1), _vectors(1, 1))
        third.commit()
        second.abort()
    state = store.source_states(NS, ["/a.md"])["/a.md"]
    assert state.generation == third.generation and state.next_generation == third.generation + 1
    assert store.source_states("other", ["/a.md"])["/a.md"].next_generation == 1


def test_an_update_and_a_commit_count_only_documents_really_removed() -> None:
    store = MemoryStore()
    one = make_chunks("/a.md", 2, part=1)
    two = make_chunks("/a.md", 3, part=2)
    three = make_chunks("/a.md", 1, part=3)
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(one + two + three, _vectors(6, 1))
        stage.commit()
    import attrs

    renamed = [attrs.evolve(c, metadata={"new": True}, metadata_hash="meta-2") for c in two]
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.keep([one[0].document_id])
        stage.update_metadata(renamed)
        assert stage.commit() == 1  # three's one chunk; two's old rows were carried, not removed
    assert sorted(c.id for c in store.chunks(NS)) == sorted(c.id for c in one + two)
    assert all(c.metadata == {"new": True} for c in store.chunks(NS) if c.document_id == two[0].document_id)
    assert store.source_states(NS, ["/a.md"])["/a.md"].metadata[two[0].document_id] == "meta-2"
    with pytest.raises(StoreError, match=r"update_metadata of /a\.md: no stored chunk"):
        with store.session(NS) as session:
            session.stage("/a.md").update_metadata(three)


def test_an_abort_drops_only_its_own_generation() -> None:
    store = MemoryStore()
    old = _commit(store, "/a.md", 2, seed=1, texts=["lamp old", "old two"])
    with store.session(NS) as session:
        kept = session.stage("/a.md")
        dropped = session.stage("/a.md")
        kept.write(make_chunks("/a.md", 1, texts=["lamp new"], content_hash="new"), _vectors(1, 2))
        dropped.write(make_chunks("/a.md", 3, texts=["lamp dropped", "x", "y"], content_hash="dropped"), _vectors(3, 3))
        dropped.abort()
        assert [c.id for c in store.chunks(NS)] == [c.id for c in old]
        assert kept.commit() == 2
    assert [r.text for r in store.keyword_search(NS, "lamp", top_k=5)] == ["lamp new"]
    assert store.source_states(NS, ["/a.md"])["/a.md"].documents == {make_document_id("/a.md"): "new"}


def test_closed_sessions_and_stages_refuse_work_with_a_store_error() -> None:
    store = MemoryStore()
    session = store.session(NS)
    stage = session.stage("/a.md")
    stage.write(make_chunks("/a.md", 1), _vectors(1, 1))
    session.close()
    session.close()  # a second close does nothing
    assert store.count(NS) == 0
    with pytest.raises(StoreError, match="the write session is closed"):
        session.stage("/b.md")
    with pytest.raises(StoreError, match="the write session is closed"):
        session.flush()
    with pytest.raises(StoreError, match=r"cannot commit: the stage of /a\.md \(generation \d+\) is already closed"):
        stage.commit()
    with pytest.raises(StoreError, match="cannot keep documents"):
        stage.keep(["x"])
    with pytest.raises(StoreError, match="cannot update metadata"):
        stage.update_metadata(make_chunks("/a.md", 1))
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        with pytest.raises(StoreError, match=r"a chunk of '/b\.md' was staged for the source '/a\.md'"):
            stage.write(make_chunks("/b.md", 1), _vectors(1, 2))
        stage.write([], np.zeros((0, DIM), dtype=np.float32))
        stage.update_metadata([])
        stage.commit()
    assert store.count(NS) == 0 and store.dimension() == DIM  # the aborted rows set it


def test_get_vectors_in_the_order_asked_and_missing_ids_named() -> None:
    store = MemoryStore()
    chunks = _commit(store, "/a.md", 3, seed=1)
    got = store.get_vectors(NS, [chunks[2].id, chunks[0].id, chunks[2].id])
    assert got.shape == (3, DIM)
    np.testing.assert_array_equal(got[0], got[2])
    with pytest.raises(StoreError, match=r"unknown chunk id\(s\): nope1, nope2"):
        store.get_vectors(NS, ["nope1", chunks[0].id, "nope2"])


def _rows_held(store: MemoryStore) -> int:
    """Rows the store still holds in memory, visible or not (what an abort must give back)."""
    return int(store._alive[: store._size].sum())


def test_an_abort_and_a_closed_session_give_back_every_staged_row() -> None:
    store = MemoryStore()
    _commit(store, "/a.md", 2, seed=1)
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 5, content_hash="new"), _vectors(5, 2))
        stage.abort()
        assert _rows_held(store) == 2
        left_open = session.stage("/b.md")
        left_open.write(make_chunks("/b.md", 3), _vectors(3, 3))
        assert _rows_held(store) == 5
    assert _rows_held(store) == 2 and store.count(NS) == 2


def test_chunks_and_iter_chunks_list_what_is_asked() -> None:
    store = MemoryStore()
    _commit(store, "/a.md", 3, seed=1, metadata={"lang": "en"})
    _commit(store, "/b.md", 2, seed=2, metadata={"lang": "de"})
    assert [c.source for c in store.chunks(NS, parse_filter({"lang": "de"}))] == ["/b.md", "/b.md"]
    assert store.chunks(NS, parse_filter({"lang": "fr"})) == []
    _commit(store, "/big.md", 1001, seed=3)
    assert [len(batch) for batch in store.iter_chunks(NS)] == [1000, 6]  # batches of 1000 by default


def test_updating_chunks_that_are_not_committed_is_a_store_error_naming_five_of_them() -> None:
    store = MemoryStore()
    with store.session(NS) as session:
        stage = session.stage("/never.md")
        with pytest.raises(StoreError, match=r"^update_metadata of /never\.md: no stored chunk "):
            stage.update_metadata(make_chunks("/never.md", 1))
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        staged = make_chunks("/a.md", 6)
        stage.write(staged, _vectors(6, 1))  # staged in this very stage, not stored: nothing to carry over
        with pytest.raises(StoreError) as info:
            stage.update_metadata(staged)
        assert str(info.value) == f"update_metadata of /a.md: no stored chunk {', '.join(c.id for c in staged[:5])}"


def test_unknown_chunk_ids_are_named_five_at_most() -> None:
    store = MemoryStore()
    _commit(store, "/a.md", 1, seed=1)
    missing = [f"missing-{i}" for i in range(7)]
    with pytest.raises(StoreError) as info:
        store.get_vectors(NS, missing)
    assert str(info.value) == "unknown chunk id(s): missing-0, missing-1, missing-2, missing-3, missing-4"
