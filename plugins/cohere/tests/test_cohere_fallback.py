"""The cohere reranker in a pipeline, against a local Cohere-speaking server that fails: the query never fails.

500, a timeout, malformed JSON and a partial answer each keep the retrieval order
(the partial answer: the scored candidates first), are counted in
``pipeline.stats()["rerank_failures"]``, and raise with ``strict = true``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from cohere_server import API_KEY, CohereServer, Fault

from ragloom import Pipeline, RerankError

CORPUS = Path(__file__).resolve().parents[3] / "examples" / "quickstart" / "corpus"
QUERY = "how long is the warranty"


@pytest.fixture(scope="module")
def server() -> Iterator[CohereServer]:
    with CohereServer() as running:
        yield running


@pytest.fixture(autouse=True)
def fresh(server: CohereServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.received.clear()
    server.faults.clear()
    monkeypatch.setenv("COHERE_API_KEY", API_KEY)


def _pipeline(server: CohereServer, tmp_path: Path, *, strict: bool = False) -> Pipeline:
    if not (tmp_path / "corpus").exists():
        shutil.copytree(CORPUS, tmp_path / "corpus")
    pipeline = (
        Pipeline.builder()
        .base_dir(tmp_path)
        .embedder("hash", dim=64)
        .retriever("similarity", top_k=6)
        .reranker("cohere", base_url=server.base_url, top_n=3, max_retries=0, timeout=0.3, strict=strict)
        .build()
    )
    pipeline.ingest("corpus")
    return pipeline


FAULTS = {
    "500": Fault(500, {"message": "internal failure"}),
    "timeout": Fault(200, {"results": []}, delay=1.0),
    "malformed JSON": Fault(200, '{"results": [{"index": 0, '),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_failing_cohere_call_keeps_the_retrieval_order(server: CohereServer, tmp_path: Path, fault: str) -> None:
    pipeline = _pipeline(server, tmp_path)
    retrieved = [r.chunk_id for r in pipeline.retriever.retrieve(QUERY)]
    server.fail_next(FAULTS[fault])
    hits = pipeline.query(QUERY)
    assert [h.chunk_id for h in hits] == retrieved[:3]
    assert all(h.metadata["rerank_fallback"] is True for h in hits)
    assert pipeline.stats()["rerank_failures"] == 1
    assert len(pipeline.query(QUERY)) == 3 and pipeline.stats()["rerank_failures"] == 1  # the server is fine again
    strict = _pipeline(server, tmp_path, strict=True)
    server.fail_next(FAULTS[fault])
    with pytest.raises(RerankError):
        strict.query(QUERY)


def test_a_partial_answer_keeps_the_scored_first_and_the_rest_in_retrieval_order(server: CohereServer, tmp_path: Path) -> None:
    pipeline = _pipeline(server, tmp_path)
    retrieved = [r.chunk_id for r in pipeline.retriever.retrieve(QUERY)]
    server.fail_next(Fault(200, {"results": [{"index": 4, "relevance_score": 0.9}]}))  # one result where three were asked
    hits = pipeline.query(QUERY)
    assert [h.chunk_id for h in hits] == [retrieved[4], retrieved[0], retrieved[1]]
    assert hits[0].score == 0.9 and "rerank_fallback" not in hits[0].metadata
    assert all(h.metadata["rerank_fallback"] is True and h.score == 0.9 for h in hits[1:])
    assert pipeline.stats()["rerank_failures"] == 1
