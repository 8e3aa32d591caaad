"""Discovery and configuration of ragloom-sentence-transformers (no torch needed)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ragloom import BuildContext, ConfigError, PipelineConfig, PluginError, Registry
from ragloom.plugins import make_plugin_manager


def test_discovered_through_the_entry_point_with_its_distribution_name() -> None:
    registry = Registry(make_plugin_manager())
    embedder = registry.get("embedder", "sentence-transformers")
    reranker = registry.get("reranker", "cross-encoder")
    for info in (embedder, reranker):
        assert info.distribution == "ragloom-sentence-transformers"
        assert info.plugin == "sentence-transformers"
        assert info.version == "0.1.0"
    assert embedder.description.startswith("Local sentence-transformers model")
    assert reranker.description.startswith("Local cross-encoder model")


def test_importing_the_plugin_does_not_import_torch() -> None:
    code = "import sys, ragloom_sentence_transformers.plugin; print(sorted(m for m in ('torch', 'sentence_transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_toml_options_are_validated() -> None:
    config = PipelineConfig.from_dict(
        {
            "embedder": {"type": "sentence-transformers", "model": "models/minilm", "batch_size": 16, "query_prompt": "query: "},
            "reranker": {"type": "cross-encoder", "model": "models/ce", "top_n": 3},
        }
    )
    assert config.embedder.config.model == "models/minilm"
    assert config.embedder.config.batch_size == 16
    assert config.embedder.config.normalize is True
    assert config.embedder.config.allow_download is False
    assert config.reranker.config.top_n == 3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"query_prompt": "q: ", "query_prompt_name": "query"}, "either 'query_prompt' or 'query_prompt_name'"),
        ({"normalise": True}, "did you mean 'normalize'"),
        ({"model": ""}, "model"),
    ],
)
def test_bad_embedder_options_are_config_errors(options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PipelineConfig.from_dict({"embedder": {"type": "sentence-transformers", **options}})


def test_bad_reranker_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="top_n"):
        PipelineConfig.from_dict({"reranker": {"type": "cross-encoder", "top_n": 0}})


@pytest.mark.parametrize(("stage", "name"), [("embedder", "sentence-transformers"), ("reranker", "cross-encoder")])
def test_missing_sentence_transformers_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch, stage: str, name: str) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # fault injection: the import fails
    context = BuildContext(registry=Registry())
    with pytest.raises(PluginError, match=r"ragloom-sentence-transformers\[models\]"):
        context.build(stage, name, {"model": "anything"})
