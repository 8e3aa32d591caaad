"""post_json, the LLM client and the openai embedder against a real local OpenAI-compatible server."""

from __future__ import annotations

import email.utils
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest

from ragloom import Pipeline
from ragloom.config import PipelineConfig, Secret
from ragloom.embedders.openai import OpenAIEmbedder, OpenAIEmbedderConfig
from ragloom.errors import ConfigError, EmbeddingError, LLMError
from ragloom.httpclient import parse_retry_after, post_json
from ragloom.llm import LLMClient, LLMConfig, as_generate, build_llm

from .conftest import OpenAIServer, Reply, text_vector


def test_post_json_retries_429_honouring_retry_after(openai_server: OpenAIServer) -> None:
    openai_server.script = [
        Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "2"}),
        Reply(status=503, body="upstream busy", headers={"content-type": "text/plain"}),
    ]
    slept: list[float] = []
    with httpx.Client() as client:
        answer = post_json(
            client, openai_server.base_url + "/chat/completions", json={"model": "m", "messages": []},
            timeout=5, retries=3, backoff=0.25, error=LLMError, sleep=slept.append,
        )
    assert answer["choices"][0]["message"]["content"] == "ok"
    assert slept == [2.0, 0.5]  # Retry-After, then exponential backoff (0.25 * 2**1)
    assert len(openai_server.requests) == 3


def test_post_json_gives_up_with_the_servers_message(openai_server: OpenAIServer) -> None:
    openai_server.script = [Reply(status=500, body={"error": {"message": "model crashed"}})] * 3
    with httpx.Client() as client, pytest.raises(LLMError) as info:
        post_json(client, openai_server.base_url + "/chat/completions", json={}, retries=2, backoff=0, error=LLMError, sleep=lambda s: None)
    assert info.value.status_code == 500
    assert "model crashed" in str(info.value) and "3 attempts" in str(info.value)
    assert len(openai_server.requests) == 3


def test_post_json_does_not_retry_client_errors(openai_server: OpenAIServer) -> None:
    openai_server.script = [Reply(status=401, body={"error": {"message": "Incorrect API key provided"}})]
    with httpx.Client() as client, pytest.raises(EmbeddingError) as info:
        post_json(client, openai_server.base_url + "/embeddings", json={}, retries=3, backoff=0, error=EmbeddingError)
    assert info.value.status_code == 401 and "Incorrect API key" in str(info.value)
    assert len(openai_server.requests) == 1


def test_post_json_timeout_is_retried_then_raised(openai_server: OpenAIServer) -> None:
    openai_server.script = [Reply(delay=1.0), Reply(delay=1.0)]
    with httpx.Client() as client, pytest.raises(LLMError) as info:
        post_json(client, openai_server.base_url + "/chat/completions", json={}, timeout=0.2, retries=1, backoff=0, error=LLMError)
    assert info.value.status_code is None
    assert "timed out" in str(info.value)
    assert isinstance(info.value.__cause__, httpx.TimeoutException)


def test_post_json_malformed_json(openai_server: OpenAIServer) -> None:
    openai_server.script = [Reply(body="{not json")]
    with httpx.Client() as client, pytest.raises(LLMError, match="malformed JSON") as info:
        post_json(client, openai_server.base_url + "/chat/completions", json={}, error=LLMError)
    assert info.value.status_code == 200
    assert len(openai_server.requests) == 1


def test_connection_refused_is_an_error() -> None:
    with httpx.Client() as client, pytest.raises(LLMError, match="ConnectError"):
        post_json(client, "http://127.0.0.1:9/v1/x", json={}, retries=1, backoff=0, error=LLMError)


def test_parse_retry_after() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= parse_retry_after(date) <= 31  # type: ignore[operator]


# ---------------------------------------------------------------------- LLM client


