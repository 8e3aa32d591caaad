"""Keyword search over any store: ragloom's own BM25 index of a store that has none.

``PlainStore`` is a minimal third-party store: it keeps its data in a memory
store but declares only the ``vectors`` and ``chunks`` capabilities (no
``keyword_search``), and may have a ``location``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragloom import CHUNKS, VECTORS, ConfigError, Pipeline
from ragloom.filters import FilterNode, parse_filter
from ragloom.stores.keyword_index import keyword_index_for
from ragloom.stores.memory import MemoryStore
from ragloom.types import Chunk, Result

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "quickstart" / "corpus"
QUERIES = ["how do I reset the lamp", "warranty and returns", "circadian schedule sunrise", "api token rate limit", "flurble grommet"]


class PlainStore:
    """A store with vector search and chunk enumeration, and no keyword search."""

    def __init__(self, inner: MemoryStore | None = None, *, location: Path | None = None, capabilities: frozenset[str] = frozenset({VECTORS, CHUNKS})):
        self.inner = inner or MemoryStore()
        self.location = location
        self.capabilities = capabilities

    def dimension(self) -> int | None:
        return self.inner.dimension()

    def source_states(self, namespace: str, sources: Sequence[str]) -> Any:
        return self.inner.source_states(namespace, sources)

    def session(self, namespace: str) -> Any:
        return self.inner.session(namespace)

    def delete(self, namespace: str, filter: FilterNode | None) -> int:
        return self.inner.delete(namespace, filter)

    def search(self, namespace: str, vector: np.ndarray, *, top_k: int, filter: FilterNode | None = None) -> list[Result]:
        return self.inner.search(namespace, vector, top_k=top_k, filter=filter)

    def get_vectors(self, namespace: str, chunk_ids: Sequence[str]) -> np.ndarray:
        return self.inner.get_vectors(namespace, chunk_ids)

    def iter_chunks(self, namespace: str, *, batch_size: int = 1000) -> Iterator[list[Chunk]]:
        self.enumerated = getattr(self, "enumerated", 0) + 1
        chunks = self.inner.chunks(namespace)[::-1]  # an order unlike the memory store's
        for start in range(0, len(chunks), batch_size):
            yield chunks[start : start + batch_size]

    def sources(self, namespace: str) -> list[str]:
        return self.inner.sources(namespace)

    def count(self, namespace: str) -> int:
        return self.inner.count(namespace)

    def stats(self, namespace: str) -> dict[str, Any]:
        return self.inner.stats(namespace)

    def close(self) -> None:
        self.inner.close()


def _pipeline(store: Any, retriever: str = "hybrid", **options: Any) -> Pipeline:
    return Pipeline.builder().store(store).embedder("hash", dim=128).chunker("recursive", size=300, overlap=0).retriever(retriever, **options).build()


def _ranking(results: list[Result]) -> list[tuple[str, float]]:
    return [(r.chunk_id, round(r.score, 6)) for r in results]


@pytest.mark.parametrize("retriever", ["bm25", "hybrid"])
def test_rankings_equal_the_memory_stores_native_index(retriever: str) -> None:
    native = _pipeline(MemoryStore(), retriever)
    plain_store = PlainStore()
    plain = _pipeline(plain_store, retriever)
    native.ingest(CORPUS)
    plain.ingest(CORPUS)
    for query in QUERIES:
        expected = native.query(query, top_k=10)
        got = plain.query(query, top_k=10)
        assert _ranking(got) == _ranking(expected), query
        assert [r.text for r in got] == [r.text for r in expected]
    assert keyword_index_for(plain_store, "default").builds == 1


def test_filters_match_the_native_index() -> None:
    native_store, plain_store = MemoryStore(), PlainStore()
    for store in (native_store, plain_store):
        pipeline = _pipeline(store, "bm25")
        pipeline.ingest(CORPUS / "faq.md", tags=["faq"])
        pipeline.ingest(CORPUS / "troubleshooting.md")
    index = keyword_index_for(plain_store, "default")
    for spec in ({"tags": "faq"}, {"tags": {"$ne": "faq"}}, {"source": {"$gt": str(CORPUS / "g")}}):
        node = parse_filter(spec)
        expected = native_store.keyword_search("default", "lamp light reset", top_k=50, filter=node)
        assert expected and _ranking(index.keyword_search("default", "lamp light reset", top_k=50, filter=node)) == _ranking(expected)


def test_index_is_kept_current_as_the_pipeline_writes(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("The lamp glows amber at dusk.", encoding="utf-8")
    (corpus / "b.md").write_text("Returns are accepted within thirty days.", encoding="utf-8")
    store = PlainStore()
    pipeline = _pipeline(store, "bm25")
    pipeline.ingest(corpus)
    assert [r.source for r in pipeline.query("amber")] == [str(corpus / "a.md")]
    index = keyword_index_for(store, "default")
    assert index.builds == 1 and store.enumerated == 1
    (corpus / "a.md").write_text("The lamp glows violet at dawn.", encoding="utf-8")
    (corpus / "c.md").write_text("Violet light helps at dawn.", encoding="utf-8")
    pipeline.ingest(corpus, tags=["v2"])
    assert pipeline.query("amber") == []
    assert {r.source for r in pipeline.query("violet")} == {str(corpus / "a.md"), str(corpus / "c.md")}
    assert {r.source for r in pipeline.query("returns", filter={"tags": "v2"})} == {str(corpus / "b.md")}  # metadata-only update
    pipeline.remove_source(corpus / "c.md")
    assert [r.source for r in pipeline.query("violet")] == [str(corpus / "a.md")]
    (corpus / "c.md").unlink()
    pipeline.clear()
    assert pipeline.query("violet") == [] and len(index) == 0
    pipeline.ingest(corpus)
    assert [r.source for r in pipeline.query("violet")] == [str(corpus / "a.md")]
    assert index.builds == 1 and store.enumerated == 1  # never read back from the store


def test_writes_that_bypass_the_pipeline_trigger_a_rebuild(tmp_path: Path) -> None:
    store = PlainStore()
    pipeline = _pipeline(store, "bm25")
    pipeline.ingest(CORPUS / "faq.md")
    assert pipeline.query("zanzibar") == []
    other = _pipeline(PlainStore(store.inner), "bm25")  # another process's view of the same data
    (tmp_path / "z.md").write_text("Zanzibar is an island.", encoding="utf-8")
    other.ingest(tmp_path / "z.md")
    assert [r.source for r in pipeline.query("zanzibar")] == [str(tmp_path / "z.md")]
    assert keyword_index_for(store, "default").builds == 2


def test_index_is_saved_beside_the_store_and_rebuilt_when_stale(tmp_path: Path) -> None:
    inner = MemoryStore()
    location = tmp_path / "kb"
    first = PlainStore(inner, location=location)
    pipeline = _pipeline(first, "bm25")
    pipeline.ingest(CORPUS)
    expected = _ranking(pipeline.query("lamp warranty", top_k=10))
    saved = list((tmp_path / "kb.keyword").glob("*.npz"))
    assert len(saved) == 1
    # a new process on the same data: the saved index is loaded, nothing enumerated
    second = PlainStore(inner, location=location)
    again = _pipeline(second, "bm25")
    assert _ranking(again.query("lamp warranty", top_k=10)) == expected
    index = keyword_index_for(second, "default")
    assert (index.loads, index.builds) == (1, 0) and not hasattr(second, "enumerated")
    # the store changed while no index watched (same chunk count: one source re-committed)
    with inner.session("default") as session:
        source = str(CORPUS / "faq.md")
        state = inner.source_states("default", [source])[source]
        stage = session.stage(source, state)
        stage.keep(list(state.documents))
        stage.commit()
    third = PlainStore(inner, location=location)
    assert _ranking(_pipeline(third, "bm25").query("lamp warranty", top_k=10)) == expected
    index = keyword_index_for(third, "default")
    assert (index.loads, index.builds) == (0, 1)  # generations differ from the saved ones: rebuilt
    # an unreadable file is rebuilt, not an error
    for path in (tmp_path / "kb.keyword").glob("*.npz"):
        path.write_bytes(b"not an index")
    fourth = PlainStore(inner, location=location)
    assert _ranking(_pipeline(fourth, "bm25").query("lamp warranty", top_k=10)) == expected
    assert keyword_index_for(fourth, "default").builds == 1
    shutil.rmtree(tmp_path / "kb.keyword")


def test_a_store_without_keyword_search_or_chunks_is_a_config_error() -> None:
    store = PlainStore(capabilities=frozenset({VECTORS}))
    for retriever in ("bm25", "hybrid"):
        with pytest.raises(ConfigError, match="neither the 'keyword_search' nor the 'chunks' capability"):
            _pipeline(store, retriever)


def test_iter_chunks_streams_batches_of_the_memory_store() -> None:
    store = MemoryStore()
    _pipeline(store, "similarity").ingest(CORPUS)
    batches = list(store.iter_chunks("default", batch_size=7))
    assert all(1 <= len(b) <= 7 for b in batches)
    assert [c.id for b in batches for c in b] == [c.id for c in store.chunks("default")]
    assert list(store.iter_chunks("elsewhere")) == []
