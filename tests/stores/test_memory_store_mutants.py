"""Memory store details a user sees, each found as a gap by mutation testing (docs/testing.md): closed
stages and sessions, generations handed out, the configured BM25, filters on a single row, messages."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.analysis import AnalyzerConfig
from ragloom.errors import DimensionMismatchError, StoreError
from ragloom.filters import parse_filter
from ragloom.keyword import BM25Config, BM25Index
from ragloom.stores.base import SourceState
from ragloom.stores.memory import MemoryStore, MemoryStoreConfig
from ragloom.testing.store_contract import make_chunks

NS = "ns"


def _vectors(count: int, seed: int, dim: int = 4) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)


def test_a_closed_session_refuses_stages_and_flushes_with_its_message() -> None:
    session = MemoryStore().session(NS)
    session.close()
    for action in (lambda: session.stage("a.txt"), session.flush):
        with pytest.raises(StoreError) as refused:
            action()
        assert str(refused.value) == "the write session is closed"


def test_a_committed_stage_refuses_a_second_commit_and_more_writes() -> None:
    store = MemoryStore()
    with store.session(NS) as session:
        stage = session.stage("a.txt")
        stage.write(make_chunks("a.txt", 1), _vectors(1, 0))
        assert stage.commit() == 0
        generation = stage.generation
        with pytest.raises(StoreError) as refused:
            stage.write(make_chunks("a.txt", 2), _vectors(2, 1))
        assert str(refused.value) == f"cannot write: the stage of a.txt (generation {generation}) is already closed"
        with pytest.raises(StoreError) as refused:
            stage.commit()
        assert str(refused.value) == f"cannot commit: the stage of a.txt (generation {generation}) is already closed"
    assert store.count(NS) == 1


def test_closing_a_session_aborts_every_stage_it_opened() -> None:
    store = MemoryStore()
    session = store.session(NS)
    first, second = session.stage("a.txt"), session.stage("b.txt")
    first.write(make_chunks("a.txt", 2), _vectors(2, 0))
    second.write(make_chunks("b.txt", 2), _vectors(2, 1))
    session.close()
    for stage in (first, second):
        with pytest.raises(StoreError, match="already closed"):
            stage.commit()
    assert store.count(NS) == 0 and store.sources(NS) == []


def test_a_stage_opened_while_another_is_open_never_shares_its_generation() -> None:
    store = MemoryStore()
    with store.session(NS) as session:
        older, newer = session.stage("a.txt"), session.stage("a.txt")
        older.write(make_chunks("a.txt", 1, texts=["older text"]), _vectors(1, 0))
        older.commit()
        latest = session.stage("a.txt")
        assert len({older.generation, newer.generation, latest.generation}) == 3
        latest.write(make_chunks("a.txt", 1, part="latest", texts=["latest text"]), _vectors(1, 1))
        newer.write(make_chunks("a.txt", 1, part="newer", texts=["newer text"]), _vectors(1, 2))
        newer.commit()
        latest.abort()
    assert [c.text for c in store.chunks(NS)] == ["newer text"]


def test_generations_start_at_one_and_honour_the_state_given() -> None:
    store = MemoryStore()
    with store.session(NS) as session:
        stage = session.stage("a.txt")
        assert stage.generation == 1
        stage.write(make_chunks("a.txt", 1), _vectors(1, 0))
        stage.commit()
        assert store.source_states(NS, ["a.txt"])["a.txt"].generation == 1
        assert session.stage("a.txt").generation == 2
        assert session.stage("b.txt", SourceState(next_generation=7)).generation == 7


def test_keyword_search_uses_the_configured_bm25_parameters_and_analysis() -> None:
    bm25 = BM25Config(k1=0.4, b=0.1, analyzer=AnalyzerConfig(stopwords=None, stemmer=None))
    store = MemoryStore(MemoryStoreConfig(bm25=bm25))
    texts = ["the lamps and the lamp", "the lamp", "a battery that charges slowly over a long night"]
    with store.session(NS) as session:
        for i, text in enumerate(texts):
            stage = session.stage(f"{i}.txt")
            stage.write(make_chunks(f"{i}.txt", 1, texts=[text]), _vectors(1, i))
            stage.commit()
    reference = BM25Index(bm25)
    reference.add([0, 1, 2], texts)
    found = store.keyword_search(NS, "the lamps", top_k=3)
    assert [(r.text, r.score) for r in found] == [(texts[k], s) for k, s in reference.search("the lamps", top_k=3)]
    assert store.keyword_ceiling(NS, "the lamps") == reference.ceiling("the lamps")
    assert [r.text for r in store.keyword_search(NS, "lamps", top_k=3)] == [texts[0]]  # not stemmed


def test_a_filter_applies_to_a_namespace_of_one_chunk() -> None:
    store = MemoryStore()
    with store.session(NS) as session:
        stage = session.stage("a.txt")
        stage.write(make_chunks("a.txt", 1, metadata={"lang": "en"}, texts=["lamp oil"]), _vectors(1, 0))
        stage.commit()
    french = parse_filter({"lang": "fr"})
    assert store.chunks(NS, french) == [] and len(store.chunks(NS)) == 1
    assert store.search(NS, _vectors(1, 0)[0], top_k=3, filter=french) == []
    assert store.keyword_search(NS, "lamp", top_k=3, filter=french) == []
    assert store.delete(NS, french) == 0 and store.count(NS) == 1


def test_a_vector_of_another_dimension_is_refused_naming_the_memory_store() -> None:
    store = MemoryStore()
    with store.session(NS) as session:
        stage = session.stage("a.txt")
        stage.write(make_chunks("a.txt", 1), _vectors(1, 0, dim=4))
        stage.commit()
        other = session.stage("b.txt")
        with pytest.raises(DimensionMismatchError) as refused:
            other.write(make_chunks("b.txt", 1), _vectors(1, 0, dim=3))
    assert (refused.value.store_dim, refused.value.embedder_dim) == (4, 3)
    assert str(refused.value).startswith("memory store holds vectors of dimension 4, but the embedder makes dimension 3;")
    with pytest.raises(DimensionMismatchError) as refused:
        store.search(NS, np.ones(5, dtype=np.float32), top_k=1)
    assert str(refused.value).startswith("memory store holds vectors of dimension 4, but the embedder makes dimension 5;")


def _store_of(count: int, seed: int) -> MemoryStore:
    store = MemoryStore()
    with store.session(NS) as session:
        stage = session.stage("a.txt")
        stage.write(make_chunks("a.txt", count), _vectors(count, seed))
        stage.commit()
    return store


def test_a_query_as_one_row_or_in_double_precision_finds_the_same() -> None:
    store = _store_of(20, 3)
    query = _vectors(1, 11)[0]
    found = [(r.chunk_id, r.score) for r in store.search(NS, query, top_k=5)]
    assert len(found) == 5
    for same in (query.reshape(1, -1), query.astype(np.float64), query.astype(np.float64).reshape(1, -1)):
        assert [(r.chunk_id, r.score) for r in store.search(NS, same, top_k=5)] == found


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2**16), st.integers(1, 40))
def test_the_top_k_are_the_head_of_the_full_ranking(count: int, seed: int, top_k: int) -> None:
    store = _store_of(count, seed)
    query = _vectors(1, seed + 1)[0]
    everything = [r.chunk_id for r in store.search(NS, query, top_k=count)]
    assert len(everything) == count
    assert [r.chunk_id for r in store.search(NS, query, top_k=top_k)] == everything[:top_k]


def test_the_top_k_of_a_larger_namespace_are_the_head_of_the_full_ranking() -> None:
    # argpartition guarantees only the position it is asked for: asked for k - 1 instead of k, the
    # k-th result would be whatever row the partition left after it (as for these 300 vectors, k = 44)
    store = _store_of(300, 118)
    query = _vectors(1, 119)[0]
    everything = [r.chunk_id for r in store.search(NS, query, top_k=300)]
    for top_k in (20, 44, 64):
        assert [r.chunk_id for r in store.search(NS, query, top_k=top_k)] == everything[:top_k]
