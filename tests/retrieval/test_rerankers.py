"""The keyword and llm rerankers: ordering, top_n, fallbacks, strict mode, on_error."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from ragloom import Pipeline
from ragloom.config import PipelineConfig
from ragloom.errors import ConfigError, LLMError, RerankError
from ragloom.rerankers.keyword import KeywordReranker, KeywordRerankerConfig
from ragloom.rerankers.llm import LLMReranker, LLMRerankerConfig, parse_scores
from ragloom.types import Result

from .conftest import OpenAIServer


def _results(*texts: str) -> list[Result]:
    return [
        Result(chunk_id=f"d{i}:0", document_id=f"d{i}", text=t, score=1.0 - i * 0.1, source=f"/d{i}", metadata={"n": i})
        for i, t in enumerate(texts)
    ]


CANDIDATES = _results(
    "shipping is free in the EU",
    "the lamp warranty covers two years",
    "warranty claims need the receipt and the lamp serial number",
    "colour modes and brightness",
)


# ---------------------------------------------------------------------- keyword


def test_keyword_reranker_blends_coverage_and_retrieval() -> None:
    reranker = KeywordReranker(KeywordRerankerConfig(top_n=3, weight=0.7))
    out = reranker.rerank("lamp warranty claim", CANDIDATES)
    assert [r.chunk_id for r in out] == ["d2:0", "d1:0", "d0:0"]
    assert out[0].metadata["keyword_coverage"] == pytest.approx(1.0)
    assert out[1].metadata["keyword_coverage"] == pytest.approx(2 / 3)
    assert out[0].metadata["retrieval_score"] == pytest.approx(0.8) and out[0].metadata["n"] == 2
    # retrieval normalised to [0, 1]: d2 is 1/3 of the way up from the lowest
    assert out[0].score == pytest.approx(0.7 * 1.0 + 0.3 * (0.8 - 0.7) / 0.3)
    assert len(reranker.rerank("lamp", CANDIDATES, top_n=1)) == 1


def test_keyword_reranker_weight_zero_keeps_retrieval_order() -> None:
    out = KeywordReranker(KeywordRerankerConfig(top_n=4, weight=0.0)).rerank("colour", CANDIDATES)
    assert [r.chunk_id for r in out] == [r.chunk_id for r in CANDIDATES]
    assert KeywordReranker().rerank("x", []) == []


# ---------------------------------------------------------------------- llm


def _judge(prompt: str) -> str:
    """Scores passages by how many times they mention 'warranty' (a deterministic stand-in model)."""
    passages = re.findall(r"^\[(\d+)\] (.*)$", prompt, re.MULTILINE)
    return "Here you go:\n" + json.dumps({n: 3 * text.count("warranty") + ("receipt" in text) for n, text in passages})


def test_llm_reranker_scores_in_batches() -> None:
    prompts: list[str] = []

    def model(prompt: str) -> str:
        prompts.append(prompt)
        return _judge(prompt)

    reranker = LLMReranker(LLMRerankerConfig(top_n=3, batch_size=3), generate=model)
    out = reranker.rerank("warranty?", CANDIDATES)
    assert len(prompts) == 2 and "Query: warranty?" in prompts[0]
    assert [r.chunk_id for r in out] == ["d2:0", "d1:0", "d0:0"]
    assert [r.score for r in out] == [4.0, 3.0, 0.0]
    assert out[0].metadata["retrieval_score"] == pytest.approx(0.8)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"1": 7, "2": 0}', [7.0, 0.0]),
        ('```json\n{"passage 1": {"score": 4}, "passage 2": 12}\n```', [4.0, 10.0]),
        ("[3, 9.5]", [3.0, 9.5]),
        ("1: 8\n2 - 2", [8.0, 2.0]),
        ('{"1": 5}', None),
        ("I cannot rank these.", None),
        ('{"1": "high", "2": 1}', None),
    ],
)
def test_parse_scores(answer: str, expected: list[float] | None) -> None:
    assert parse_scores(answer, 2) == expected


def test_unusable_answer_keeps_retrieval_order_and_reports(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[RerankError] = []
    reranker = LLMReranker(LLMRerankerConfig(top_n=2), generate=lambda p: "Passage two looks best.", on_error=seen.append)
    with caplog.at_level(logging.WARNING, logger="ragloom.rerankers.llm"):
        out = reranker.rerank("q", CANDIDATES)
    assert [r.chunk_id for r in out] == ["d0:0", "d1:0"]
    assert [r.score for r in out] == pytest.approx([1.0, 0.9])
    assert out[0].metadata["rerank_fallback"] is True
    assert len(seen) == 1 and seen[0].raw_response == "Passage two looks best."
    assert "keeping retrieval order" in caplog.text


def test_failed_call_falls_back_and_strict_raises() -> None:
    cause = LLMError("HTTP 503", status_code=503)

    def down(prompt: str) -> str:
        raise cause

    seen: list[RerankError] = []
    out = LLMReranker(LLMRerankerConfig(top_n=4), generate=down, on_error=seen.append).rerank("q", CANDIDATES)
    assert [r.chunk_id for r in out] == [r.chunk_id for r in CANDIDATES]
    assert seen[0].__cause__ is cause and seen[0].raw_response is None
    with pytest.raises(RerankError) as info:
        LLMReranker(LLMRerankerConfig(strict=True), generate=down).rerank("q", CANDIDATES)
    assert info.value.__cause__ is cause
    with pytest.raises(RerankError) as info:
        LLMReranker(LLMRerankerConfig(strict=True), generate=lambda p: "no idea").rerank("q", CANDIDATES)
    assert info.value.raw_response == "no idea"


def test_llm_reranker_config() -> None:
    with pytest.raises(ConfigError, match="passages"):
        PipelineConfig.from_dict({"reranker": {"type": "llm", "prompt": "rate {query}"}})
    with pytest.raises(ConfigError, match="LLM"):
        Pipeline.builder().reranker("llm").build()


def test_pipeline_reranks_with_the_configured_llm_over_http(openai_server: OpenAIServer, corpus: Path) -> None:
    openai_server.chat = lambda messages: _judge(messages[-1]["content"])
    config = PipelineConfig.from_dict(
        {
            "retriever": {"type": "bm25", "top_k": 6},
            "reranker": {"type": "llm", "top_n": 2, "batch_size": 4},
            "llm": {"base_url": openai_server.base_url, "model": "judge", "max_retries": 0},
        },
        base_dir=corpus.parent,
    )
    with Pipeline.from_config(config) as pipeline:
        pipeline.ingest("corpus")
        results = pipeline.query("warranty")
        assert len(results) == 2 and len(openai_server.requests) == 2
        assert all("warranty" in r.text for r in results) and results[0].score >= results[1].score
        assert all("retrieval_score" in r.metadata for r in results)
        assert len(pipeline.query("warranty", top_n=1)) == 1


def test_keyword_reranker_in_a_pipeline(corpus: Path) -> None:
    pipeline = Pipeline.builder().base_dir(corpus.parent).retriever("similarity", top_k=8).reranker("keyword", top_n=3, weight=0.8).build()
    pipeline.ingest("corpus")
    results = pipeline.query("return shipping label")
    assert len(results) == 3 and all("keyword_coverage" in r.metadata for r in results)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
