"""What a query answers, refuses and warns about, checked exactly.

Written against the mutants of ``pipeline.py`` a looser check let through: a
refused count that names the wrong option, a pool as large as ``top_k``
refused, a threshold or a filter dropped on the way to the retriever, the query
counter, the warning about a filter key no chunk has (its text, and that it is
given only when nothing was found), and the JSON form of results. Real memory
store and hash embedder.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from typing import Any

import attrs
import pytest

import ragloom.pipeline
from ragloom import (
    ConfigError,
    DimensionMismatchError,
    Document,
    Pipeline,
    Registry,
    RerankError,
    Result,
    hookimpl,
    make_plugin_manager,
)
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
    # stacklevel: the warning points at the caller of query() (mutation testing wraps query() in a function
    # of another file, which is then that caller)
    wrapper = Pipeline.query.__code__.co_filename
    assert caught[0].filename == (__file__ if wrapper == ragloom.pipeline.__file__ else wrapper)
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


# ---------------------------------------------------------------------- a failing reranker


class Failing:
    """A reranker instance that fails on every call (``top_n`` optional, like a plugin's)."""

    def __init__(self, top_n: int | None = None, strict: bool = False):
        if top_n is not None:
            self.top_n = top_n
        self.config = StrictConfig(strict=strict)

    def rerank(self, query: str, results: Sequence[Result], top_n: int | None = None) -> list[Result]:
        raise KeyError("boom")


@attrs.frozen
class StrictConfig:
    strict: bool = False


class FellBack:
    """A reranker that falls back by itself: the retrieval order, marked, without raising."""

    def rerank(self, query: str, results: Sequence[Result], top_n: int | None = None) -> list[Result]:
        return [attrs.evolve(r, metadata={**r.metadata, "rerank_fallback": True}) for r in results[: top_n or 2]]


def test_a_failing_reranker_keeps_the_retrieval_order_logs_and_counts_once(caplog: pytest.LogCaptureFixture) -> None:
    plain = build().query("the kettle boils water", top_k=3)
    pipeline = build(Failing(top_n=2))
    with caplog.at_level(logging.WARNING):
        results = pipeline.query("the kettle boils water")
    assert [r.chunk_id for r in results] == [r.chunk_id for r in plain[:2]]  # the reranker's own top_n: 2
    assert all(r.metadata["rerank_fallback"] is True for r in results)
    [record] = [r for r in caplog.records if "keeping retrieval order" in r.getMessage()]
    assert record.name == "ragloom.pipeline"
    assert record.getMessage().startswith("reranker Failing failed, keeping retrieval order: reranker Failing failed: KeyError")
    assert pipeline.stats()["rerank_failures"] == 1
    assert [r.chunk_id for r in pipeline.query("the kettle boils water", top_k=1)] == [plain[0].chunk_id]
    assert pipeline.stats()["rerank_failures"] == 2
    no_top_n = build(Failing())
    assert len(no_top_n.query("the kettle boils water")) == 3  # no top_n: the whole pool of 3


def test_a_reranker_that_fell_back_by_itself_is_counted() -> None:
    pipeline = build(FellBack())
    results = pipeline.query("lamp", top_k=2)
    assert len(results) == 2 and pipeline.stats()["rerank_failures"] == 1
    recorder = build(Recorder())
    recorder.query("lamp", top_k=2)
    assert recorder.stats()["rerank_failures"] == 0


def test_a_strict_reranker_raises_naming_itself() -> None:
    with pytest.raises(RerankError, match="reranker Failing failed: KeyError"):
        build(Failing(strict=True)).query("lamp")


class Boom:
    def __init__(self, config: Any):
        self.config = config
        self.top_n = 2

    def rerank(self, query: str, results: Sequence[Result], top_n: int | None = None) -> list[Result]:
        raise ValueError("the service is down")


class BoomPlugin:
    @hookimpl
    def register_rerankers(self, register: Any) -> None:
        register("boom", lambda config, context: Boom(config), config=StrictlessConfig)


@attrs.frozen
class StrictlessConfig:
    note: str = ""


@pytest.mark.parametrize("strict", [False, True])
def test_a_registered_reranker_is_named_by_its_type_and_strict_comes_from_the_reranker_table(
    strict: bool, caplog: pytest.LogCaptureFixture
) -> None:
    registry = Registry(make_plugin_manager(extra_plugins=[BoomPlugin()]))
    pipeline = (
        Pipeline.builder(registry=registry).embedder("hash", dim=128).store(MemoryStore()).reranker("boom", strict=strict).build()
    )
    pipeline.ingest_documents(DOCUMENTS)
    if strict:
        with pytest.raises(RerankError, match="reranker 'boom' failed: ValueError: the service is down"):
            pipeline.query("lamp")
        return
    with caplog.at_level(logging.WARNING):
        assert len(pipeline.query("lamp")) == 2
    assert any(r.getMessage().startswith("reranker 'boom' failed, keeping retrieval order") for r in caplog.records)


def test_a_store_of_another_dimension_is_refused_with_both_dimensions() -> None:
    store = MemoryStore()
    Pipeline.builder().embedder("hash", dim=64).store(store).build().ingest_documents(DOCUMENTS[:1])
    assert Pipeline.builder().embedder("hash", dim=64).store(store).build().store is store  # the same dimension: fine
    with pytest.raises(DimensionMismatchError) as raised:
        Pipeline.builder().embedder("hash", dim=32).store(store).build()
    assert (raised.value.store_dim, raised.value.embedder_dim) == (64, 32)
    assert "store holds vectors of dimension 64, but the embedder makes dimension 32" in str(raised.value)


def test_a_fresh_pipeline_counts_nothing_yet() -> None:
    pipeline = Pipeline.builder().embedder("hash", dim=16).store(MemoryStore()).build()
    stats = pipeline.stats()
    assert (stats["documents_ingested"], stats["chunks_written"], stats["queries"], stats["rerank_failures"]) == (0, 0, 0, 0)


def test_a_failing_reranker_keeping_nothing_is_still_counted() -> None:
    pipeline = build(Failing(top_n=0))
    assert pipeline.query("lamp") == []
    assert pipeline.stats()["rerank_failures"] == 1


def test_the_threshold_hint_quotes_the_best_result_of_a_one_result_query() -> None:
    """With a reranker, 'the best' is the reranked first of the pool a top_k=1 query fetches (4 candidates)."""
    pipeline = build(Recorder(top_n=3))
    extra = ["lamp lamp bright lamp", "the lamp is on the table", "a street lamp post outside tonight"]
    pipeline.ingest_documents([Document.create(text, f"app:extra{i}") for i, text in enumerate(extra)])
    # 6 chunks of distinct scores: pools of 4 (top_k=1), 8 (top_k=2) and the retriever's 3 (no top_k) differ
    ranked = pipeline.store.search(pipeline.namespace, pipeline.embedder.embed_query("lamp"), top_k=6)
    fourth = ranked[3].score  # a pool of 4, reversed by the reranker: the 4th nearest comes first
    hint = pipeline.explain_empty("lamp", threshold=0.999)
    assert hint == f"no result scored at least the threshold 0.999 (the best scored {fourth:.3f})"


def test_builder_llm_options_are_checked_under_the_llm_key() -> None:
    with pytest.raises(ConfigError) as raised:
        Pipeline.builder().llm("openai", nope=1)
    assert str(raised.value).startswith("unknown key 'nope' @ $.llm (allowed:")
    with pytest.raises(ConfigError) as raised:
        Pipeline.builder().llm(model=3)  # no name: the openai client
    assert str(raised.value).startswith("invalid value 3 @ $.llm.model: expected a string")
