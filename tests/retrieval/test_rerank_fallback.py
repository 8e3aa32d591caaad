"""Any reranker that fails falls back to the retrieval order: through the pipeline, counted in stats(), raised when strict.

Built-in rerankers against a real OpenAI-compatible HTTP server on 127.0.0.1 that
answers 500, times out, sends malformed JSON or scores only some passages; a
third-party reranker plugin (registered through the plugin manager) that raises.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from plugins import faulty
from ragloom import Pipeline, Registry, RerankError
from ragloom.config import PipelineConfig
from ragloom.plugins import make_plugin_manager
from ragloom.rerankers.keyword import KeywordReranker, KeywordRerankerConfig
from ragloom.rerankers.llm import LLMReranker, LLMRerankerConfig, normalised_retrieval
from ragloom.types import Result

from .conftest import OpenAIServer, Reply


def _pipeline(server: OpenAIServer, corpus: Path, *, strict: bool = False, batch_size: int = 10, timeout: float = 5.0) -> Pipeline:
    config = PipelineConfig.from_dict(
        {
            "retriever": {"type": "bm25", "top_k": 4},
            "reranker": {"type": "llm", "top_n": 4, "batch_size": batch_size, "strict": strict},
            "llm": {"base_url": server.base_url, "model": "judge", "max_retries": 0, "timeout": timeout},
        },
        base_dir=corpus.parent,
    )
    pipeline = Pipeline.from_config(config)
    pipeline.ingest("corpus")
    return pipeline


def _retrieval_order(pipeline: Pipeline, text: str) -> list[str]:
    return [r.chunk_id for r in pipeline.retriever.retrieve(text, top_k=4)]


FAULTS = {
    "500": Reply(status=500, body={"error": {"message": "the model crashed", "type": "server_error"}}),
    "timeout": Reply(delay=1.5, body={"choices": []}),
    "malformed JSON": Reply(status=200, body='{"choices": [{"message": '),
    "no scores": None,  # a well-formed reply that scores nothing
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_failing_llm_reranker_keeps_the_retrieval_order_and_is_counted(
    openai_server: OpenAIServer, corpus: Path, fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    pipeline = _pipeline(openai_server, corpus, timeout=0.5)
    expected = _retrieval_order(pipeline, "warranty")
    assert len(expected) == 4
    reply = FAULTS[fault]
    if reply is None:
        openai_server.chat = lambda messages: "I cannot rate these passages."
    else:
        openai_server.script.append(reply)
    with caplog.at_level(logging.WARNING):
        results = pipeline.query("warranty")
    assert [r.chunk_id for r in results] == expected
    assert all(r.metadata["rerank_fallback"] is True for r in results)
    assert [r.score for r in results] == [r.metadata["retrieval_score"] for r in results]
    assert pipeline.stats()["rerank_failures"] == 1
    assert "keeping retrieval order" in caplog.text
    with pytest.raises(RerankError):
        strict = _pipeline(openai_server, corpus, strict=True, timeout=0.5)
        if reply is not None:
            openai_server.script.append(reply)
        strict.query("warranty")


def _scores_for(wanted: dict[str, float]) -> Any:
    """A model that scores only the passages whose text contains a key of ``wanted``."""

    def chat(messages: list[dict[str, Any]]) -> str:
        passages = re.findall(r"^\[(\d+)\] (.*)$", messages[-1]["content"], re.MULTILINE)
        return json.dumps({n: score for n, text in passages for key, score in wanted.items() if key in text})

    return chat


def test_partial_scores_keep_the_scored_and_fall_back_per_candidate(openai_server: OpenAIServer, corpus: Path) -> None:
    pipeline = _pipeline(openai_server, corpus, batch_size=2)
    candidates = pipeline.retriever.retrieve("warranty", top_k=4)
    first, middle, last = candidates[0], candidates[1:3], candidates[3]
    assert first.score > candidates[2].score
    # the model scores only the first retrieved candidate (0/10) and the last (10/10); the two between keep
    # their retrieval score, normalised onto 0-10, and sort among the scored ones
    openai_server.chat = _scores_for({first.text[:40]: 0, last.text[:40]: 10})
    results = pipeline.query("warranty")
    assert len(openai_server.requests) == 2  # two batches of two
    by_id = {r.chunk_id: r for r in results}
    assert by_id[last.chunk_id].score == 10.0 and by_id[first.chunk_id].score == 0.0
    assert results[-1].chunk_id == first.chunk_id
    assert results.index(by_id[last.chunk_id]) < results.index(by_id[middle[1].chunk_id])
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    assert {r.chunk_id for r in results if r.metadata.get("rerank_fallback")} == {c.chunk_id for c in middle}
    assert all(0.0 <= by_id[c.chunk_id].score <= 10.0 for c in middle)
    assert pipeline.stats()["rerank_failures"] == 1


def test_unscored_candidates_sort_by_their_normalised_retrieval_score() -> None:
    candidates = [
        Result(chunk_id=f"c{i}", document_id=f"d{i}", text=f"passage {i}", score=score, source="s")
        for i, score in enumerate([0.9, 0.5, 0.1])
    ]
    assert normalised_retrieval(candidates) == pytest.approx([10.0, 5.0, 0.0])
    seen: list[RerankError] = []
    # passage 2 scored 7 (above the middle candidate's normalised 5, below the first's 10)
    reranker = LLMReranker(LLMRerankerConfig(top_n=3, batch_size=10), generate=lambda prompt: '{"3": 7}', on_error=seen.append)
    out = reranker.rerank("q", candidates)
    assert [r.chunk_id for r in out] == ["c0", "c2", "c1"]
    assert [r.score for r in out] == pytest.approx([10.0, 7.0, 5.0])
    assert [bool(r.metadata.get("rerank_fallback")) for r in out] == [True, False, True]
    assert len(seen) == 1 and "scores 1 of 3" in str(seen[0]) and seen[0].raw_response == '{"3": 7}'
    with pytest.raises(RerankError, match="scores 1 of 3"):
        LLMReranker(LLMRerankerConfig(strict=True), generate=lambda prompt: '{"3": 7}').rerank("q", candidates)


def test_one_failed_batch_keeps_the_other_batches_scores() -> None:
    candidates = [Result(chunk_id=f"c{i}", document_id=f"d{i}", text=f"passage {i}", score=1 - i / 10, source="s") for i in range(4)]
    calls: list[str] = []

    def model(prompt: str) -> str:
        calls.append(prompt)
        if len(calls) == 1:
            raise TimeoutError("the model took too long")
        return '{"1": 10, "2": 9}'

    out = LLMReranker(LLMRerankerConfig(top_n=4, batch_size=2), generate=model).rerank("q", candidates)
    assert len(calls) == 2
    assert [r.chunk_id for r in out][:2] in (["c0", "c2"], ["c2", "c0"])  # c0 keeps 10 (its normalised retrieval), c2 scored 10
    assert {r.chunk_id for r in out if r.metadata.get("rerank_fallback")} == {"c0", "c1"}


def test_the_default_batch_size_is_ten() -> None:
    assert LLMRerankerConfig().batch_size == 10


def test_a_third_party_reranker_that_raises_falls_back_in_the_pipeline(corpus: Path, caplog: pytest.LogCaptureFixture) -> None:
    registry = Registry(make_plugin_manager(load_entry_points=False, extra_plugins=[faulty]))
    build = Pipeline.builder(registry=registry).base_dir(corpus.parent).retriever("bm25", top_k=5)
    pipeline = build.reranker("faulty", top_n=3).build()
    pipeline.ingest("corpus")
    expected = [r.chunk_id for r in pipeline.retriever.retrieve("warranty", top_k=5)][:3]
    with caplog.at_level(logging.WARNING, logger="ragloom.pipeline"):
        results = pipeline.query("warranty")
    assert [r.chunk_id for r in results] == expected and all(r.metadata["rerank_fallback"] for r in results)
    assert "reranker 'faulty' failed" in caplog.text and "KeyError" in caplog.text
    assert pipeline.reranker.calls == 1  # type: ignore[union-attr]
    assert pipeline.stats()["rerank_failures"] == 1
    # an answer that is not a list of Results is a failure too
    garbage = Pipeline.builder(registry=registry).retriever("bm25", top_k=5).reranker("faulty", mode="garbage").build()
    garbage.ingest(str(corpus))
    assert len(garbage.query("warranty")) == 3 and garbage.stats()["rerank_failures"] == 1
    # strict = true restores raising for a plugin that has no strict option of its own (the pipeline applies it)
    strict = Pipeline.builder(registry=registry).retriever("bm25", top_k=5).reranker("faulty", strict=True).build()
    strict.ingest(str(corpus))
    with pytest.raises(RerankError, match="KeyError") as info:
        strict.query("warranty")
    assert isinstance(info.value.__cause__, KeyError)
    toml = PipelineConfig.from_dict({"reranker": {"type": "faulty", "strict": True}}, registry=registry)
    assert toml.reranker is not None and toml.reranker.strict is True
    fine = Pipeline.builder(registry=registry).retriever("bm25", top_k=5).reranker("faulty", mode="fine").build()
    fine.ingest(str(corpus))
    assert len(fine.query("warranty")) == 3 and fine.stats()["rerank_failures"] == 0


def test_the_keyword_reranker_falls_back_through_the_same_helper(caplog: pytest.LogCaptureFixture) -> None:
    reranker = KeywordReranker(KeywordRerankerConfig(top_n=2))
    candidates = [Result(chunk_id=f"c{i}", document_id=f"d{i}", text=f"lamp {i}", score=1 - i / 10, source="s") for i in range(3)]

    def broken(text: str) -> set[str]:
        raise UnicodeError("a custom analyzer bug")

    reranker.analyzer.terms = broken  # type: ignore[method-assign]  # a fault injected into the real reranker
    with caplog.at_level(logging.WARNING, logger="ragloom.rerankers.keyword"):
        out = reranker.rerank("lamp", candidates)
    assert [r.chunk_id for r in out] == ["c0", "c1"] and all(r.metadata["rerank_fallback"] for r in out)
    assert "keyword reranker failed" in caplog.text
    strict = KeywordReranker(KeywordRerankerConfig(strict=True))
    strict.analyzer.terms = broken  # type: ignore[method-assign]
    with pytest.raises(RerankError, match="UnicodeError"):
        strict.rerank("lamp", candidates)
