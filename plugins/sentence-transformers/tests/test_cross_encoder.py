"""The cross-encoder reranker, with a tiny randomly initialised BERT cross-encoder built on disk.

The model is nonsense on purpose: the tests check the code path (the order
follows the model's own scores), not relevance.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import sentence_transformers as st
import torch
import transformers

from ragloom import BuildContext, Pipeline, Registry, RerankError, Result
from ragloom.rerankers.base import Reranker
from ragloom_sentence_transformers import CrossEncoderReranker

pytestmark = pytest.mark.models

WORDS = "the lamp light wifi network warranty refund dims sunset battery app colour bright night mode red blue and at is for setup".split()
PASSAGES = [
    "the lamp dims at sunset",
    "warranty and refund",
    "wifi network setup for the app",
    "night mode is red",
    "battery and colour",
    "bright blue light",
]


def tiny_cross_encoder(path: Path, *, num_labels: int = 1) -> Path:
    """Save a 2-layer, hidden-32 BERT sequence classifier and a tokenizer over ``WORDS`` to ``path``."""
    path.mkdir(parents=True)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    tokenizer = transformers.BertTokenizerFast(vocab={token: i for i, token in enumerate(tokens)})
    torch.manual_seed(7)
    config = transformers.BertConfig(
        vocab_size=len(WORDS) + 5,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=num_labels,
        initializer_range=0.2,
    )
    transformers.BertForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_cross_encoder(tmp_path_factory.mktemp("ce") / "tiny")


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry()


@pytest.fixture(scope="module")
def reranker(model_dir: Path, registry: Registry) -> CrossEncoderReranker:
    return BuildContext(registry=registry).build("reranker", "cross-encoder", {"model": str(model_dir), "top_n": 3, "device": "cpu"})


def results_for(texts: list[str]) -> list[Result]:
    return [
        Result(chunk_id=f"d{i}:0", document_id=f"d{i}", text=text, score=1.0 - i / 10, source=f"doc{i}.md", span=(0, len(text)))
        for i, text in enumerate(texts)
    ]


def direct_scores(model_dir: Path, query: str, texts: list[str]) -> np.ndarray:
    model = st.CrossEncoder(str(model_dir), local_files_only=True, device="cpu")
    return np.asarray(model.predict([(query, t) for t in texts]), dtype=np.float64)


def test_order_follows_the_models_own_scores(reranker: CrossEncoderReranker, model_dir: Path) -> None:
    assert isinstance(reranker, Reranker)
    query = "lamp light at night"
    candidates = results_for(PASSAGES)
    expected = direct_scores(model_dir, query, PASSAGES)
    assert len(set(np.round(expected, 6))) == len(PASSAGES), "the tiny model should tell the passages apart"
    ranked = reranker.rerank(query, candidates)
    best_first = list(np.argsort(-expected, kind="stable"))
    assert [r.chunk_id for r in ranked] == [f"d{i}:0" for i in best_first[:3]]
    for result in ranked:
        i = int(result.document_id[1:])
        assert result.score == pytest.approx(expected[i], abs=1e-5)
        assert result.metadata["retrieval_score"] == candidates[i].score
        assert (result.text, result.source, result.span) == (candidates[i].text, candidates[i].source, candidates[i].span)
    everything = reranker.rerank(query, candidates, top_n=10)
    assert [r.chunk_id for r in everything] == [f"d{i}:0" for i in best_first]
    assert [r.score for r in everything] == sorted((r.score for r in everything), reverse=True)


def test_batch_size_does_not_change_scores(model_dir: Path, registry: Registry, reranker: CrossEncoderReranker) -> None:
    one_at_a_time = BuildContext(registry=registry).build("reranker", "cross-encoder", {"model": str(model_dir), "batch_size": 1})
    query = "warranty refund"
    np.testing.assert_allclose(one_at_a_time.scores(query, PASSAGES), reranker.scores(query, PASSAGES), atol=1e-5)


def test_equal_scores_keep_retrieval_order_and_empty_input_is_empty(reranker: CrossEncoderReranker) -> None:
    same = results_for(["bright blue light"] * 4)
    assert [r.chunk_id for r in reranker.rerank("lamp", same, top_n=4)] == [r.chunk_id for r in same]
    assert reranker.rerank("lamp", []) == []


def test_a_model_with_several_labels_is_a_rerank_error(tmp_path: Path, registry: Registry) -> None:
    path = tiny_cross_encoder(tmp_path / "three", num_labels=3)
    three = BuildContext(registry=registry).build("reranker", "cross-encoder", {"model": str(path), "strict": True})
    with pytest.raises(RerankError, match="one score per passage"):
        three.rerank("lamp", results_for(PASSAGES[:2]))


def test_a_failing_model_keeps_the_retrieval_order_unless_strict(tmp_path: Path, registry: Registry, caplog: pytest.LogCaptureFixture) -> None:
    path = tiny_cross_encoder(tmp_path / "three", num_labels=3)
    three = BuildContext(registry=registry).build("reranker", "cross-encoder", {"model": str(path)})
    candidates = results_for(PASSAGES[:3])
    with caplog.at_level("WARNING"):
        out = three.rerank("lamp", candidates, top_n=2)
    assert [r.chunk_id for r in out] == [r.chunk_id for r in candidates[:2]]
    assert all(r.metadata["rerank_fallback"] is True for r in out)
    assert "one score per passage" in caplog.text


def test_in_a_pipeline_the_reranker_returns_top_n_of_the_retrieved(model_dir: Path, registry: Registry, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, text in enumerate(PASSAGES):
        (docs / f"p{i}.txt").write_text(text)
    pipeline = (
        Pipeline.builder(registry=registry)
        .embedder("hash", dim=64)
        .retriever("similarity", top_k=5)
        .reranker("cross-encoder", model=str(model_dir), top_n=2)
        .build()
    )
    pipeline.ingest(docs)
    retrieved = pipeline.retriever.retrieve("the lamp light")
    hits = pipeline.query("the lamp light")
    assert len(hits) == 2
    expected = direct_scores(model_dir, "the lamp light", [r.text for r in retrieved])
    assert [h.chunk_id for h in hits] == [retrieved[i].chunk_id for i in np.argsort(-expected, kind="stable")[:2]]
    assert {h.metadata["retrieval_score"] for h in hits} <= {r.score for r in retrieved}
    assert len(pipeline.query("the lamp light", top_n=4)) == 4


def test_a_cpu_cross_encoder_puts_numpy_blas_at_one_thread(model_dir: Path, two_blas_threads: None, numpy_blas_threads: Callable[[], int]) -> None:
    BuildContext(registry=Registry()).build("reranker", "cross-encoder", {"model": str(model_dir), "device": "cpu", "blas_threads": None})
    assert numpy_blas_threads() == 2  # None leaves numpy alone
    BuildContext(registry=Registry()).build("reranker", "cross-encoder", {"model": str(model_dir), "device": "cpu"})
    assert numpy_blas_threads() == 1
