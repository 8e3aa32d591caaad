"""The cohere reranker against a local server speaking Cohere's v2 rerank format."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cohere_server import API_KEY, CohereServer, Fault, relevance
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as strategies

from ragloom import BuildContext, Pipeline, Registry, RerankError, Result
from ragloom.rerankers.base import Reranker
from ragloom_cohere import CohereRerankConfig, CohereReranker

CORPUS = Path(__file__).resolve().parents[3] / "examples" / "quickstart" / "corpus"
PASSAGES = [
    "The lamp dims itself at sunset.",
    "Refunds are paid within 30 days of the return.",
    "Connect the lamp to wifi with the mobile app.",
    "Night mode switches the lamp to a warm red light.",
    "The battery lasts ten hours.",
    "Set a sunset schedule for the lamp in the app.",
    "Shipping is free over 50 euros.",
    "Warm light at night helps you sleep.",
]


@pytest.fixture(scope="module")
def server() -> Iterator[CohereServer]:
    with CohereServer() as running:
        yield running


@pytest.fixture(autouse=True)
def fresh(server: CohereServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.received.clear()
    server.faults.clear()
    server.max_documents = 1000
    monkeypatch.setenv("COHERE_API_KEY", API_KEY)


REGISTRY = Registry()


def make(server: CohereServer, **options: object) -> CohereReranker:
    defaults = {"base_url": server.base_url, "backoff": 0.01, "timeout": 5.0}
    return BuildContext(registry=REGISTRY).build("reranker", "cohere", {**defaults, **options})


def candidates(texts: list[str] = PASSAGES) -> list[Result]:
    return [
        Result(chunk_id=f"d{i}:0", document_id=f"d{i}", text=t, score=round(1 - i / 20, 3), source=f"/docs/{i}.md", span=(0, len(t)))
        for i, t in enumerate(texts)
    ]


def expected_order(query: str, texts: list[str]) -> list[int]:
    return sorted(range(len(texts)), key=lambda i: (-relevance(query, texts[i]), i))


def test_request_and_answer_on_the_wire(server: CohereServer) -> None:
    reranker = make(server, top_n=3, max_tokens_per_doc=512)
    assert isinstance(reranker, Reranker)
    query = "warm red light at night"
    ranked = reranker.rerank(query, candidates())
    (request,) = server.received
    assert request.path == "/v2/rerank"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.body == {"model": "rerank-v3.5", "query": query, "documents": PASSAGES, "top_n": 3, "max_tokens_per_doc": 512}
    order = expected_order(query, PASSAGES)[:3]
    assert [r.chunk_id for r in ranked] == [f"d{i}:0" for i in order]
    for result, i in zip(ranked, order, strict=True):
        assert result.score == relevance(query, PASSAGES[i])
        assert result.metadata["retrieval_score"] == candidates()[i].score
        assert "rerank_fallback" not in result.metadata
        assert (result.text, result.source, result.span) == (PASSAGES[i], f"/docs/{i}.md", (0, len(PASSAGES[i])))


def test_top_n_per_call_and_clamped_to_the_candidates(server: CohereServer) -> None:
    reranker = make(server, model="rerank-english-v3.0")
    assert len(reranker.rerank("lamp", candidates(), top_n=2)) == 2
    assert len(reranker.rerank("lamp", candidates(PASSAGES[:3]), top_n=10)) == 3
    assert reranker.rerank("lamp", []) == []
    bodies = server.bodies("/v2/rerank")
    assert [b["top_n"] for b in bodies] == [2, 3]
    assert all(b["model"] == "rerank-english-v3.0" and "max_tokens_per_doc" not in b for b in bodies)


def test_many_candidates_are_sent_in_batches_and_merged(server: CohereServer) -> None:
    server.max_documents = 3  # the server refuses more than 3 documents per call
    reranker = make(server, max_documents_per_call=3, top_n=4)
    query = "lamp sunset app"
    ranked = reranker.rerank(query, candidates())
    assert [len(b["documents"]) for b in server.bodies("/v2/rerank")] == [3, 3, 2]
    assert [b["top_n"] for b in server.bodies("/v2/rerank")] == [3, 3, 2]
    assert [r.chunk_id for r in ranked] == [f"d{i}:0" for i in expected_order(query, PASSAGES)[:4]]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=strategies.lists(strategies.sampled_from(PASSAGES + ["lamp", "red red light", "app"]), min_size=1, max_size=12),
    per_call=strategies.integers(1, 5),
    top_n=strategies.integers(1, 14),
    query=strategies.sampled_from(["lamp", "warm light", "sunset app lamp", "refund shipping"]),
)
def test_batched_merge_equals_one_big_call(server: CohereServer, texts: list[str], per_call: int, top_n: int, query: str) -> None:
    with httpx.Client() as client:
        reranker = CohereReranker(CohereRerankConfig(base_url=server.base_url, max_documents_per_call=per_call), client=client)
        ranked = reranker.rerank(query, candidates(texts), top_n=top_n)
    assert [r.chunk_id for r in ranked] == [f"d{i}:0" for i in expected_order(query, texts)[:top_n]]


@pytest.mark.parametrize(
    ("status", "message"),
    [(400, "invalid request: query must be a non-empty string"), (401, "invalid api token"), (404, "model not found")],
)
def test_client_errors_are_raised_at_once_with_cohere_message(server: CohereServer, status: int, message: str) -> None:
    server.fail_next(Fault(status, {"id": "x", "message": message}))
    with pytest.raises(RerankError) as info:
        make(server, strict=True, max_retries=3).rerank("lamp", candidates())
    assert info.value.status_code == status
    assert message in str(info.value) and f"HTTP {status}" in str(info.value)
    assert len(server.received) == 1


def test_a_wrong_key_is_refused_by_the_server(server: CohereServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTHER_KEY", "wrong")
    with pytest.raises(RerankError, match="invalid api token") as info:
        make(server, strict=True, api_key={"env": "OTHER_KEY"}).rerank("lamp", candidates())
    assert info.value.status_code == 401
    assert server.received[0].headers["authorization"] == "Bearer wrong"


def test_429_is_retried_after_the_retry_after_delay(server: CohereServer) -> None:
    server.fail_next(Fault(429, {"message": "too many requests"}, headers={"Retry-After": "1"}))
    ranked = make(server, strict=True, backoff=0.001).rerank("lamp sunset", candidates(), top_n=2)
    assert len(ranked) == 2
    first, second = server.received
    assert second.at - first.at >= 0.9  # the server asked for one second; backoff alone would be 1 ms
    assert first.body == second.body


def test_5xx_is_retried_then_reported_with_status(server: CohereServer) -> None:
    server.fail_next(Fault(503, {"message": "overloaded"}))
    assert len(make(server, strict=True).rerank("lamp", candidates(), top_n=2)) == 2
    assert len(server.received) == 2
    server.received.clear()
    server.fail_next(*[Fault(500, {"message": "internal failure 42"})] * 3)
    with pytest.raises(RerankError, match="internal failure 42") as info:
        make(server, strict=True, max_retries=2).rerank("lamp", candidates())
    assert info.value.status_code == 500
    assert "after 3 attempts" in str(info.value)
    assert len(server.received) == 3


def test_a_timeout_is_a_rerank_error(server: CohereServer) -> None:
    server.fail_next(Fault(200, {"results": []}, delay=1.5))
    with pytest.raises(RerankError, match="timed out") as info:
        make(server, strict=True, timeout=0.2, max_retries=0).rerank("lamp", candidates())
    assert info.value.status_code is None
    assert isinstance(info.value.__cause__, httpx.TimeoutException)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("<html>gateway</html>", "malformed JSON"),
        ({"id": "r", "result": []}, "no 'results' list"),
        ({"results": [{"index": 99, "relevance_score": 0.5}]}, "no valid 'index'"),
        ({"results": [{"index": 0, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4}]}, "no valid 'index'"),
        ({"results": [{"index": 1, "relevance_score": "high"}]}, "no numeric 'relevance_score'"),
    ],
)
def test_malformed_answers_are_rerank_errors_with_the_raw_answer(server: CohereServer, body: object, message: str) -> None:
    server.fail_next(Fault(200, body))
    with pytest.raises(RerankError, match=message) as info:
        make(server, strict=True).rerank("lamp", candidates())
    if isinstance(body, dict):
        assert info.value.raw_response is not None and str(next(iter(body))) in info.value.raw_response


def test_without_strict_a_failure_keeps_retrieval_order_warns_and_calls_on_error(
    server: CohereServer, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[RerankError] = []
    config = CohereRerankConfig(base_url=server.base_url, max_retries=0, top_n=3, on_error=seen.append)
    reranker = CohereReranker(config)
    server.fail_next(Fault(500, {"message": "boom"}))
    with caplog.at_level(logging.WARNING, logger="ragloom_cohere"):
        kept = reranker.rerank("warm light", candidates())
    assert [r.chunk_id for r in kept] == ["d0:0", "d1:0", "d2:0"]
    assert [r.score for r in kept] == [c.score for c in candidates()[:3]]
    assert all(r.metadata["retrieval_score"] == r.score and r.metadata["rerank_fallback"] is True for r in kept)
    assert len(seen) == 1 and seen[0].status_code == 500 and "boom" in str(seen[0])
    assert any("keeping retrieval order" in r.getMessage() and "boom" in r.getMessage() for r in caplog.records)
    server.fail_next(Fault(200, {"nothing": True}))
    assert [r.chunk_id for r in reranker.rerank("warm light", candidates(), top_n=2)] == ["d0:0", "d1:0"]
    assert len(seen) == 2 and seen[1].raw_response == '{"nothing": true}'


def test_an_injected_client_is_used(server: CohereServer) -> None:
    calls: list[str] = []
    client = httpx.Client(event_hooks={"request": [lambda request: calls.append(str(request.url))]})
    reranker = CohereReranker(CohereRerankConfig(base_url=server.base_url + "/"), client=client)
    assert len(reranker.rerank("lamp", candidates(), top_n=1)) == 1
    assert calls == [f"{server.base_url}/v2/rerank"]
    reranker.close()
    assert not client.is_closed  # the caller's client stays the caller's
    client.close()


def test_in_a_toml_pipeline(server: CohereServer, tmp_path: Path) -> None:
    shutil.copytree(CORPUS, tmp_path / "corpus")
    (tmp_path / "rag.toml").write_text(
        f"""
