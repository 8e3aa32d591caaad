"""What each stage's factory sees while a pipeline is built, and which instance wins.

Every factory gets a ``BuildContext``: the registry, ``base_dir``, the namespace,
the ``[loaders.*]`` options, and the parts built before it (the LLM, then the
embedder, then the store). A plugin's chunker or retriever that needs the
embedder or the store depends on that order; a per-call chunker
(``ingest(chunker=...)``) is built with the same context. These tests register
one component per stage that records its context, and check each field.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from ragloom import ConfigError, Pipeline, PipelineConfig, Registry, Result, hookimpl, make_plugin_manager
from ragloom.chunkers.recursive import RecursiveChunker, RecursiveConfig
from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.stores.memory import MemoryStore


@attrs.frozen(kw_only=True)
class Options:
    size: int = 100


class Echo:
    """An LLM client: anything with generate(prompt) -> str."""

    def generate(self, prompt: str) -> str:
        return prompt


class KeepAll:
    top_n = 5

    def rerank(self, query: str, results: Sequence[Result], top_n: int | None = None) -> list[Result]:
        return list(results)


class Recording:
    """Registers an llm, embedder, store, chunker, retriever and reranker named ``seen``; records each context."""

    def __init__(self) -> None:
        self.contexts: dict[str, Any] = {}
        self.options: dict[str, Any] = {}

    def _keep(self, stage: str, config: Any, context: Any) -> None:
        self.contexts[stage] = context
        self.options[stage] = config

    @hookimpl
    def register_llms(self, register: Any) -> None:
        register("seen", lambda config, context: (self._keep("llm", config, context), Echo())[1], config=Options)

    @hookimpl
    def register_embedders(self, register: Any) -> None:
        register(
            "seen",
            lambda config, context: (self._keep("embedder", config, context), HashEmbedder(HashEmbedderConfig(dim=32)))[1],
            config=Options,
        )

    @hookimpl
    def register_stores(self, register: Any) -> None:
        register("seen", lambda config, context: (self._keep("store", config, context), MemoryStore())[1], config=Options)

    @hookimpl
    def register_chunkers(self, register: Any) -> None:
        def chunker(config: Options, context: Any) -> RecursiveChunker:
            self._keep("chunker", config, context)
            return RecursiveChunker(RecursiveConfig(size=config.size, overlap=0))

        register("seen", chunker, config=Options)

    @hookimpl
    def register_retrievers(self, register: Any) -> None:
        def retriever(config: Options, context: Any) -> Any:
            self._keep("retriever", config, context)
            return context.build("retriever", "similarity", {"top_k": 3})

        register("seen", retriever, config=Options)

    @hookimpl
    def register_rerankers(self, register: Any) -> None:
        register("seen", lambda config, context: (self._keep("reranker", config, context), KeepAll())[1], config=Options)


def configured(tmp_path: Path) -> tuple[Recording, Registry, PipelineConfig]:
    plugin = Recording()
    registry = Registry(make_plugin_manager(extra_plugins=[plugin]))
    config = PipelineConfig.from_dict(
        {
            "namespace": "shop",
            "llm": {"type": "seen", "size": 1},
            "embedder": {"type": "seen", "size": 2},
            "store": {"type": "seen", "size": 3},
            "chunker": {"type": "seen", "size": 40},
            "retriever": {"type": "seen", "size": 5},
            "reranker": {"type": "seen", "size": 6},
            "loaders": {"text": {"encoding": "latin-1"}},
        },
        registry=registry,
        base_dir=tmp_path,
    )
    return plugin, registry, config


def test_each_factory_sees_the_parts_built_before_it(tmp_path: Path) -> None:
    plugin, registry, config = configured(tmp_path)
    pipeline = Pipeline.from_config(config, registry=registry)
    assert [plugin.options[s].size for s in ("llm", "embedder", "store", "chunker", "retriever", "reranker")] == [
        1,
        2,
        3,
        40,
        5,
        6,
    ]
    for stage, context in plugin.contexts.items():
        assert context.registry is registry, stage
        assert context.base_dir == tmp_path and context.namespace == "shop", stage
        assert set(context.loader_options) == {"text"} and context.loader_options["text"].encoding == "latin-1", stage
    contexts = plugin.contexts
    assert contexts["llm"].llm is None and contexts["llm"].embedder is None and contexts["llm"].store is None
    assert (
        contexts["embedder"].llm is pipeline.llm and contexts["embedder"].embedder is None and contexts["embedder"].store is None
    )
    assert (
        contexts["store"].llm is pipeline.llm
        and contexts["store"].embedder is pipeline.embedder
        and contexts["store"].store is None
    )
    for stage in ("chunker", "retriever", "reranker"):
        context = contexts[stage]
        assert (context.llm, context.embedder, context.store) == (pipeline.llm, pipeline.embedder, pipeline.store), stage
    assert isinstance(pipeline.llm, Echo) and isinstance(pipeline.reranker, KeepAll) and isinstance(pipeline.store, MemoryStore)
    assert pipeline.namespace == "shop" and pipeline.config is config and pipeline.registry is registry
    # the pipeline works end to end with these parts
    latin = tmp_path / "note.txt"
    latin.write_bytes("caf\xe9 au lait".encode("latin-1"))
    assert pipeline.ingest(latin).chunks == 1
    assert [r.text for r in pipeline.query("café")] == ["café au lait"]


def test_instances_replace_the_configured_parts(tmp_path: Path) -> None:
    plugin, registry, config = configured(tmp_path)
    llm, reranker, store = Echo(), KeepAll(), MemoryStore()
    embedder = HashEmbedder(HashEmbedderConfig(dim=16))
    chunker = RecursiveChunker(RecursiveConfig(size=50, overlap=0))
    pipeline = Pipeline.from_config(
        config,
        registry=registry,
        instances={"llm": llm, "reranker": reranker, "store": store, "embedder": embedder, "chunker": chunker},
    )
    assert (pipeline.llm, pipeline.reranker, pipeline.store, pipeline.embedder, pipeline.chunker) == (
        llm,
        reranker,
        store,
        embedder,
        chunker,
    )
    assert set(plugin.contexts) == {"retriever"}, "only the retriever was built from the config"
    assert plugin.contexts["retriever"].llm is llm and plugin.contexts["retriever"].store is store
    assert plugin.contexts["retriever"].embedder is embedder


def test_a_per_call_chunker_is_built_with_the_pipelines_context(tmp_path: Path) -> None:
    plugin, registry, config = configured(tmp_path)
    pipeline = Pipeline.from_config(config, registry=registry)
    built = plugin.contexts.pop("chunker")
    chunker = pipeline.chunker_for({"size": 9})  # no type: the configured chunker's options, one changed
    assert plugin.options["chunker"].size == 9
    context = plugin.contexts["chunker"]
    assert context is not built
    assert (context.registry, context.base_dir, context.namespace) == (registry, tmp_path, "shop")
    assert (context.llm, context.embedder, context.store) == (pipeline.llm, pipeline.embedder, pipeline.store)
    assert context.loader_options["text"].encoding == "latin-1"
    assert isinstance(chunker, RecursiveChunker) and chunker.config.size == 9
    assert pipeline.chunker_for("seen") is not pipeline.chunker and plugin.options["chunker"].size == 100  # by name: defaults
    assert pipeline.chunker_for() is pipeline.chunker and pipeline.chunker_for(chunker) is chunker


def test_per_call_chunker_refusals_name_the_chunker_key(tmp_path: Path) -> None:
    pipeline = Pipeline.builder().embedder("hash", dim=16).store(MemoryStore()).chunker("recursive", size=300, overlap=10).build()
    changed = pipeline.chunker_for({"size": 120})
    assert changed.config.size == 120 and changed.config.overlap == 10  # the configured options, one changed
    with pytest.raises(ConfigError) as raised:
        pipeline.chunker_for(42)
    assert str(raised.value).startswith(
        "invalid value 42 @ chunker: expected a table of chunker options, a chunker name or a Chunker"
    )

    class NoFingerprint:
        def chunk(self, document: Any) -> list[Any]:
            return []

    with pytest.raises(ConfigError, match="@ chunker: expected a table"):
        pipeline.chunker_for(NoFingerprint())
    with pytest.raises(ConfigError, match=r"'size' must be > 0: -1 @ chunker"):
        pipeline.chunker_for({"size": -1})
    with pytest.raises(ConfigError, match="unknown chunker type 'nope'"):
        pipeline.chunker_for("nope")
    instance = (
        Pipeline.builder().embedder("hash", dim=16).store(MemoryStore()).chunker(RecursiveChunker(RecursiveConfig())).build()
    )
    with pytest.raises(ConfigError) as raised:
        instance.chunker_for({"size": 10})
    assert str(raised.value).startswith(
        "chunker options need a 'type' @ chunker: the configured chunker is an instance, not a registered name"
    )
    assert instance.chunker_for({"type": "recursive", "size": 10}).config.size == 10


@pytest.mark.parametrize("name", ["", 5, None])
def test_the_builder_refuses_a_namespace_that_is_not_a_non_empty_string(name: Any) -> None:
    with pytest.raises(ConfigError) as raised:
        Pipeline.builder().namespace(name)
    assert str(raised.value) == f"invalid value {name!r} @ $.namespace: expected a non-empty string"
