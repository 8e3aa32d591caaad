"""Discovery and configuration of ragloom-cohere."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ragloom import BuildContext, ConfigError, PipelineConfig, Registry, Secret
from ragloom.plugins import make_plugin_manager
from ragloom_cohere import CohereEmbedder, CohereReranker


def test_discovered_through_the_entry_point_with_its_distribution_name() -> None:
    registry = Registry(make_plugin_manager())
    reranker = registry.get("reranker", "cohere")
    embedder = registry.get("embedder", "cohere")
    for info in (reranker, embedder):
        assert info.distribution == "ragloom-cohere"
        assert info.plugin == "cohere"
        assert info.version == "0.1.0"
    assert reranker.description.startswith("Cohere Rerank v2")
    assert embedder.description.startswith("Cohere Embed v2")



def test_importing_the_plugin_does_not_import_httpx_itself() -> None:
    # discovery imports every plugin: httpx loads only when a component is built (or if core already has it)
    code = (
        "import sys, ragloom, ragloom.httpclient; before = 'httpx' in sys.modules; "
        "import ragloom_cohere.plugin; print(('httpx' in sys.modules) == before)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"

def test_defaults_and_the_secret_reference() -> None:
    config = PipelineConfig.from_dict(
        {
            "reranker": {"type": "cohere", "top_n": 3, "api_key": {"env": "MY_COHERE"}},
            "embedder": {"type": "cohere", "model": "embed-english-v3.0"},
        }
    )
    rerank = config.reranker.config
    assert (rerank.model, rerank.top_n, rerank.base_url, rerank.strict) == ("rerank-v3.5", 3, "https://api.cohere.com", False)
    assert rerank.api_key == Secret("MY_COHERE")
    assert config.embedder.config.api_key == Secret("COHERE_API_KEY")
    assert config.embedder.config.batch_size == 96


@pytest.mark.parametrize(
    ("stage", "options", "message"),
    [
        ("reranker", {"api_key": "sk-plain-text"}, "secrets are never written in config"),
        ("reranker", {"base_url": "api.cohere.com"}, "must start with http"),
        ("reranker", {"max_documents_per_call": 20_000}, "max_documents_per_call"),
        ("reranker", {"on_error": "print"}, "on_error"),
        ("reranker", {"top_k": 3}, "did you mean 'top_n'"),
        ("embedder", {"batch_size": 97}, "batch_size"),
        ("embedder", {"dim": 256, "output_dimension": 512}, "disagree"),
        ("embedder", {"truncate": "MIDDLE"}, "truncate"),
    ],
)
def test_bad_options_are_config_errors(stage: str, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PipelineConfig.from_dict({stage: {"type": "cohere", **options}})


def test_a_missing_api_key_fails_at_build_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="COHERE_API_KEY is not set"):
        BuildContext(registry=Registry()).build("reranker", "cohere", {})


def test_the_key_never_shows_in_reprs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERE_API_KEY", "very-secret-value")
    context = BuildContext(registry=Registry())
    reranker = context.build("reranker", "cohere", {})
    embedder = context.build("embedder", "cohere", {})
    assert isinstance(reranker, CohereReranker) and isinstance(embedder, CohereEmbedder)
    for text in (repr(reranker), repr(embedder), repr(reranker.config), repr(embedder.config)):
        assert "very-secret-value" not in text


def test_embedder_dimensions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERE_API_KEY", "k")
    context = BuildContext(registry=Registry())
    assert context.build("embedder", "cohere", {}).dim == 1536
    assert context.build("embedder", "cohere", {"model": "embed-english-light-v3.0"}).dim == 384
    v4_small = context.build("embedder", "cohere", {"output_dimension": 256})
    assert v4_small.dim == 256 and v4_small.model_id == "cohere:embed-v4.0:output_dimension=256"
    assert context.build("embedder", "cohere", {"model": "my-gateway-model", "dim": 768}).dim == 768
    with pytest.raises(ConfigError, match="set dim = "):
        context.build("embedder", "cohere", {"model": "my-gateway-model"})