def test_llm_client_speaks_chat_completions(openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-123")
    openai_server.chat = lambda messages: "echo: " + messages[-1]["content"]
    config = PipelineConfig.from_dict(
        {"llm": {"base_url": openai_server.base_url, "model": "tiny", "api_key": {"env": "TEST_LLM_KEY"}, "system": "be brief", "max_tokens": 20}}
    ).llm
    assert config is not None and config.type == "openai"  # [llm] is a registered component, "openai" by default
    client = build_llm(config.config)
    assert client.generate("hello") == "echo: hello"
    request = openai_server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["json"]["model"] == "tiny" and request["json"]["max_tokens"] == 20
    assert request["json"]["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]
    assert request["headers"]["Authorization"] == "Bearer sk-test-123"
    assert "sk-test-123" not in repr(config) and "sk-test-123" not in repr(client)


def test_llm_client_retries_429_then_answers(openai_server: OpenAIServer) -> None:
    openai_server.script = [
        Reply(status=429, body={"error": {"message": "rate limited"}}, headers={"Retry-After": "0"}),
        Reply(status=500, body={"error": {"message": "oops"}}),
    ]
    client = LLMClient(LLMConfig(base_url=openai_server.base_url, max_retries=2, backoff=0))
    assert client("hi") == "ok"
    assert len(openai_server.requests) == 3


def test_llm_client_timeout(openai_server: OpenAIServer) -> None:
    openai_server.script = [Reply(delay=1.0)]
    client = LLMClient(LLMConfig(base_url=openai_server.base_url, timeout=0.2, max_retries=0))
    with pytest.raises(LLMError, match="timed out"):
        client.generate("hi")


@pytest.mark.parametrize(
    "reply",
    [Reply(body="<html>gateway</html>"), Reply(body={"choices": []}), Reply(body={"choices": [{"message": {"content": None}}]})],
)
def test_llm_client_unusable_answers(openai_server: OpenAIServer, reply: Reply) -> None:
    openai_server.script = [reply]
    client = LLMClient(LLMConfig(base_url=openai_server.base_url, max_retries=0))
    with pytest.raises(LLMError):
        client.generate("hi")


def test_llm_config_rejects_plain_secret_and_bad_url() -> None:
    with pytest.raises(ConfigError, match="env"):
        PipelineConfig.from_dict({"llm": {"api_key": "sk-oops"}})
    with pytest.raises(ConfigError, match="http"):
        PipelineConfig.from_dict({"llm": {"base_url": "localhost:1234"}})


def test_as_generate_accepts_callables_and_objects() -> None:
    assert as_generate(lambda p: p.upper())("x") == "X"

    class Model:
        def generate(self, prompt: str) -> str:
            return prompt * 2

    assert as_generate(Model())("ab") == "abab"
    with pytest.raises(ConfigError, match="LLM"):
        as_generate(None)
    with pytest.raises(ConfigError):
        as_generate(42)


# ---------------------------------------------------------------------- openai embedder


def _embedder(server: OpenAIServer, **options: object) -> OpenAIEmbedder:
    params = {"base_url": server.base_url, "model": "test-embed", "dim": server.dim, "max_retries": 0, "backoff": 0.0}
    params.update(options)
    return OpenAIEmbedder(OpenAIEmbedderConfig(**params))  # type: ignore[arg-type]


def test_embedder_batches_concurrently_and_orders_by_index(openai_server: OpenAIServer) -> None:
    embedder = _embedder(openai_server, batch_size=3, max_concurrency=2, document_prefix="passage: ")
    texts = [f"text number {i}" for i in range(7)]
    vectors = embedder.embed_documents(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (7, openai_server.dim)
    expected = np.asarray([text_vector("passage: " + t, openai_server.dim) for t in texts], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected, rtol=1e-6)
    sizes = sorted(len(r["json"]["input"]) for r in openai_server.requests)
    assert sizes == [1, 3, 3]
    assert embedder.batch_size == 6  # the pipeline hands over max_concurrency batches at once


def test_embedder_concurrency_is_bounded(openai_server: OpenAIServer) -> None:
    openai_server.delay = 0.2
    embedder = _embedder(openai_server, batch_size=1, max_concurrency=2)
    assert embedder.embed_documents([f"text {i}" for i in range(6)]).shape == (6, openai_server.dim)
    assert len(openai_server.requests) == 6 and openai_server.peak_active == 2


def test_embedder_query_prefix_and_model_id(openai_server: OpenAIServer) -> None:
    embedder = _embedder(openai_server, query_prefix="query: ")
    vector = embedder.embed_query("lamp")
    np.testing.assert_allclose(vector, np.asarray(text_vector("query: lamp", openai_server.dim), dtype=np.float32), rtol=1e-6)
    assert "test-embed" in embedder.model_id and f"dim={openai_server.dim}" in embedder.model_id
    assert _embedder(openai_server).model_id != embedder.model_id


def test_embedder_wrong_dimension(openai_server: OpenAIServer) -> None:
    embedder = _embedder(openai_server, dim=16)
    with pytest.raises(EmbeddingError, match="dimension 8.*dimension 16"):
        embedder.embed_documents(["a"])


def test_embedder_wrong_count_and_malformed(openai_server: OpenAIServer) -> None:
    embedder = _embedder(openai_server)
    openai_server.script = [Reply(body={"data": [{"index": 0, "embedding": [0.0] * 8}]})]
    with pytest.raises(EmbeddingError, match="asked for 2"):
        embedder.embed_documents(["a", "b"])
    openai_server.script = [Reply(body="[[[")]
    with pytest.raises(EmbeddingError, match="malformed JSON"):
        embedder.embed_documents(["a"])
    openai_server.script = [Reply(body={"data": [{"index": 0, "embedding": ["x"] * 8}]})]
    with pytest.raises(EmbeddingError, match="non-numeric"):
        embedder.embed_documents(["a"])


def test_embedder_retries_429_and_500(openai_server: OpenAIServer) -> None:
    openai_server.script = [
        Reply(status=429, body={"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "0"}),
        Reply(status=500, body={"error": {"message": "internal"}}),
    ]
    embedder = _embedder(openai_server, max_retries=2)
    assert embedder.embed_documents(["a"]).shape == (1, 8)
    assert len(openai_server.requests) == 3


def test_embedder_http_error_keeps_status(openai_server: OpenAIServer) -> None:
    openai_server.script = [Reply(status=400, body={"error": {"message": "input too long"}})]
    with pytest.raises(EmbeddingError, match="input too long") as info:
        _embedder(openai_server, max_retries=3).embed_documents(["a"])
    assert info.value.status_code == 400


def test_embedder_timeout(openai_server: OpenAIServer) -> None:
    openai_server.script = [Reply(delay=1.0)]
    with pytest.raises(EmbeddingError, match="timed out"):
        _embedder(openai_server, timeout=0.2).embed_query("a")


def test_embedder_config() -> None:
    assert OpenAIEmbedderConfig().resolved_dim == 1536
    with pytest.raises(ValueError, match="'dim' is required"):
        OpenAIEmbedderConfig(model="my-local-model")
    with pytest.raises(ConfigError, match="env"):
        PipelineConfig.from_dict({"embedder": {"type": "openai", "api_key": "sk-plain"}})
    config = OpenAIEmbedderConfig(api_key=Secret("RAGLOOM_TEST_UNSET_KEY"))
    with pytest.raises(ConfigError, match="RAGLOOM_TEST_UNSET_KEY"):
        OpenAIEmbedder(config)


def test_openai_embedder_reads_openai_api_key_and_fails_at_build_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="needs an API key for https://api.openai.com/v1: set OPENAI_API_KEY"):
        Pipeline.from_config(PipelineConfig.from_dict({"embedder": {"type": "openai"}}))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    assert OpenAIEmbedder(OpenAIEmbedderConfig())._api_key == "sk-from-env"
    local = OpenAIEmbedderConfig(base_url="http://127.0.0.1:11434/v1", model="nomic-embed-text")
    assert OpenAIEmbedder(local)._api_key is None  # the OpenAI key never goes to another server


def test_openai_key_from_the_environment_is_sent(openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key read from OPENAI_API_KEY reaches the wire as a bearer token (OpenAI's host, served locally)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    embedder = _embedder(openai_server, base_url="https://api.openai.com/v1")
    embedder._http.base_url = openai_server.base_url.rstrip("/")  # redirect to the local server
    embedder.embed_query("a")
    headers = {k.lower(): v for k, v in openai_server.requests[-1]["headers"].items()}
    assert headers["authorization"] == "Bearer sk-from-env"


def test_pipeline_with_openai_embedder_and_llm(openai_server: OpenAIServer, corpus) -> None:  # type: ignore[no-untyped-def]
    config = PipelineConfig.from_dict(
        {
            "embedder": {"type": "openai", "base_url": openai_server.base_url, "model": "test-embed", "dim": 8},
            "retriever": {"type": "multi_query", "base": {"type": "hybrid"}, "max_queries": 2},
            "llm": {"base_url": openai_server.base_url, "model": "tiny"},
        },
        base_dir=corpus.parent,
    )
    openai_server.chat = lambda messages: "1. wifi router setup\n2. connect lamp to network"
    with Pipeline.from_config(config) as pipeline:
        result = pipeline.ingest("corpus")
        assert result.embedded > 0
        before = len(openai_server.requests)
        assert pipeline.ingest("corpus").embedded == 0  # unchanged: the model id is in the content hash
        assert len(openai_server.requests) == before
        results = pipeline.query("How do I connect the lamp to wifi?", top_k=3)
    assert len(results) == 3
    assert "/v1/chat/completions" in openai_server.paths()
    embedded_queries = {r["json"]["input"][0] for r in openai_server.requests[before:] if r["path"].endswith("/embeddings")}
    assert embedded_queries == {"How do I connect the lamp to wifi?", "wifi router setup", "connect lamp to network"}
    assert all(set(r.metadata["matched_queries"]) <= embedded_queries for r in results)


def test_import_ragloom_does_not_import_httpx() -> None:
    # httpx is imported when an HTTP client is built, not at start-up
    code = "import sys, ragloom, ragloom.llm, ragloom.embedders.openai; sys.exit('httpx' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
