"""multi_query: expansion cleanup, cap, concurrency, merging and every fallback."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from ragloom import Pipeline
from ragloom.config import PipelineConfig
from ragloom.errors import ConfigError, LLMError, StoreError
from ragloom.retrievers.multi_query import MultiQueryConfig, MultiQueryRetriever, clean_variants, parse_variants
from ragloom.types import Result


def _result(chunk: str, score: float) -> Result:
    return Result(chunk_id=chunk, document_id=chunk.split(":")[0], text=chunk, score=score, source="/s")


class ScriptedBase:
    """A retriever answering from a table; optionally failing for some queries (fault injection)."""

    def __init__(self, table: dict[str, list[Result]], fail: dict[str, Exception] | None = None):
        self.table = table
        self.fail = fail or {}
        self.calls: list[tuple[str, Any]] = []
        self.threads: set[int] = set()
        self._barrier = threading.Barrier(2, timeout=5)
        self.wait_for_two = False

    def retrieve(self, query: str, *, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> list[Result]:
        self.calls.append((query, top_k))
        self.threads.add(threading.get_ident())
        if self.wait_for_two:
            self._barrier.wait()  # two queries in flight at once, or this times out
        if query in self.fail:
            raise self.fail[query]
        return self.table.get(query, [])[: top_k or 5]


def test_parse_and_clean_variants() -> None:
    answer = '1. Wi-Fi setup\n2) "wifi SETUP"\n- connect router\n\n* How do I reset?\nb) how do i reset?\n   '
    assert parse_variants(answer) == ["Wi-Fi setup", "wifi SETUP", "connect router", "How do I reset?", "how do i reset?"]
    cleaned = clean_variants("How do I reset?", ["  wifi   setup ", "WIFI setup", "", "how do I RESET?", "router", "extra"], cap=2)
    assert cleaned == ["wifi setup", "router"]


def test_original_always_searched_variants_capped_and_deduplicated() -> None:
    base = ScriptedBase({})
    expander = lambda q: ["Alpha", "alpha ", "QUERY", "beta", "gamma", "delta"]  # noqa: E731
    retriever = MultiQueryRetriever(MultiQueryConfig(max_queries=2), base=base, expander=expander)
    assert retriever.expand("query") == ["query", "Alpha", "beta"]
    retriever.retrieve("query", top_k=3)
    assert sorted(q for q, _ in base.calls) == ["Alpha", "beta", "query"]
    assert all(k == 3 for _, k in base.calls)


def test_merge_keeps_best_score_per_chunk() -> None:
    base = ScriptedBase(
        {
            "q": [_result("a:0", 0.5), _result("b:0", 0.4)],
            "v1": [_result("b:0", 0.9), _result("c:0", 0.3)],
            "v2": [_result("a:0", 0.6)],
        }
    )
    retriever = MultiQueryRetriever(MultiQueryConfig(top_k=5), base=base, expander=lambda q: ["v1", "v2"])
    results = retriever.retrieve("q")
    assert [(r.chunk_id, r.score) for r in results] == [("b:0", 0.9), ("a:0", 0.6), ("c:0", 0.3)]
    assert results[0].metadata["matched_queries"] == ["q", "v1"]
    assert len(retriever.retrieve("q", top_k=2)) == 2


def test_variants_run_concurrently() -> None:
    base = ScriptedBase({"q": [_result("a:0", 1.0)]})
    base.wait_for_two = True
    retriever = MultiQueryRetriever(MultiQueryConfig(max_workers=2), base=base, expander=lambda q: ["v"])
    assert [r.chunk_id for r in retriever.retrieve("q")] == ["a:0"]
    assert len(base.threads) == 2


def test_expansion_failure_falls_back_to_the_original(caplog: pytest.LogCaptureFixture) -> None:
    base = ScriptedBase({"q": [_result("a:0", 1.0)]})

    def broken(query: str) -> list[str]:
        raise TimeoutError("llm down")

    retriever = MultiQueryRetriever(MultiQueryConfig(), base=base, expander=broken)
    with caplog.at_level(logging.WARNING, logger="ragloom.retrievers.multi_query"):
        assert [r.chunk_id for r in retriever.retrieve("q")] == ["a:0"]
    assert base.calls == [("q", 5)]
    assert "expansion failed" in caplog.text and "llm down" in caplog.text


def test_some_failures_are_tolerated_all_failures_raise_the_first() -> None:
    first, second = StoreError("store offline"), LLMError("bad variant")
    base = ScriptedBase({"v": [_result("b:0", 0.2)]}, fail={"q": first})
    retriever = MultiQueryRetriever(MultiQueryConfig(), base=base, expander=lambda q: ["v"])
    assert [r.chunk_id for r in retriever.retrieve("q")] == ["b:0"]
    base.fail["v"] = second
    with pytest.raises(StoreError) as info:
        retriever.retrieve("q")
    assert info.value is first


def test_no_expander_needs_an_llm(corpus: Path) -> None:
    with pytest.raises(ConfigError, match="LLM"):
        Pipeline.from_config(PipelineConfig.from_dict({"retriever": {"type": "multi_query"}}, base_dir=corpus.parent))
    with pytest.raises(ConfigError, match="type"):
        PipelineConfig.from_dict({"retriever": {"type": "multi_query", "base": {"top_k": 3}}})
    with pytest.raises(ConfigError, match="unknown retriever type 'hybird'"):
        Pipeline.builder().llm(lambda p: "x").retriever("multi_query", base={"type": "hybird"}).build()


def test_pipeline_llm_expands_queries_on_a_hybrid_base(corpus: Path) -> None:
    prompts: list[str] = []

    def llm(prompt: str) -> str:
        prompts.append(prompt)
        return "1. warranty claim process\n2. WARRANTY CLAIM PROCESS\n3. broken lamp repair\n4. a fourth one"

    pipeline = (
        Pipeline.builder()
        .base_dir(corpus.parent)
        .llm(llm)
        .retriever("multi_query", top_k=4, max_queries=2, base={"type": "hybrid", "weights": {"bm25": 0.5, "vector": 0.5}})
        .build()
    )
    pipeline.ingest("corpus")
    results = pipeline.query("my lamp stopped working, what now?")
    assert len(results) == 4
    assert "my lamp stopped working, what now?" in prompts[0] and "2" in prompts[0]
    used = {q for r in results for q in r.metadata["matched_queries"]}
    assert used <= {"my lamp stopped working, what now?", "warranty claim process", "broken lamp repair"}
    assert any(r.source.endswith("warranty.txt") for r in results)
    assert all("keyword_score" in r.metadata for r in results)  # the hybrid base ran
