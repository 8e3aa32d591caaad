"""The store conformance suite: a mixin of pytest tests every store subclasses.

A test module subclasses :class:`StoreContract` and provides a ``store``
fixture yielding a fresh, empty store. A store whose data outlives its process
subclasses :class:`PersistentStoreContract` instead, which adds the kill -9
test, and overrides :meth:`StoreContract.reopen` (close the store and open the
same data again) and :meth:`StoreContract.child_store_code` (Python source
that opens the same data in another process).
The tests go through the real Store API and through real pipelines built with
``Pipeline.builder().store(store).embedder("hash", dim=64)``; the expected
answers of the filter tests are those of :func:`ragloom.filters.matches`, the
memory store's evaluator.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragloom.errors import DimensionMismatchError, FilterError, StoreError
from ragloom.filters import Condition, matches, parse_filter
from ragloom.pipeline import Pipeline
from ragloom.stores.base import CHUNKS, KEYWORD_SEARCH, VECTORS
from ragloom.types import Chunk, make_document_id

DIM = 8
NS = "contract"


def make_chunks(
    source: str,
    count: int,
    *,
    part: str | int | None = None,
    texts: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    tags: tuple[str, ...] = (),
    content_hash: str = "hash-1",
    metadata_hash: str = "meta-1",
) -> list[Chunk]:
    """``count`` chunks of one document of ``source`` (ids stable, offsets consecutive)."""
    document_id = make_document_id(source, part)
    texts = texts or [f"chunk {i} of {source}" for i in range(count)]
    chunks = []
    offset = 0
    for index, text in enumerate(texts[:count]):
        chunks.append(
            Chunk(
                id=f"{document_id}:{index}",
                document_id=document_id,
                index=index,
                text=text,
                start=offset,
                end=offset + len(text),
                source=source,
                metadata={**(metadata or {}), "order": index},
                tags=tags,
                content_hash=content_hash,
                metadata_hash=metadata_hash,
            )
        )
        offset += len(text) + 1
    return chunks


def _vectors(count: int, seed: int, dim: int = DIM) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)


def _unit(index: int, dim: int = DIM) -> np.ndarray:
    vector = np.zeros(dim, dtype=np.float32)
    vector[index] = 1.0
    return vector


# Records for the filter tests: (name, metadata, tags). Values cover ints, floats,
# strings, booleans, nulls, numeric strings and missing keys.
FILTER_RECORDS: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("r0", {"year": 2019, "lang": "en", "draft": False, "score": 0.5, "author": "ann"}, ("public",)),
    ("r1", {"year": 2020, "lang": "de", "draft": True, "score": 1.5}, ("public", "beta")),
    ("r2", {"year": 2021, "lang": "en", "score": 2}, ()),
    ("r3", {"year": "2021", "lang": "fr", "draft": False, "author": None}, ("beta",)),
    ("r4", {"lang": "en", "count": 1, "flag": True, "a.b": 1}, ("internal",)),
    ("r5", {"year": 2023.0, "title": "Zebra", "count": True, "a": {"b": 1}}, ()),
    ("r6", {"it's\"; DROP TABLE chunks; --": "x'); DROP TABLE chunks; --", "title": "apple"}, ("o'brien",)),
]

FILTERS: list[Any] = [
    {"lang": "en"},
    {"lang": {"$eq": "en"}},
    {"lang": {"$ne": "en"}},
    {"year": {"$gt": 2020}},
    {"year": {"$gte": 2020}},
    {"year": {"$lt": 2021}},
    {"year": {"$lte": 2021}},
    {"year": {"$gt": "2020"}},
    {"year": 2021},
    {"year": "2021"},
    {"year": 2023},
    {"year": {"$gte": 2020, "$lt": 2022}},
    {"score": {"$gte": 1}},
    {"score": {"$lt": 1}},
    {"score": 2.0},
    {"lang": {"$in": ["de", "fr"]}},
    {"lang": {"$nin": ["en"]}},
    {"year": {"$in": [2019, "2021"]}},
    {"year": {"$nin": [2019, 2020]}},
    {"draft": True},
    {"draft": False},
    {"draft": {"$ne": True}},
    {"count": 1},
    {"count": True},
    {"count": {"$gte": 1}},
    {"flag": {"$in": [1]}},
    {"flag": {"$in": [True]}},
    {"author": {"$exists": True}},
    {"author": {"$exists": False}},
    {"author": {"$ne": "ann"}},
    {"author": "ann"},
    {"title": {"$lt": "a"}},
    {"title": {"$gte": "apple"}},
    {"missing": {"$nin": ["x"]}},
    {"missing": {"$ne": 1}},
    {"missing": 1},
    {"a.b": 1},
    {"tags": "public"},
    {"tags": {"$eq": "beta"}},
    {"tags": {"$ne": "public"}},
    {"tags": {"$in": ["beta", "internal"]}},
    {"tags": {"$nin": ["public"]}},
    {"tags": {"$exists": True}},
    {"tags": {"$exists": False}},
    {"tags": "o'brien"},
    {"source": "/data/r1.md"},
    {"source": {"$in": ["/data/r1.md", "/data/r4.md"]}},
    {"source": {"$ne": "/data/r1.md"}},
    {"source": {"$gt": "/data/r3.md"}},
    {"document_id": make_document_id("/data/r2.md")},
    {"document_id": {"$nin": [make_document_id("/data/r2.md")]}},
    {"$or": [{"lang": "de"}, {"year": {"$gte": 2023}}]},
    {"$and": [{"lang": "en"}, {"year": {"$exists": True}}]},
    {"lang": "en", "draft": False},
    {"$or": [{"$and": [{"lang": "en"}, {"tags": "public"}]}, {"source": "/data/r5.md"}]},
    {"it's\"; DROP TABLE chunks; --": "x'); DROP TABLE chunks; --"},
    {"lang": "en' OR '1'='1"},
]

#: Records for :data:`EDGE_FILTERS`: keys a JSON pointer must escape, negative and huge numbers, a mixed-case tag.
EDGE_RECORDS: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("e0", {"a/b": "slash", "t~k": "tilde", "~1": "escaped", "n": -3, "x": -0.5, "lang": "en", "title": "Zebra"}, ("Beta", "public")),
    ("e1", {"a": {"b": "nested"}, "t": {"k": 1}, "n": 2**63, "x": 0.5, "lang": "de", "title": "apple", "flag": False}, ("beta",)),
    ("e2", {"n": 7, "x": 2, "lang": "en", "title": "", "flag": True, "note": None}, ()),
    ("e3", {"n": "7", "x": "2", "lang": 1, "title": 3, "flag": 1}, ("public",)),
]

#: Every operator on every kind of key, the type mismatches and the missing keys (one store filled once, see
#: ``test_every_filter_form_matches_memory_semantics``); what a store must find is what :func:`matches` finds.
EDGE_FILTERS: list[Any] = [
    {"a/b": "slash"},
    {"t~k": "tilde"},
    {"~1": "escaped"},
    {"a/b": {"$exists": True}},
    {"t~k": {"$ne": "tilde"}},
    {"n": -3},
    {"n": 2**63},
    {"n": {"$lt": 0}},
    {"n": {"$gt": -3}},
    {"n": {"$gte": 7}},
    {"n": {"$lte": 7}},
    {"n": {"$in": [-3, 7.0]}},
    {"n": {"$nin": [-3, "7"]}},
    {"n": "7"},
    {"n": {"$gt": "6"}},
    {"x": -0.5},
    {"x": {"$gt": 0.5}},
    {"x": {"$gte": 0.5}},
    {"x": {"$lt": 0.5}},
    {"x": {"$lte": -0.5}},
    {"x": 2.0},
    {"lang": {"$gt": "de"}},
    {"lang": {"$gte": "en"}},
    {"lang": {"$lt": "en"}},
    {"lang": {"$lte": "de"}},
    {"lang": 1},
    {"lang": True},
    {"lang": {"$ne": 1}},
    {"title": {"$gt": "Zebra"}},
    {"title": {"$lte": "Zebra"}},
    {"title": {"$lt": "a"}},
    {"title": ""},
    {"title": {"$gte": ""}},
    {"flag": True},
    {"flag": False},
    {"flag": 1},
    {"flag": {"$ne": False}},
    {"flag": {"$in": [True, 0]}},
    {"flag": {"$nin": [False, 1]}},
    {"note": {"$exists": True}},
    {"note": {"$exists": False}},
    {"note": {"$ne": "x"}},
    {"a": {"$exists": True}},
    {"missing": "x"},
    {"missing": True},
    {"missing": 1.5},
    {"missing": {"$gt": 1}},
    {"missing": {"$gte": "a"}},
    {"missing": {"$lt": 1}},
    {"missing": {"$lte": "z"}},
    {"missing": {"$in": ["x", 1, True]}},
    {"missing": {"$nin": ["x", 1, False]}},
    {"missing": {"$ne": True}},
    {"missing": {"$exists": False}},
    {"missing": {"$exists": True}},
    {"source": "/edge/e1.md"},
    {"source": 1},
    {"source": True},
    {"source": {"$ne": "/edge/e1.md"}},
    {"source": {"$ne": 1}},
    {"source": {"$in": [1, "/edge/e2.md"]}},
    {"source": {"$in": [1, 2.5, True]}},
    {"source": {"$nin": ["/edge/e2.md", 3]}},
    {"source": {"$nin": [1, False]}},
    {"source": {"$gt": "/edge/e1.md"}},
    {"source": {"$gte": "/edge/e2.md"}},
    {"source": {"$lt": "/edge/e1.md"}},
    {"source": {"$lte": "/edge/e1.md"}},
    {"source": {"$gt": 1}},
    {"source": {"$lte": 2.5}},
    {"source": {"$exists": True}},
    {"source": {"$exists": False}},
    {"document_id": make_document_id("/edge/e3.md")},
    {"document_id": {"$ne": make_document_id("/edge/e3.md")}},
    {"document_id": {"$in": [make_document_id("/edge/e0.md"), make_document_id("/edge/e2.md")]}},
    {"document_id": {"$nin": [make_document_id("/edge/e0.md")]}},
    {"document_id": {"$lt": make_document_id("/edge/e1.md")}},
    {"document_id": {"$exists": False}},
    {"document_id": 7},
    {"tags": "Beta"},
    {"tags": "beta"},
    {"tags": 1},
    {"tags": True},
    {"tags": {"$ne": "public"}},
    {"tags": {"$ne": 1}},
    {"tags": {"$in": [1, "beta"]}},
    {"tags": {"$in": [1, 2]}},
    {"tags": {"$nin": ["beta", 2]}},
    {"tags": {"$nin": [1, False]}},
    {"tags": {"$exists": True}},
    {"tags": {"$exists": False}},
    {"$or": [{"missing": 1}, {"$and": [{"lang": "en"}, {"n": {"$gt": 0}}]}]},
    {"$and": [{"tags": "public"}, {"$or": [{"n": -3}, {"lang": 1}]}]},
    {"n": {"$gt": 0, "$lt": 10}},
]


def version_chunks(index: int, version: int) -> tuple[list[Chunk], np.ndarray]:
    """Chunks and vectors of source ``/kill/s{index}.md`` at ``version`` (chunk count differs per version)."""
    count = 2 + (index + version) % 4
    texts = [f"source {index} version {version} chunk {i}" for i in range(count)]
    chunks = make_chunks(f"/kill/s{index}.md", count, texts=texts, content_hash=f"v{version}")
    return chunks, _vectors(count, index * 10 + version)


def grouped_child(store: Any, sources: int, group: int) -> None:
    """Body of the kill -9 child: replace every source by version 2, flushing every ``group`` sources.

    Prints ``flushing g`` before and ``flushed g`` after each flush (flushed output,
    so the parent can kill the child at a chosen point).
    """
    states = store.source_states(NS, [f"/kill/s{i}.md" for i in range(sources)])  # one lookup, as the pipeline does
    with store.session(NS) as session:
        for index in range(sources):
            chunks, vectors = version_chunks(index, 2)
            stage = session.stage(chunks[0].source, states[chunks[0].source])
            stage.write(chunks, vectors)
            stage.commit()
            if (index + 1) % group == 0:
                number = (index + 1) // group
                print(f"flushing {number}", flush=True)
                session.flush()
                print(f"flushed {number}", flush=True)
    print("done", flush=True)


class StoreContract:
    """Conformance tests for a Store. Subclass and provide a ``store`` fixture."""

    # ------------------------------------------------------------------ hooks

    def reopen(self, store: Any) -> Any:
        """Close ``store`` and open the same data again (in-memory stores return it)."""
        return store

    def child_store_code(self, store: Any) -> str:
        """Python source that binds ``store`` to the same data as ``store`` in a fresh process.

        Required by :class:`PersistentStoreContract`. The parent closes its store before
        the child runs and reopens it (:meth:`reopen`) after the child was killed.
        """
        raise NotImplementedError(f"{type(self).__name__} must provide child_store_code")

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _ids(results: Any) -> list[str]:
        return [r.chunk_id for r in results]

    @staticmethod
    def _all(store: Any, namespace: str = NS, dim: int = DIM) -> list[Any]:
        """Every visible chunk of the namespace, through search."""
        count = store.count(namespace)
        if count == 0:
            return []
        return store.search(namespace, np.ones(dim, dtype=np.float32), top_k=count + 10)

    @staticmethod
    def _commit(store: Any, chunks: list[Chunk], vectors: np.ndarray, namespace: str = NS, keep: tuple[str, ...] = ()) -> int:
        """Stage, write and commit one source in a session of its own; return the chunks removed."""
        with store.session(namespace) as session:
            stage = session.stage(chunks[0].source)
            stage.write(chunks, vectors)
            stage.keep(keep)
            return int(stage.commit())

    @staticmethod
    def _state(store: Any, source: str, namespace: str = NS) -> Any:
        return store.source_states(namespace, [source])[source]

    @staticmethod
    def _by_source(store: Any, namespace: str = NS) -> dict[str, list[Any]]:
        grouped: dict[str, list[Any]] = {}
        for result in StoreContract._all(store, namespace):
            grouped.setdefault(result.source, []).append(result)
        return grouped

    def _filter_store(self, store: Any) -> dict[str, Chunk]:
        chunks = {}
        for i, (name, metadata, tags) in enumerate(FILTER_RECORDS):
            (chunk,) = make_chunks(f"/data/{name}.md", 1, metadata=metadata, tags=tags, texts=[f"text of {name}"])
            self._commit(store, [chunk], _unit(i % DIM)[None, :])
            chunks[chunk.id] = chunk
        return chunks

    @staticmethod
    def _pipeline(store: Any, namespace: str = "default", dim: int = 64) -> Pipeline:
        return (
            Pipeline.builder()
            .namespace(namespace)
            .store(store)
            .embedder("hash", dim=dim)
            .chunker("recursive", size=120, overlap=0)
            .build()
        )

    @staticmethod
    def _corpus(root: Path, files: int = 4, version: int = 1) -> Path:
        root.mkdir(parents=True, exist_ok=True)
        for i in range(files):
            lines = [f"File {i} version {version} paragraph {p}: the lamp glows {'warm' if p % 2 else 'cold'} light." for p in range(4)]
            (root / f"doc{i}.md").write_text("\n\n".join(lines), encoding="utf-8")
        return root

    # ------------------------------------------------------------------ basics

    def test_empty_store(self, store: Any) -> None:
        assert store.count(NS) == 0
        assert store.sources(NS) == []
        assert store.search(NS, _unit(0), top_k=5) == []
        state = self._state(store, "/nowhere.md")
        assert not state.exists and state.documents == {} and state.metadata == {} and state.next_generation >= 1
        assert store.source_states(NS, []) == {}
        assert store.stats(NS)["chunks"] == 0 and store.stats(NS)["sources"] == 0

    def test_source_states_reads_many_sources_at_once(self, store: Any) -> None:
        self._commit(store, make_chunks("/a.md", 2, content_hash="ha", metadata_hash="ma"), _vectors(2, 1))
        self._commit(store, make_chunks("/b.md", 1, part="p", content_hash="hb", metadata_hash="mb"), _vectors(1, 2))
        states = store.source_states(NS, ["/a.md", "/never.md", "/b.md", "/a.md"])
        assert set(states) == {"/a.md", "/b.md", "/never.md"}
        assert states["/a.md"].exists and states["/a.md"].documents == {make_document_id("/a.md"): "ha"}
        assert states["/a.md"].metadata == {make_document_id("/a.md"): "ma"}
        assert states["/b.md"].documents == {make_document_id("/b.md", "p"): "hb"}
        assert not states["/never.md"].exists and states["/never.md"].documents == {}
        assert store.source_states("elsewhere", ["/a.md"])["/a.md"].exists is False

    def test_staged_rows_invisible_until_commit(self, store: Any) -> None:
        chunks = make_chunks("/a.md", 3)
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            assert stage.source == "/a.md" and stage.generation >= 1 and not stage.state.exists
            stage.write(chunks, _vectors(3, 1))
            session.flush()  # flushing commits nothing that is not committed
            assert store.count(NS) == 0
            assert store.search(NS, _unit(0), top_k=10) == []
            assert store.sources(NS) == []
            if KEYWORD_SEARCH in store.capabilities:
                assert store.keyword_search(NS, "chunk", top_k=10, filter=None) == []
            state = self._state(store, "/a.md")
            assert not state.exists and state.documents == {}
            assert stage.commit() == 0
            session.flush()
            assert store.count(NS) == 3
        assert sorted(self._ids(self._all(store))) == sorted(c.id for c in chunks)
        state = self._state(store, "/a.md")
        assert state.generation == stage.generation and state.exists
        assert state.documents == {chunks[0].document_id: "hash-1"}
        assert state.metadata == {chunks[0].document_id: "meta-1"}
        assert state.next_generation > stage.generation
        assert store.sources(NS) == ["/a.md"]

    def test_committed_sources_are_visible_when_flush_returns(self, store: Any) -> None:
        with store.session(NS) as session:
            for i in range(5):
                stage = session.stage(f"/f{i}.md")
                stage.write(make_chunks(f"/f{i}.md", 2), _vectors(2, i))
                stage.commit()
            session.flush()
            assert store.sources(NS) == [f"/f{i}.md" for i in range(5)] and store.count(NS) == 10
            stage = session.stage("/late.md")
            stage.write(make_chunks("/late.md", 1), _vectors(1, 9))
            stage.commit()
        # close flushes
        assert "/late.md" in store.sources(NS) and store.count(NS) == 11

    def test_abort_drops_staged_rows(self, store: Any) -> None:
        old = make_chunks("/a.md", 2, content_hash="old")
        self._commit(store, old, _vectors(2, 1))
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 5, content_hash="new"), _vectors(5, 2))
            stage.abort()
            stage.abort()  # a closed stage ignores a second abort
            with pytest.raises(StoreError):
                stage.write(make_chunks("/a.md", 1), _vectors(1, 3))
            with pytest.raises(StoreError):
                stage.commit()
        assert store.count(NS) == 2
        assert sorted(self._ids(self._all(store))) == sorted(c.id for c in old)
        state = self._state(store, "/a.md")
        assert state.documents == {old[0].document_id: "old"}
        assert state.next_generation > stage.generation
        # committing a later generation with no rows removes the old one; the aborted rows never return
        with store.session(NS) as session:
            assert session.stage("/a.md").commit() == 2
        assert store.count(NS) == 0

    def test_generations_grow_across_stages(self, store: Any) -> None:
        with store.session(NS) as session:
            first = session.stage("/a.md")
            first.write(make_chunks("/a.md", 2), _vectors(2, 1))
            first.commit()
            second = session.stage("/a.md")
            assert second.generation > first.generation
            assert second.state.generation == first.generation  # the session's own commit is seen
            second.write(make_chunks("/a.md", 1, content_hash="two"), _vectors(1, 2))
            second.commit()
        state = self._state(store, "/a.md")
        assert state.generation == second.generation and state.documents == {make_document_id("/a.md"): "two"}
        assert store.count(NS) == 1

    def test_commit_replaces_source_and_keeps_listed_documents(self, store: Any) -> None:
        doc_a = make_chunks("/a.md", 2, part="a", content_hash="a1")
        doc_b = make_chunks("/a.md", 3, part="b", content_hash="b1")
        other = make_chunks("/other.md", 2)
        vectors_b = _vectors(3, 2)
        self._commit(store, other, _vectors(2, 9))
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(doc_a, _vectors(2, 1))
            stage.write(doc_b, vectors_b)
            stage.commit()
        assert store.count(NS) == 7
        new_a = make_chunks("/a.md", 1, part="a", content_hash="a2", texts=["rewritten"])
        removed = self._commit(store, new_a, _vectors(1, 3), keep=(doc_b[0].document_id,))
        assert removed == 2
        results = {r.chunk_id: r for r in self._all(store)}
        assert set(results) == {c.id for c in new_a + doc_b + other}
        assert results[new_a[0].id].text == "rewritten"
        state = self._state(store, "/a.md")
        assert state.documents == {doc_a[0].document_id: "a2", doc_b[0].document_id: "b1"}
        if VECTORS in store.capabilities:
            kept = store.get_vectors(NS, [c.id for c in doc_b])
            np.testing.assert_allclose(kept, vectors_b / np.linalg.norm(vectors_b, axis=1, keepdims=True), rtol=1e-5, atol=1e-6)

    def test_keep_only_carries_a_source_over_unchanged(self, store: Any) -> None:
        doc_a = make_chunks("/a.md", 2, part="a")
        doc_b = make_chunks("/a.md", 2, part="b")
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(doc_a + doc_b, _vectors(4, 1))
            stage.commit()
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.keep([doc_a[0].document_id, doc_b[0].document_id])
            assert stage.commit() == 0
        assert sorted(self._ids(self._all(store))) == sorted(c.id for c in doc_a + doc_b)
        assert self._state(store, "/a.md").generation == stage.generation

    def test_update_metadata_keeps_text_and_vectors(self, store: Any) -> None:
        chunks = make_chunks("/a.md", 3, metadata={"lang": "en"}, tags=("old",), metadata_hash="m1")
        other = make_chunks("/a.md", 2, part="other", metadata={"lang": "en"})
        vectors = _vectors(3, 1) * 4
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(chunks + other, np.concatenate([vectors, _vectors(2, 2)]))
            stage.commit()
        assert len(self._all(store)) == 5  # read caches (if any) are loaded before the update
        if KEYWORD_SEARCH in store.capabilities:
            assert len(store.keyword_search(NS, "chunk", top_k=10, filter=None)) == 5
        relabelled = make_chunks("/a.md", 3, metadata={"lang": "de", "year": 2026}, tags=("new", "beta"), metadata_hash="m2")
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.update_metadata(relabelled)
            stage.keep([other[0].document_id])
            assert stage.commit() == 0
        results = {r.chunk_id: r for r in self._all(store)}
        assert set(results) == {c.id for c in chunks + other}
        for chunk in relabelled:
            assert results[chunk.id].metadata == chunk.metadata and results[chunk.id].tags == ("new", "beta")
            assert results[chunk.id].text == chunk.text and results[chunk.id].span == (chunk.start, chunk.end)
        assert {r.source for r in store.search(NS, _unit(0), top_k=10, filter=parse_filter({"tags": "beta"}))} == {"/a.md"}
        assert len(store.search(NS, _unit(0), top_k=10, filter=parse_filter({"lang": "de"}))) == 3
        assert store.search(NS, _unit(0), top_k=10, filter=parse_filter({"tags": "old"})) == []
        state = self._state(store, "/a.md")
        assert state.documents[chunks[0].document_id] == "hash-1"
        assert state.metadata == {chunks[0].document_id: "m2", other[0].document_id: "meta-1"}
        if VECTORS in store.capabilities:
            got = store.get_vectors(NS, [c.id for c in chunks])
            np.testing.assert_allclose(got, vectors / np.linalg.norm(vectors, axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
        if KEYWORD_SEARCH in store.capabilities:
            assert len(store.keyword_search(NS, "chunk", top_k=10, filter=None)) == 5
        store = self.reopen(store)
        assert {r.chunk_id: (r.metadata, r.tags) for r in self._all(store)} == {k: (v.metadata, v.tags) for k, v in results.items()}

    def test_update_metadata_of_a_document_not_stored_is_a_store_error(self, store: Any) -> None:
        self._commit(store, make_chunks("/a.md", 2), _vectors(2, 1))
        with pytest.raises(StoreError), store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.update_metadata(make_chunks("/a.md", 1, part="never-stored"))
            stage.commit()
        assert store.count(NS) == 2 and self._state(store, "/a.md").metadata == {make_document_id("/a.md"): "meta-1"}

    def test_stage_rejects_chunks_of_another_source(self, store: Any) -> None:
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            with pytest.raises(StoreError):
                stage.write(make_chunks("/b.md", 1), _vectors(1, 1))
            stage.abort()
        assert store.count(NS) == 0

    def test_grouped_sources_are_each_atomic(self, store: Any) -> None:
        with store.session(NS) as session:
            for i in range(30):
                chunks, vectors = version_chunks(i, 1)
                stage = session.stage(chunks[0].source)
                stage.write(chunks, vectors)
                stage.commit()
        with store.session(NS) as session:
            aborted = set()
            for i in range(0, 30, 2):  # half the sources change in one group; some of those abort
                chunks, vectors = version_chunks(i, 2)
                stage = session.stage(chunks[0].source, store.source_states(NS, [chunks[0].source])[chunks[0].source])
                stage.write(chunks[:1], vectors[:1])
                stage.write(chunks[1:], vectors[1:])
                if i % 6 == 0:
                    stage.abort()
                    aborted.add(i)
                else:
                    assert stage.commit() == len(version_chunks(i, 1)[0])
            # a brand-new source and a removed one in the same group
            fresh, fresh_vectors = version_chunks(99, 2)
            stage = session.stage(fresh[0].source)
            stage.write(fresh, fresh_vectors)
            stage.commit()
            emptied = session.stage("/kill/s1.md")
            assert emptied.commit() == len(version_chunks(1, 1)[0])
        grouped = self._by_source(store)
        assert "/kill/s1.md" not in grouped and "/kill/s1.md" not in store.sources(NS)
        assert self._state(store, "/kill/s1.md").documents == {}
        for i in [*range(30), 99]:
            if i == 1:
                continue
            version = 2 if (i % 2 == 0 and i not in aborted) or i == 99 else 1
            expected = version_chunks(i, version)[0]
            got = grouped[f"/kill/s{i}.md"]
            assert sorted(r.text for r in got) == sorted(c.text for c in expected), i
        assert store.count(NS) == sum(len(v) for v in grouped.values())

    def test_exception_in_a_session_aborts_open_stages_and_keeps_committed_ones(self, store: Any) -> None:
        self._commit(store, make_chunks("/b.md", 2, content_hash="old"), _vectors(2, 1))
        with pytest.raises(RuntimeError), store.session(NS) as session:
            done = session.stage("/a.md")
            done.write(make_chunks("/a.md", 2), _vectors(2, 2))
            done.commit()
            broken = session.stage("/b.md")
            broken.write(make_chunks("/b.md", 4, content_hash="new"), _vectors(4, 3))
            raise RuntimeError("the loader failed")
        assert store.sources(NS) == ["/a.md", "/b.md"]
        assert self._state(store, "/b.md").documents == {make_document_id("/b.md"): "old"}
        assert store.count(NS) == 4
        with pytest.raises(StoreError):
            session.stage("/c.md")

    def test_readers_never_see_a_source_missing_or_doubled_during_grouped_flushes(self, store: Any) -> None:
        files = 12
        with store.session(NS) as session:
            for i in range(files):
                chunks, vectors = version_chunks(i, 1)
                stage = session.stage(chunks[0].source)
                stage.write(chunks, vectors)
                stage.commit()
        problems: list[str] = []
        stop = threading.Event()
        checks = [0]

        def read_loop() -> None:
            while not stop.is_set():
                try:
                    results = store.search(NS, np.ones(DIM, dtype=np.float32), top_k=500)
                except Exception as exc:  # noqa: BLE001 - any failure is reported by the test
                    problems.append(f"{type(exc).__name__}: {exc}")
                    return
                by_source: dict[str, set[int]] = {}
                counts: Counter[str] = Counter()
                for result in results:
                    by_source.setdefault(result.source, set()).add(int(result.text.split()[3]))
                    counts[result.source] += 1
                if len(by_source) != files:
                    problems.append(f"saw {len(by_source)} sources")
                for source, versions in by_source.items():
                    index = int(source.rsplit("s", 1)[1].split(".")[0])
                    if len(versions) != 1 or counts[source] != len(version_chunks(index, next(iter(versions)))[0]):
                        problems.append(f"{source}: versions {versions}, {counts[source]} chunks")
                checks[0] += 1

        thread = threading.Thread(target=read_loop)
        thread.start()
        try:
            for version in range(2, 8):
                with store.session(NS) as session:
                    for i in range(files):
                        chunks, vectors = version_chunks(i, version)
                        stage = session.stage(chunks[0].source)
                        stage.write(chunks, vectors)
                        stage.commit()
                        if i % 5 == 4:
                            session.flush()
                time.sleep(0.01)
        finally:
            stop.set()
            thread.join(timeout=60)
        assert not problems, problems[:5]
        assert checks[0] > 0

    def test_delete(self, store: Any) -> None:
        self._commit(store, make_chunks("/a.md", 2), _vectors(2, 1))
        self._commit(store, make_chunks("/b.md", 3), _vectors(3, 2))
        self._commit(store, make_chunks("/c.md", 1), _vectors(1, 3), namespace="elsewhere")
        assert store.delete(NS, parse_filter({"source": "/a.md"})) == 2
        assert store.sources(NS) == ["/b.md"]
        assert not self._state(store, "/a.md").exists
        assert self._state(store, "/a.md").next_generation > 1
        assert store.delete(NS, None) == 3
        assert store.count(NS) == 0 and store.sources(NS) == []
        assert store.count("elsewhere") == 1

    def test_namespaces_are_isolated(self, store: Any) -> None:
        self._commit(store, make_chunks("/a.md", 2, content_hash="one"), _vectors(2, 1), namespace="one")
        self._commit(store, make_chunks("/a.md", 3, content_hash="two"), _vectors(3, 2), namespace="two")
        assert store.count("one") == 2 and store.count("two") == 3
        assert self._state(store, "/a.md", "one").documents == {make_document_id("/a.md"): "one"}
        assert len(self._all(store, "one")) == 2
        assert store.sources("three") == [] and store.search("three", _unit(0), top_k=5) == []
        store.delete("one", None)
        assert store.count("two") == 3

    def test_dimension_mismatch(self, store: Any) -> None:
        assert store.dimension() is None
        self._commit(store, make_chunks("/a.md", 2), _vectors(2, 1))
        assert store.dimension() == DIM
        with pytest.raises(DimensionMismatchError), store.session(NS) as session:
            session.stage("/b.md").write(make_chunks("/b.md", 1), _vectors(1, 2, dim=DIM * 2))
        with pytest.raises(DimensionMismatchError):
            store.search(NS, np.ones(DIM * 2, dtype=np.float32), top_k=3)
        assert store.count(NS) == 2

    def test_write_needs_one_vector_per_chunk(self, store: Any) -> None:
        with pytest.raises(StoreError), store.session(NS) as session:
            session.stage("/a.md").write(make_chunks("/a.md", 3), _vectors(2, 1))
        assert store.count(NS) == 0

    def test_search_ranks_by_cosine(self, store: Any) -> None:
        chunks = make_chunks("/a.md", 4, metadata={"k": "v"}, tags=("t1", "t2"))
        vectors = np.stack([_unit(0) * 3, _unit(0) + _unit(1), _unit(1), -_unit(0)])
        self._commit(store, chunks, vectors)
        results = store.search(NS, _unit(0), top_k=3)
        assert self._ids(results) == [chunks[0].id, chunks[1].id, chunks[2].id]
        assert results[0].score == pytest.approx(1.0, abs=1e-5)
        assert results[1].score == pytest.approx(2**-0.5, abs=1e-5)
        assert results[2].score == pytest.approx(0.0, abs=1e-5)
        first = results[0]
        assert first.text == chunks[0].text and first.source == "/a.md"
        assert first.document_id == chunks[0].document_id
        assert first.metadata == {"k": "v", "order": 0}
        assert first.span == (chunks[0].start, chunks[0].end)
        assert first.tags == ("t1", "t2")
        assert store.search(NS, _unit(0), top_k=0) == []

    def test_reopen_keeps_everything(self, store: Any) -> None:
        chunks = make_chunks("/a.md", 3, metadata={"lang": "en"}, content_hash="x")
        self._commit(store, chunks, _vectors(3, 1))
        session = store.session(NS)  # left open, as by a process that dies: its staged rows never show
        stage = session.stage("/b.md")
        stage.write(make_chunks("/b.md", 2), _vectors(2, 5))
        session.flush()
        store = self.reopen(store)
        assert store.count(NS) == 3 and store.dimension() == DIM and store.sources(NS) == ["/a.md"]
        assert self._state(store, "/a.md").documents == {chunks[0].document_id: "x"}
        assert self._state(store, "/b.md").next_generation > stage.generation
        results = store.search(NS, _unit(0), top_k=5, filter=parse_filter({"lang": "en"}))
        assert sorted(self._ids(results)) == sorted(c.id for c in chunks)

    def test_stats(self, store: Any) -> None:
        self._commit(store, make_chunks("/a.md", 2), _vectors(2, 1))
        self._commit(store, make_chunks("/b.md", 3), _vectors(3, 2))
        stats = store.stats(NS)
        assert stats["chunks"] == 5 and stats["sources"] == 2

    # ------------------------------------------------------------------ filters

    # ids without a backslash: pytest escapes one again each time it collects in the same process (mutmut
    # collects, then runs by id), and the second id no longer matches the first
    @pytest.mark.parametrize("spec", FILTERS, ids=[repr(f)[:60].replace("\\", "") for f in FILTERS])
    def test_filter_matches_memory_semantics(self, store: Any, spec: Any) -> None:
        chunks = self._filter_store(store)
        node = parse_filter(spec)
        expected = sorted(
            cid for cid, c in chunks.items() if matches(node, metadata=c.metadata, source=c.source, document_id=c.document_id, tags=c.tags)
        )
        got = sorted(self._ids(store.search(NS, _unit(0), top_k=100, filter=node)))
        assert got == expected
        assert store.count(NS) == len(FILTER_RECORDS)

    def test_every_filter_form_matches_memory_semantics(self, store: Any) -> None:
        """Each of EDGE_FILTERS finds in the store what :func:`matches` finds (one store, filled once)."""
        chunks = {}
        for i, (name, metadata, tags) in enumerate(EDGE_RECORDS):
            (chunk,) = make_chunks(f"/edge/{name}.md", 1, metadata=metadata, tags=tags, texts=[f"text of {name}"])
            self._commit(store, [chunk], _unit(i % DIM)[None, :])
            chunks[chunk.id] = chunk
        wrong = []
        for spec in EDGE_FILTERS:
            node = parse_filter(spec)
            expected = sorted(
                c.source for c in chunks.values() if matches(node, metadata=c.metadata, source=c.source, document_id=c.document_id, tags=c.tags)
            )
            got = sorted(r.source for r in store.search(NS, _unit(0), top_k=100, filter=node))
            if got != expected:
                wrong.append(f"{spec!r}: {got} instead of {expected}")
        assert not wrong, "\n".join(wrong)

    def test_delete_with_filter(self, store: Any) -> None:
        chunks = self._filter_store(store)
        node = parse_filter({"lang": "en"})
        doomed = {cid for cid, c in chunks.items() if c.metadata.get("lang") == "en"}
        assert store.delete(NS, node) == len(doomed)
        left = set(self._ids(self._all(store)))
        assert left == set(chunks) - doomed
        assert store.delete(NS, node) == 0

    def test_filter_keys_are_literal(self, store: Any) -> None:
        self._filter_store(store)
        results = store.search(NS, _unit(0), top_k=100, filter=parse_filter({"a.b": 1}))
        assert [r.source for r in results] == ["/data/r4.md"]

    def test_invalid_filter_is_a_filter_error(self, store: Any) -> None:
        with pytest.raises(FilterError):
            parse_filter({"year": {"$regex": "x"}})

    def test_hand_built_filter_trees(self, store: Any) -> None:
        """A tree built from Condition directly (parse_filter passes it through unchecked): values the parser
        would refuse match as :func:`matches` says, an unknown operator is a FilterError naming it."""
        chunks = self._filter_store(store)
        for node in (Condition("year", "$gt", True), Condition("year", "$in", ()), Condition("year", "$nin", ()), Condition("lang", "$gte", None)):
            expected = sorted(c.source for c in chunks.values() if matches(node, metadata=c.metadata, source=c.source, document_id=c.document_id, tags=c.tags))
            assert sorted(r.source for r in store.search(NS, _unit(0), top_k=100, filter=node)) == expected, node
        for node in (Condition("year", "$regex", "x"), Condition("source", "$regex", "x"), Condition("tags", "$gt", "a")):
            with pytest.raises(FilterError, match=re.escape(f"{node.op!r}")) as info:
                store.search(NS, _unit(0), top_k=5, filter=node)
            assert node.key != "tags" or "tags" in str(info.value)
        with pytest.raises(FilterError, match="not a parsed filter"):
            store.search(NS, _unit(0), top_k=5, filter={"year": 2019})  # a dict the caller forgot to parse
        assert store.count(NS) == len(FILTER_RECORDS)

    # ------------------------------------------------------------------ capabilities

    def test_keyword_search(self, store: Any) -> None:
        if KEYWORD_SEARCH not in store.capabilities:
            assert not callable(getattr(store, "keyword_search", None))
            return
        texts = ["the quick brown fox jumps", "lazy dogs sleep all day", "fox hunting season opens", "a lamp glows"]
        chunks = make_chunks("/a.md", 4, texts=texts, metadata={"lang": "en"}, tags=("t",))
        self._commit(store, chunks, _vectors(4, 1))
        other = make_chunks("/b.md", 1, texts=["fox fox fox in another namespace"])
        self._commit(store, other, _vectors(1, 2), namespace="elsewhere")
        session = store.session(NS)
        session.stage("/c.md").write(make_chunks("/c.md", 1, texts=["fox staged but never committed"]), _vectors(1, 3))
        session.flush()
        results = store.keyword_search(NS, "fox", top_k=10, filter=None)
        assert sorted(self._ids(results)) == sorted([chunks[0].id, chunks[2].id])
        assert all(r.score > 0 for r in results)
        assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
        first = results[0]
        source_chunk = next(c for c in chunks if c.id == first.chunk_id)
        assert first.metadata == source_chunk.metadata and first.tags == ("t",)
        assert first.span == (source_chunk.start, source_chunk.end) and first.text == source_chunk.text
        assert self._ids(store.keyword_search(NS, "lazy dogs", top_k=1, filter=None)) == [chunks[1].id]
        assert store.keyword_search(NS, "zzzunknownzzz", top_k=5, filter=None) == []
        narrowed = store.keyword_search(NS, "fox", top_k=10, filter=parse_filter({"lang": "de"}))
        assert narrowed == []
        store.delete(NS, parse_filter({"source": "/a.md"}))
        assert store.keyword_search(NS, "fox", top_k=10, filter=None) == []

    def test_get_vectors(self, store: Any) -> None:
        if VECTORS not in store.capabilities:
            assert not callable(getattr(store, "get_vectors", None))
            return
        chunks = make_chunks("/a.md", 3)
        vectors = _vectors(3, 1) * 5
        self._commit(store, chunks, vectors)
        got = store.get_vectors(NS, [chunks[2].id, chunks[0].id])
        assert got.dtype == np.float32 and got.shape == (2, DIM)
        expected = vectors[[2, 0]] / np.linalg.norm(vectors[[2, 0]], axis=1, keepdims=True)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        with pytest.raises(StoreError):
            store.get_vectors(NS, ["no-such-chunk"])
        with pytest.raises(StoreError):
            store.get_vectors("elsewhere", [chunks[0].id])

    def test_iter_chunks(self, store: Any) -> None:
        if CHUNKS not in store.capabilities:
            assert not callable(getattr(store, "iter_chunks", None))
            return
        assert [c for batch in store.iter_chunks(NS, batch_size=3) for c in batch] == []
        doc_a = make_chunks("/a.md", 4, metadata={"lang": "en"}, tags=("t",), content_hash="ca", metadata_hash="ma")
        doc_b = make_chunks("/b.md", 3, part=2)
        self._commit(store, doc_a, _vectors(4, 1))
        self._commit(store, doc_b, _vectors(3, 2))
        self._commit(store, make_chunks("/c.md", 2), _vectors(2, 3), namespace="elsewhere")
        session = store.session(NS)
        session.stage("/d.md").write(make_chunks("/d.md", 2), _vectors(2, 4))  # staged, never committed
        session.flush()
        batches = list(store.iter_chunks(NS, batch_size=3))
        assert batches and all(1 <= len(batch) <= 3 for batch in batches)
        got = {c.id: c for batch in batches for c in batch}
        assert len(got) == sum(len(b) for b in batches) == 7
        assert got == {c.id: c for c in doc_a + doc_b}  # every field round-trips
        store.delete(NS, parse_filter({"source": "/a.md"}))
        assert sorted(c.id for batch in store.iter_chunks(NS) for c in batch) == sorted(c.id for c in doc_b)
        session.close()
    # ------------------------------------------------------------------ source types

    def test_rows_of_another_source_type_are_never_returned(self, store: Any) -> None:
        """Rows an application writes with another ``source_type`` share the store but never come back."""
        import attrs

        documents = make_chunks("/a.md", 2, texts=["lamp of the document", "second document chunk"])
        memory = [
            attrs.evolve(c, source_type="memory")
            for c in make_chunks("/a.md", 2, part="memory", texts=["lamp remembered by the agent", "another memory"])
        ]
        only_memory = [attrs.evolve(c, source_type="memory") for c in make_chunks("/agent", 1, texts=["lamp agent memory"])]
        vectors = _vectors(2, 1)
        with store.session(NS) as session:
            stage = session.stage("/a.md")
            stage.write(documents, vectors)
            stage.write(memory, vectors * 2)  # the same directions: a search cannot tell them apart by score
            stage.commit()
            stage = session.stage("/agent")
            stage.write(only_memory, vectors[:1])
            stage.commit()
        document_ids = sorted(c.id for c in documents)
        assert store.count(NS) == 2
        assert store.sources(NS) == ["/a.md"]
        assert store.stats(NS)["chunks"] == 2 and store.stats(NS)["sources"] == 1
        assert sorted(self._ids(store.search(NS, vectors[0], top_k=10))) == document_ids
        assert sorted(self._ids(self._all(store))) == document_ids
        state = self._state(store, "/a.md")
        assert set(state.documents) == {documents[0].document_id}
        assert not self._state(store, "/agent").documents
        if KEYWORD_SEARCH in store.capabilities:
            assert self._ids(store.keyword_search(NS, "lamp", top_k=10, filter=None)) == [documents[0].id]
            assert self._ids(store.keyword_search(NS, "lamp", top_k=10, filter=parse_filter({"source": "/agent"}))) == []
        assert self._ids(store.search(NS, vectors[0], top_k=10, filter=parse_filter({"source": "/agent"}))) == []
        if VECTORS in store.capabilities:
            assert store.get_vectors(NS, [documents[0].id]).shape == (1, DIM)
            with pytest.raises(StoreError):
                store.get_vectors(NS, [memory[0].id])
        if CHUNKS in store.capabilities:
            listed = [chunk.id for batch in store.iter_chunks(NS, batch_size=1) for chunk in batch]
            assert sorted(listed) == document_ids
        # ingesting the source again through a pipeline-style stage leaves the scoping intact
        self._commit(store, documents[:1], vectors[:1])
        assert self._ids(store.search(NS, vectors[0], top_k=10)) == [documents[0].id]
        assert store.sources(NS) == ["/a.md"]

    # ------------------------------------------------------------------ through a pipeline

    def test_pipeline_reingest_unchanged_embeds_nothing(self, store: Any, tmp_path: Path) -> None:
        corpus = self._corpus(tmp_path / "corpus")
        pipeline = self._pipeline(store)
        first = pipeline.ingest(corpus)
        assert first.embedded > 0 and first.sources == 4
        ids = sorted(self._ids(self._all(store, "default", 64)))
        second = pipeline.ingest(corpus)
        assert second.embedded == 0 and second.unchanged_sources == 4 and second.removed == 0
        assert sorted(self._ids(self._all(store, "default", 64))) == ids
        assert pipeline.query("warm lamp light")

    def test_pipeline_tags_and_metadata_change_without_embedding(self, store: Any, tmp_path: Path) -> None:
        from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig

        class Counting(HashEmbedder):
            texts = 0

            def embed_documents(self, texts: Any) -> np.ndarray:
                Counting.texts += len(texts)
                return super().embed_documents(texts)

        corpus = self._corpus(tmp_path / "corpus", files=3)
        (corpus / "doc0.md").write_text("---\nstatus: draft\n---\nThe lamp glows warm.", encoding="utf-8")
        pipeline = Pipeline.builder().store(store).embedder(Counting(HashEmbedderConfig(dim=64))).chunker("recursive", size=120, overlap=0).build()
        first = pipeline.ingest(corpus)
        embedded = Counting.texts
        assert embedded == first.embedded > 0
        tagged = pipeline.ingest(corpus, tags=["beta"])
        assert Counting.texts == embedded and tagged.embedded == 0 and tagged.updated == 3
        assert len(pipeline.query("lamp", top_k=100, filter={"tags": "beta"})) == store.count("default")
        (corpus / "doc0.md").write_text("---\nstatus: final\n---\nThe lamp glows warm.", encoding="utf-8")
        plain = pipeline.ingest(corpus)
        assert plain.embedded == 0 and plain.updated == 3 and plain.removed == 0
        assert pipeline.query("lamp", top_k=100, filter={"tags": "beta"}) == []
        assert {r.source for r in pipeline.query("lamp", top_k=100, filter={"status": "final"})} == {str(corpus / "doc0.md")}
        embedded = Counting.texts
        assert pipeline.ingest(corpus).unchanged_sources == 3 and Counting.texts == embedded

    def test_pipeline_edit_replaces_only_that_source(self, store: Any, tmp_path: Path) -> None:
        corpus = self._corpus(tmp_path / "corpus")
        pipeline = self._pipeline(store)
        pipeline.ingest(corpus)
        before = {r.chunk_id: r for r in self._all(store, "default", 64)}
        edited = str(corpus / "doc1.md")
        (corpus / "doc1.md").write_text("Completely new text about a blue lamp.", encoding="utf-8")
        result = pipeline.ingest(corpus)
        assert result.unchanged_sources == 3 and result.embedded == 1
        after = {r.chunk_id: r for r in self._all(store, "default", 64)}
        untouched = {cid for cid, r in before.items() if r.source != edited}
        assert untouched <= set(after)
        assert [r.text for r in after.values() if r.source == edited] == ["Completely new text about a blue lamp."]
        for cid in untouched:
            assert after[cid].text == before[cid].text
        if VECTORS in store.capabilities:
            ordered = sorted(untouched)
            # vectors untouched: same values as a fresh embedding of the same texts
            fresh = pipeline.embedder.embed_documents([after[c].text for c in ordered])
            np.testing.assert_allclose(store.get_vectors("default", ordered), fresh, rtol=1e-5, atol=1e-6)

    def test_pipeline_deleted_file_is_removed(self, store: Any, tmp_path: Path) -> None:
        corpus = self._corpus(tmp_path / "corpus")
        pipeline = self._pipeline(store)
        pipeline.ingest(corpus)
        gone = str(corpus / "doc2.md")
        assert gone in store.sources("default")
        (corpus / "doc2.md").unlink()
        result = pipeline.ingest(corpus)
        assert result.removed_sources == (gone,)
        assert gone not in store.sources("default")
        assert all(r.source != gone for r in self._all(store, "default", 64))

    def test_pipeline_remove_source(self, store: Any, tmp_path: Path) -> None:
        corpus = self._corpus(tmp_path / "corpus")
        pipeline = self._pipeline(store)
        pipeline.ingest(corpus)
        total = store.count("default")
        target = str(corpus / "doc0.md")
        removed = pipeline.remove_source(target)
        assert removed > 0 and store.count("default") == total - removed
        assert target not in pipeline.sources()
        assert all(r.source != target for r in pipeline.query("lamp", top_k=50))

    def test_pipeline_namespaces(self, store: Any, tmp_path: Path) -> None:
        corpus = self._corpus(tmp_path / "corpus", files=2)
        one = self._pipeline(store, namespace="one")
        two = self._pipeline(store, namespace="two")
        one.ingest(corpus)
        assert two.query("lamp") == [] and two.sources() == []
        two.ingest(corpus / "doc0.md")
        assert two.sources() == [str(corpus / "doc0.md")]
        assert len(one.sources()) == 2
        one.remove_source(corpus / "doc0.md")
        assert two.sources() == [str(corpus / "doc0.md")]

    def test_pipeline_dimension_mismatch(self, store: Any, tmp_path: Path) -> None:
        corpus = self._corpus(tmp_path / "corpus", files=1)
        self._pipeline(store, dim=64).ingest(corpus)
        with pytest.raises(DimensionMismatchError) as info:
            self._pipeline(store, dim=32)
        assert "64" in str(info.value) and "32" in str(info.value)

    def test_pipeline_filters(self, store: Any, tmp_path: Path) -> None:
        corpus = self._corpus(tmp_path / "corpus", files=3)
        pipeline = self._pipeline(store)
        pipeline.ingest(corpus / "doc0.md", tags=["red"])
        pipeline.ingest(corpus / "doc1.md", tags=["blue"])
        results = pipeline.query("lamp", top_k=50, filter={"tags": "red"})
        assert results and {r.source for r in results} == {str(corpus / "doc0.md")}
        results = pipeline.query("lamp", top_k=50, filter={"source": {"$ne": str(corpus / "doc0.md")}})
        assert results and {r.source for r in results} == {str(corpus / "doc1.md")}

    def test_queries_during_reingest_never_see_a_source_missing_or_doubled(self, store: Any, tmp_path: Path) -> None:
        files = 6
        corpus = tmp_path / "corpus"
        corpus.mkdir()

        def write(version: int) -> None:
            for i in range(files):
                (corpus / f"f{i}.txt").write_text(f"lamp note {i} revision {version}", encoding="utf-8")

        write(0)
        pipeline = self._pipeline(store)
        pipeline.ingest(corpus)
        problems: list[str] = []
        stop = threading.Event()
        checks = [0]

        def query_loop() -> None:
            query = pipeline.embedder.embed_query("lamp note")
            while not stop.is_set():
                try:
                    seen = {"vector": Counter(r.source for r in store.search("default", query, top_k=100))}
                    if KEYWORD_SEARCH in store.capabilities:
                        seen["keyword"] = Counter(r.source for r in store.keyword_search("default", "lamp", top_k=100, filter=None))
                except Exception as exc:  # noqa: BLE001 - any failure is reported by the test
                    problems.append(f"{type(exc).__name__}: {exc}")
                    return
                for kind, counts in seen.items():
                    if len(counts) != files or set(counts.values()) != {1}:
                        problems.append(f"{kind} search saw {dict(counts)}")
                checks[0] += 1

        thread = threading.Thread(target=query_loop)
        thread.start()
        try:
            for version in range(1, 9):
                write(version)
                result = pipeline.ingest(corpus)
                assert result.embedded == files
        finally:
            stop.set()
            thread.join(timeout=60)
        assert not problems, problems[:5]
        assert checks[0] > 0
        assert store.count("default") == files

    # ------------------------------------------------------------------ namespaces under re-ingest (issue #20)

    def test_committing_a_source_leaves_the_same_source_of_another_namespace(self, store: Any) -> None:
        """A commit, keep, metadata update, abort or delete in one namespace never touches another's rows."""
        doc_a = make_chunks("/a.md", 2, part="a", content_hash="a1", metadata_hash="ma")
        doc_b = make_chunks("/a.md", 1, part="b", content_hash="b1", metadata_hash="mb")
        for namespace, seed in (("one", 1), ("two", 2)):
            with store.session(namespace) as session:
                stage = session.stage("/a.md")
                stage.write(doc_a + doc_b, _vectors(3, seed))
                stage.commit()
        before = sorted((r.chunk_id, r.text, r.metadata.get("order")) for r in self._all(store, "two"))
        state_two = self._state(store, "/a.md", "two")
        vectors_two = store.get_vectors("two", [c.id for c in doc_a + doc_b]) if VECTORS in store.capabilities else None

        def unchanged() -> None:
            assert store.count("two") == 3 and store.sources("two") == ["/a.md"]
            assert sorted((r.chunk_id, r.text, r.metadata.get("order")) for r in self._all(store, "two")) == before
            assert self._state(store, "/a.md", "two").documents == state_two.documents
            assert self._state(store, "/a.md", "two").metadata == state_two.metadata
            if KEYWORD_SEARCH in store.capabilities:
                assert len(store.keyword_search("two", "chunk", top_k=10, filter=None)) == 3
            if vectors_two is not None:
                np.testing.assert_allclose(store.get_vectors("two", [c.id for c in doc_a + doc_b]), vectors_two, atol=1e-6)

        # keep one document, replace the other
        with store.session("one") as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 1, part="b", texts=["new b"], content_hash="b2"), _vectors(1, 3))
            stage.keep([doc_a[0].document_id])
            assert stage.commit() == 1
        assert store.count("one") == 3
        unchanged()
        # carry a document with new metadata
        with store.session("one") as session:
            stage = session.stage("/a.md")
            stage.keep([make_document_id("/a.md", "b")])
            stage.update_metadata(make_chunks("/a.md", 2, part="a", metadata={"colour": "red"}, content_hash="a1", metadata_hash="m2"))
            assert stage.commit() == 0
        assert {r.metadata.get("colour") for r in self._all(store, "one")} == {"red", None}
        unchanged()
        # abort a stage
        with store.session("one") as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 4, part="c"), _vectors(4, 4))
            stage.abort()
        assert store.count("one") == 3
        unchanged()
        # replace everything, then delete by filter and as a whole
        with store.session("one") as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 1, part="d", content_hash="d"), _vectors(1, 5))
            assert stage.commit() == 3
        assert store.count("one") == 1
        unchanged()
        assert store.delete("one", parse_filter({"source": "/a.md"})) == 1
        unchanged()
        self._commit(store, make_chunks("/z.md", 1), _vectors(1, 6), namespace="one")
        assert store.delete("one", None) == 1
        unchanged()
        assert self._state(store, "/a.md", "two").generation == state_two.generation

    def test_pipeline_reingest_in_one_namespace_keeps_another(self, store: Any, tmp_path: Path) -> None:
        corpus = self._corpus(tmp_path / "corpus", files=3)
        one = self._pipeline(store, namespace="one")
        two = self._pipeline(store, namespace="two")
        one.ingest(corpus)
        two.ingest(corpus)
        before = sorted((r.chunk_id, r.text) for r in two.query("lamp", top_k=100))
        assert before and store.count("two") == store.count("one")
        self._corpus(corpus, files=2, version=2)  # doc0, doc1 edited
        (corpus / "doc2.md").unlink()  # doc2 deleted
        result = one.ingest(corpus)
        assert result.removed_sources == (str(corpus / "doc2.md"),) and result.removed > 0
        assert sorted((r.chunk_id, r.text) for r in two.query("lamp", top_k=100)) == before
        assert two.sources() == [str(corpus / f"doc{i}.md") for i in range(3)]
        assert all("version 2" in r.text for r in one.query("lamp", top_k=100))

    def test_a_failed_source_leaves_nothing_behind(self, store: Any, tmp_path: Path) -> None:
        """A source that fails halfway (after some of its chunks were staged) adds no row, visible or not."""
        path = tmp_path / "rows.jsonl"
        path.write_text("".join(f'{{"n": {i}, "text": "lamp row {i}"}}\n' for i in range(6)) + "{broken\n", encoding="utf-8")
        pipeline = (
            Pipeline.builder().store(store).embedder("hash", dim=64).ingest_options(batch_size=1, on_error="skip").build()
        )
        result = pipeline.ingest(path)
        assert len(result.failed) == 1 and store.count("default") == 0 and store.sources("default") == []
        assert store.stats("default")["chunks"] == 0
        path.write_text('{"n": 0, "text": "lamp row 0"}\n', encoding="utf-8")
        assert pipeline.ingest(path).failed == ()
        assert store.count("default") == 1 and store.stats("default")["chunks"] == 1
        (hit,) = pipeline.query("lamp row", top_k=10)
        assert "lamp row 0" in hit.text


