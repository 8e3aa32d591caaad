"""The cohere embedder against a local server speaking Cohere's v2 embed format."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from cohere_server import API_KEY, CohereServer, Fault

from ragloom import BuildContext, EmbeddingError, Pipeline, Registry
from ragloom.embedders.base import Embedder
from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom_cohere import CohereEmbedConfig, CohereEmbedder

CORPUS = Path(__file__).resolve().parents[3] / "examples" / "quickstart" / "corpus"
REGISTRY = Registry()
DIM = 64


@pytest.fixture(scope="module")
def server() -> Iterator[CohereServer]:
    with CohereServer(dim=DIM) as running:
        yield running


@pytest.fixture(autouse=True)
def fresh(server: CohereServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.received.clear()
    server.faults.clear()
    monkeypatch.setenv("COHERE_API_KEY", API_KEY)


def make(server: CohereServer, **options: object) -> CohereEmbedder:
    defaults = {"base_url": server.base_url, "backoff": 0.01, "timeout": 5.0, "model": "embed-test", "dim": DIM}
    return BuildContext(registry=REGISTRY).build("embedder", "cohere", {**defaults, **options})


def reference(texts: list[str], dim: int = DIM) -> np.ndarray:
    """What the server computes for ``texts``."""
    return HashEmbedder(HashEmbedderConfig(dim=dim)).embed_documents(texts)


def test_documents_and_queries_use_their_input_types(server: CohereServer) -> None:
    embedder = make(server)
    assert isinstance(embedder, Embedder)
    texts = ["The lamp dims at sunset.", "Refunds within 30 days."]
    vectors = embedder.embed_documents(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (2, DIM)
    np.testing.assert_allclose(vectors, reference(texts), atol=1e-6)
    query = embedder.embed_query("when does it dim")
    assert query.dtype == np.float32 and query.shape == (DIM,)
    np.testing.assert_allclose(query, reference(["when does it dim"])[0], atol=1e-6)
    documents, queries = server.received
    assert documents.path == queries.path == "/v2/embed"
    assert documents.headers["authorization"] == f"Bearer {API_KEY}"
    assert documents.body == {"model": "embed-test", "texts": texts, "input_type": "search_document", "embedding_types": ["float"]}
    assert queries.body == {"model": "embed-test", "texts": ["when does it dim"], "input_type": "search_query", "embedding_types": ["float"]}
    assert embedder.embed_documents([]).shape == (0, DIM)
    assert len(server.received) == 2


def test_at_most_96_texts_per_call_rows_in_order(server: CohereServer) -> None:
    texts = [f"passage number {i} about topic {i % 7}" for i in range(200)]
    vectors = make(server).embed_documents(texts)
    assert [len(b["texts"]) for b in server.bodies("/v2/embed")] == [96, 96, 8]
    np.testing.assert_allclose(vectors, reference(texts), atol=1e-6)
    server.received.clear()
    make(server, batch_size=10).embed_documents(texts[:25])
    assert [len(b["texts"]) for b in server.bodies("/v2/embed")] == [10, 10, 5]


def test_output_dimension_and_truncate_are_sent_and_part_of_the_model_id(server: CohereServer) -> None:
    embedder = make(server, model="embed-v4.0", dim=None, output_dimension=32, truncate="END")
    assert embedder.dim == 32
    assert embedder.model_id == "cohere:embed-v4.0:output_dimension=32:truncate=END"
    assert embedder.embed_query("lamp").shape == (32,)
    (body,) = server.bodies("/v2/embed")
    assert body["output_dimension"] == 32 and body["truncate"] == "END"


def test_a_wrong_dimension_is_an_embedding_error_naming_both(server: CohereServer) -> None:
    with pytest.raises(EmbeddingError, match=f"dimension {DIM}, expected 32"):
        make(server, dim=32).embed_documents(["lamp"])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("not json at all", "malformed JSON"),
        ({"embeddings": {"int8": [[1, 2]]}}, "no 'embeddings.float' list"),
        ({"embeddings": {"float": [[0.1] * DIM]}}, "1 embeddings came back for 2 texts"),
        ({"embeddings": {"float": [[0.1] * DIM, [0.1] * 3]}}, "not a numeric matrix"),
        ({"embeddings": {"float": [0.1, 0.2]}}, r"has shape \(2,\), expected \(2, 64\)"),
        ({"embeddings": {"float": [["a"] * DIM, [0.1] * DIM]}}, "not a numeric matrix"),
        ({"embeddings": {"float": [[float("nan")] * DIM, [0.1] * DIM]}}, "NaN"),
    ],
)
def test_malformed_answers_are_embedding_errors(server: CohereServer, body: object, message: str) -> None:
    server.fail_next(Fault(200, body))
    with pytest.raises(EmbeddingError, match=message):
        make(server).embed_documents(["a", "b"])


@pytest.mark.parametrize(("status", "retried"), [(400, False), (401, False), (429, True), (500, True), (503, True)])
def test_http_errors_carry_status_and_cohere_message(server: CohereServer, status: int, retried: bool) -> None:
    server.fail_next(*[Fault(status, {"id": "e", "message": f"cohere says {status}"})] * 2)
    with pytest.raises(EmbeddingError, match=f"cohere says {status}") as info:
        make(server, max_retries=1).embed_query("lamp")
    assert info.value.status_code == status
    assert len(server.received) == (2 if retried else 1)


def test_a_retry_after_a_503_succeeds(server: CohereServer) -> None:
    server.fail_next(Fault(503, {"message": "overloaded"}, headers={"Retry-After": "0"}))
    np.testing.assert_allclose(make(server).embed_query("lamp"), reference(["lamp"])[0], atol=1e-6)
    assert len(server.received) == 2


def test_a_timeout_is_an_embedding_error(server: CohereServer) -> None:
    server.fail_next(Fault(200, {"embeddings": {"float": []}}, delay=1.5))
    with pytest.raises(EmbeddingError, match="timed out") as info:
        make(server, timeout=0.2, max_retries=0).embed_query("lamp")
    assert info.value.status_code is None


def test_an_injected_client_is_used(server: CohereServer) -> None:
    seen: list[str] = []
    with httpx.Client(event_hooks={"request": [lambda request: seen.append(request.headers["x-client-name"])]}) as client:
        embedder = CohereEmbedder(CohereEmbedConfig(base_url=server.base_url, model="embed-english-light-v3.0", output_dimension=16), client=client)
        assert embedder.embed_documents(["a", "b"]).shape == (2, 16)
    assert seen == ["ragloom"]


def test_ingest_and_query_through_a_pipeline(server: CohereServer, tmp_path: Path) -> None:
    shutil.copytree(CORPUS, tmp_path / "corpus")
    pipeline = (
        Pipeline.builder()
        .embedder("cohere", base_url=server.base_url, model="embed-english-v3.0", dim=DIM, output_dimension=DIM)
        .chunker("recursive", size=600)
        .retriever("similarity", top_k=3)
        .build()
    )
    result = pipeline.ingest(tmp_path / "corpus")
    assert result.embedded > 0
    document_calls = [b for b in server.bodies("/v2/embed") if b["input_type"] == "search_document"]
    assert sum(len(b["texts"]) for b in document_calls) == result.embedded
    assert all(len(b["texts"]) <= 96 for b in document_calls)
    hits = pipeline.query("wifi network setup")
    assert Path(hits[0].source).name == "wifi-setup.md"
    assert server.bodies("/v2/embed")[-1] == {
        "model": "embed-english-v3.0",
        "texts": ["wifi network setup"],
        "input_type": "search_query",
        "embedding_types": ["float"],
        "output_dimension": DIM,
    }
    assert pipeline.ingest(tmp_path / "corpus").embedded == 0