[embedder]
type = "hash"

[retriever]
type = "similarity"
top_k = 8

[reranker]
type = "cohere"
base_url = "{server.base_url}"
top_n = 3
api_key = {{ env = "COHERE_API_KEY" }}
"""
    )
    with Pipeline.from_toml(tmp_path / "rag.toml") as pipeline:
        pipeline.ingest(tmp_path / "corpus")
        query = "how long is the warranty"
        retrieved = pipeline.retriever.retrieve(query)
        hits = pipeline.query(query)
    (body,) = server.bodies("/v2/rerank")
    assert body["documents"] == [r.text for r in retrieved] and body["top_n"] == 3
    assert [h.chunk_id for h in hits] == [retrieved[i].chunk_id for i in expected_order(query, body["documents"])[:3]]


def test_aquery_reranks_through_the_async_client(server: CohereServer, tmp_path: Path) -> None:
    import asyncio

    def refuse(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"blocking client used for {request.url}")

    config = CohereRerankConfig(base_url=server.base_url, top_n=3, backoff=0.01, timeout=5.0)
    reranker = CohereReranker(config, client=httpx.Client(transport=httpx.MockTransport(refuse)))  # a fault, if it is used
    shutil.copytree(CORPUS, tmp_path / "corpus")
    pipeline = Pipeline.builder().base_dir(tmp_path).embedder("hash", dim=64).reranker(reranker).build()
    pipeline.ingest(tmp_path / "corpus")

    async def run() -> list[list[Result]]:
        found = await asyncio.gather(*(pipeline.aquery(q) for q in ["lamp at night", "refund", "battery"]))
        await pipeline.aclose()
        return list(found)

    found = asyncio.run(run())
    assert [len(rs) for rs in found] == [3, 3, 3]
    assert len(server.bodies("/v2/rerank")) == 3
    for results in found:
        assert all("rerank_fallback" not in r.metadata for r in results)
        assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