class PersistentStoreContract(StoreContract):
    """:class:`StoreContract` plus crash recovery, for stores whose data outlives the process.

    Subclasses provide :meth:`reopen` and :meth:`child_store_code`.
    """

    def test_kill_9_during_a_grouped_flush_leaves_every_source_old_or_new(self, store: Any, tmp_path: Path) -> None:
        sources, group = 240, 60
        states = store.source_states(NS, [f"/kill/s{i}.md" for i in range(sources)])
        with store.session(NS) as session:
            for i in range(sources):
                chunks, vectors = version_chunks(i, 1)
                stage = session.stage(chunks[0].source, states[chunks[0].source])
                stage.write(chunks, vectors)
                stage.commit()
        code = self.child_store_code(store)
        store.close()
        script = f"{code}\nfrom ragloom.testing.store_contract import grouped_child\ngrouped_child(store, {sources}, {group})\n"
        outcomes = []
        for flush_number, delay in ((2, 0.0), (3, 0.02)):
            child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            assert child.stdout is not None
            flushed = 0
            killed = False
            for line in child.stdout:
                word, _, number = line.strip().partition(" ")
                if word == "flushed":
                    flushed = int(number)
                if word == "flushing" and int(number) == flush_number:
                    time.sleep(delay)
                    os.kill(child.pid, signal.SIGKILL)
                    killed = True
                    break
            child.wait(timeout=120)
            assert killed, child.stderr.read() if child.stderr else "child ended early"
            outcomes.append(flushed)
            store = self.reopen(store)
            grouped = self._by_source(store)
            assert len(grouped) == sources
            new = 0
            for i in range(sources):
                texts = sorted(r.text for r in grouped[f"/kill/s{i}.md"])
                versions = {t.split()[3] for t in texts}
                assert len(versions) == 1, f"source {i} mixes versions {versions}"
                version = int(versions.pop())
                assert texts == sorted(c.text for c in version_chunks(i, version)[0]), i
                if i < flushed * group:
                    assert version == 2, f"source {i} was flushed before the kill but holds version {version}"
                new += version == 2
            assert flushed * group <= new <= (flushed + 1) * group
            store.close()
        store = self.reopen(store)
        # the store still works after the kills: one more pass brings every source to version 2
        grouped_child(store, sources, group)
        assert {r.text.split()[3] for r in self._all(store)} == {"2"}
        assert store.count(NS) == sum(len(version_chunks(i, 2)[0]) for i in range(sources))
