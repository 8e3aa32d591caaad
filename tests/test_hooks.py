"""Each hook, exercised through a TOML pipeline with a test plugin's components."""

from __future__ import annotations

from pathlib import Path

from plugins import complete
from ragloom import Pipeline
from ragloom.plugins import Registry, make_plugin_manager


def test_every_stage_from_a_plugin(tmp_path: Path, corpus: Path) -> None:
    registry = Registry(make_plugin_manager(load_entry_points=False, extra_plugins=[complete]))
    (corpus / "lamp.kv").write_text("text=The lamp hums softly at night when dimmed below five percent.\ncategory=notes\n")
    config = tmp_path / "ragloom.toml"
    config.write_text(
        f"""
[[sources]]
path = "{corpus.as_posix()}"

[loaders.keyvalue]
separator = "="

[store]
type = "counting"

[retriever]
type = "longest"

[reranker]
type = "reverse"
top_n = 2

[llm]
type = "echo"
prefix = "echo: "
""",
        encoding="utf-8",
    )
    pipeline = Pipeline.from_toml(config, registry=registry)
    result = pipeline.ingest()
    assert result.sources == 13 and not result.skipped
    hits = pipeline.query("lamp hums at night", filter={"category": "notes"})
    assert len(hits) == 1 and hits[0].metadata["category"] == "notes"
    assert hits[0].metadata["retrieval_score"] > 0 and hits[0].score == 1.0
    assert pipeline.store.searches == 1
    many = pipeline.query("lamp")
    assert len(many) == 2  # the reranker's top_n
    assert len(many[0].text) <= len(many[1].text)  # reversed longest-first order
    assert pipeline.llm is not None and pipeline.llm.generate("a\nlamp") == "echo: LAMP"  # [llm] from register_llms


def test_llm_is_a_registered_kind_chosen_by_name() -> None:
    import pytest

    from ragloom import ConfigError

    registry = Registry(make_plugin_manager(load_entry_points=False, extra_plugins=[complete]))
    assert {"openai", "echo"} <= set(registry.names("llm"))
    assert registry.get("llm", "openai").plugin == "ragloom.llm"
    pipeline = Pipeline.builder(registry=registry).llm("echo", prefix="> ").build()
    assert pipeline.llm is not None and pipeline.llm.generate("lamp") == "> LAMP"
    with pytest.raises(ConfigError, match=r"unknown llm type 'ollama' @ \$\.llm\.type; installed: echo, openai"):
        Pipeline.builder(registry=registry).llm("ollama")


def test_the_pipeline_ingests_through_the_registered_auto_loader(tmp_path: Path) -> None:
    from plugins.complete import KeyValueConfig

    from ragloom.plugin import SourceRouter

    registry = Registry(make_plugin_manager(load_entry_points=False, extra_plugins=[complete]))
    built: list[object] = []
    info = registry.get("loader", "auto")
    original = info.factory
    object.__setattr__(info, "factory", lambda config, context: built.append(context.loader_options) or original(config, context))
    (tmp_path / "a.kv").write_text("text+The lamp glows.\n", encoding="utf-8")
    pipeline = Pipeline.builder(registry=registry).loader("keyvalue", separator="+").build()
    assert isinstance(pipeline.loaders, SourceRouter)
    assert built == [{"keyvalue": KeyValueConfig(separator="+")}]  # built by the registry, with the [loaders.*] options
    assert pipeline.ingest(tmp_path).documents == 1
