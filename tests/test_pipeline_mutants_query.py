"""What a query answers, refuses and warns about, checked exactly.

Written against the mutants of ``pipeline.py`` a looser check let through: a
refused count that names the wrong option, a pool as large as ``top_k``
refused, a threshold or a filter dropped on the way to the retriever, the query
counter, the warning about a filter key no chunk has (its text, and that it is
given only when nothing was found), and the JSON form of results. Real memory
store and hash embedder.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import pytest

from ragloom import ConfigError, Document, Pipeline, Result
from ragloom.pipeline import iter_results_as_dicts
from ragloom.stores.memory import MemoryStore

DOCUMENTS = [
    Document.create("the lamp resets when you hold the button", "app:lamp", metadata={"kind": "manual"}),
    Document.create("the kettle boils water in two minutes", "app:kettle", metadata={"kind": "faq"}),
    Document.create("a chair has four legs and a back", "app:chair", metadata={"kind": "faq"}),
]


class Recorder:
    """A reranker instance recording the pool it got; keeps the first ``top_n`` in reverse order."""

    def __init__(self, top_n: int = 2):
        self.top_n = top_n
        self.pools: list[int] = []

    def rerank(self, query: str, results: Sequence[Result], top_n: int | None = None) -> list[Result]:
        self.pools.append(len(results))
        return list(reversed(results))[: top_n or self.top_n]


def build(reranker: Any = None, namespace: str = "default") -> Pipeline:
    builder = (
        Pipeline.builder().namespace(namespace).embedder("hash", dim=128).store(MemoryStore()).retriever("similarity", top_k=3)
    )
    if reranker is not None:
        builder = builder.reranker(reranker)
    pipeline = builder.build()
    pipeline.ingest_documents(DOCUMENTS)
    return pipeline


@pytest.mark.parametrize("option", ["top_k", "top_n", "candidates"])
@pytest.mark.parametrize("value", [0, -1, True, 2.0, "3"])
def test_a_bad_count_is_refused_naming_the_option_and_the_value(option: str, value: Any) -> None:
    pipeline = build(Recorder())
    shown = repr(value)
    with pytest.raises(ConfigError) as raised:
        pipeline.query("lamp", **{option: value})
    assert str(raised.value).startswith(f"invalid value {shown} @ {option}: expected an integer > 0")


def test_a_count_of_one_is_accepted_everywhere() -> None:
    pipeline = build(Recorder())
    assert len(pipeline.query("lamp", top_k=1, candidates=1)) == 1
    assert len(pipeline.query("lamp", top_n=1)) == 1
    assert len(build().query("lamp", top_k=1)) == 1


@pytest.mark.parametrize("text", ["", "   ", None, 3])
def test_a_query_that_is_not_a_non_empty_string_is_refused(text: Any) -> None:
    with pytest.raises(ConfigError) as raised:
        build().query(text)
    assert str(raised.value).startswith("a query must be a non-empty string")


def test_candidates_equal_to_top_k_is_a_valid_pool() -> None:
    recorder = Recorder()
    pipeline = build(recorder)
    results = pipeline.query("lamp", top_k=2, candidates=2)
    assert len(results) == 2 and recorder.pools == [2]
    with pytest.raises(ConfigError) as raised:
        pipeline.query("lamp", top_k=3, candidates=2)
    assert str(raised.value).startswith(
        "query option 'candidates' (2) must be at least top_k (3): reranking only reorders the pool"
    )
    without = build()
    with pytest.raises(ConfigError) as raised:
        without.query("lamp", candidates=2)
    assert str(raised.value).startswith(
        "query option 'candidates' is the pool fetched before reranking, and this pipeline has no reranker"
    )


def test_the_reranker_gets_the_query_text_and_returns_top_k() -> None:
    class Texts(Recorder):
        def __init__(self, top_n: int):
            super().__init__(top_n)
            self.texts: list[str] = []

        def rerank(self, query: str, results: Sequence[Result], top_n: int | None = None) -> list[Result]:
            self.texts.append(query)
            return super().rerank(query, results, top_n)

    reranker = Texts(top_n=3)
    pipeline = build(reranker)
    plain = build().query("kettle water", top_k=3)
    reranked = pipeline.query("kettle water", top_k=3)
    assert reranker.texts == ["kettle water"] and reranker.pools == [3]
    assert [r.chunk_id for r in reranked] == [r.chunk_id for r in reversed(plain)]
    # top_k=1: a pool of 4 (3 stored chunks), reversed, the first kept
    assert [r.chunk_id for r in pipeline.query("kettle water", top_k=1)] == [plain[-1].chunk_id] and reranker.pools[-1] == 3


@pytest.mark.parametrize("reranked", [False, True])
def test_threshold_and_filter_reach_the_retriever(reranked: bool) -> None:
    pipeline = build(Recorder(top_n=3) if reranked else None)
    everything = pipeline.query("the lamp resets when you hold the button", top_k=3)
    assert len(everything) == 3
    best = max(r.score for r in everything)
    above = pipeline.query("the lamp resets when you hold the button", top_k=3, threshold=best - 1e-6)
    assert [r.source for r in above] == ["app:lamp"]
    faq = pipeline.query("the lamp resets when you hold the button", top_k=3, filter={"kind": "faq"})
    assert sorted(r.source for r in faq) == ["app:chair", "app:kettle"]


def test_the_query_counter_counts_each_query_once() -> None:
    pipeline = build(Recorder())
    assert pipeline.stats()["queries"] == 0
    pipeline.query("lamp")
    pipeline.query("kettle", top_k=1)
    pipeline.query("chair", filter={"kind": "nothing-like-this"})
    assert pipeline.stats()["queries"] == 3


def test_a_filter_key_no_chunk_has_is_warned_about_exactly_when_nothing_is_found() -> None:
    pipeline = build()
    with pytest.warns(UserWarning) as caught:
        assert pipeline.query("lamp", filter={"colour": "red", "kind": "manual"}) == []
    messages = [str(w.message) for w in caught]
    assert messages == ["no stored chunk has the metadata key 'colour' (filter {'colour': 'red', 'kind': 'manual'})"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a known key with no match, or a found result: no warning
        assert pipeline.query("lamp", filter={"kind": "nothing-like-this"}) == []
        assert pipeline.query("lamp", filter={"kind": "manual"}) != []
        assert pipeline.query("lamp", filter={"$or": [{"kind": "manual"}, {"colour": "red"}]}) != []
        assert pipeline.query("lamp") != []


def test_missing_filter_keys_looks_in_the_pipelines_own_namespace() -> None:
    pipeline = build(namespace="shop")
    assert pipeline.missing_filter_keys({"kind": "faq", "colour": "red", "source": "app:lamp"}) == ["colour"]
    assert pipeline.missing_filter_keys({"$and": [{"colour": "red"}, {"colour": {"$ne": "blue"}}, {"size": 1}]}) == [
        "colour",
        "size",
    ]
    empty = Pipeline.builder().embedder("hash", dim=16).store(MemoryStore()).build()
    assert empty.missing_filter_keys({"colour": "red"}) == []  # an empty store has no dimension yet: nothing to say
    other = Pipeline.builder().namespace("other").embedder("hash", dim=128).store(pipeline.store).build()
    assert other.missing_filter_keys({"kind": "faq"}) == ["kind"]  # the 'shop' namespace's chunks are not its own


def test_results_as_dicts_are_json_ready_and_ranked_from_one() -> None:
    pipeline = build()
    results = pipeline.query("the lamp resets", top_k=2)
    rows = list(iter_results_as_dicts(results))
    assert [row["rank"] for row in rows] == [1, 2]
    first, result = rows[0], results[0]
    assert first == {
        "rank": 1,
        "score": result.score,
        "source": "app:lamp",
        "span": list(result.span),
        "citation": result.citation(),
        "chunk_id": result.chunk_id,
        "document_id": result.document_id,
        "text": "the lamp resets when you hold the button",
        "metadata": result.metadata,
        "tags": [],
    }
    assert type(first["span"]) is list and type(first["tags"]) is list and first["metadata"]["kind"] == "manual"
    assert first["citation"].startswith("app:lamp") and first["document_id"] == DOCUMENTS[0].id
    assert list(iter_results_as_dicts([])) == []
