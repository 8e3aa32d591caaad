"""What a user reads when a query finds nothing, the builder's stages, TOML with a plugin registry, JSON results."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from plugins import shouting
from ragloom import CHUNKS, VECTORS, ConfigError, Pipeline
from ragloom.pipeline import iter_results_as_dicts
from ragloom.plugins import Registry, make_plugin_manager
from ragloom.stores.keyword_index import keyword_index_for
from ragloom.stores.memory import MemoryStore

MEMORY_HINT = " (the memory store forgets everything when its process exits: configure a persistent [store] such as duckdb)"


def _lamps(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "lamp.md").write_text("---\nlang: en\n---\nThe brass lamp glows warm in the reading room.\n", encoding="utf-8")
    (folder / "kettle.md").write_text("---\nlang: fr\n---\nThe kettle boils water for tea.\n", encoding="utf-8")
    return folder


def test_explain_empty_names_an_empty_namespace_and_what_to_do(tmp_path: Path) -> None:
    memory = Pipeline.builder().namespace("kb").embedder("hash", dim=32).store("memory").build()
    assert memory.explain_empty("lamp") == "the store holds nothing in namespace 'kb'" + MEMORY_HINT
    # another namespace's chunks do not count
    Pipeline.builder().namespace("other").embedder("hash", dim=32).store(memory.store).build().ingest(_lamps(tmp_path / "kb"))
    assert memory.explain_empty("lamp") == "the store holds nothing in namespace 'kb'" + MEMORY_HINT
    persistent = Pipeline.builder().namespace("kb").embedder("hash", dim=32).store("duckdb", path=str(tmp_path / "kb.duckdb")).build()
    with persistent:
        assert persistent.explain_empty("lamp") == "the store holds nothing in namespace 'kb' (run `ragloom ingest`)"


def test_explain_empty_names_the_filter_keys_no_chunk_has(tmp_path: Path) -> None:
    pipeline = Pipeline.builder().embedder("hash", dim=32).build()
    pipeline.ingest(_lamps(tmp_path / "kb"))
    assert pipeline.explain_empty("lamp", filter={"$or": [{"colour": "red"}, {"lang": "en"}, {"year": 1}]}) == (
        "no stored chunk has the metadata key 'colour', 'year' (JSON/JSONL loaders keep only the fields listed in metadata_fields)"
    )
    assert pipeline.explain_empty("lamp", filter={"lang": "de"}) == "the filter excluded every stored chunk"


def test_explain_empty_gives_the_best_score_under_the_filter_against_the_threshold(tmp_path: Path) -> None:
    pipeline = Pipeline.builder().embedder("hash", dim=64).build()
    pipeline.ingest(_lamps(tmp_path / "kb"))
    best = pipeline.query("brass lamp reading room", filter={"lang": "fr"}, top_k=1)[0]
    assert best.source.endswith("kettle.md")  # the filter picks the less similar document
    assert pipeline.query("brass lamp reading room", top_k=1)[0].score > best.score
    assert pipeline.explain_empty("brass lamp reading room", threshold=0.99, filter={"lang": "fr"}) == (
        f"no result scored at least the threshold 0.99 (the best scored {best.score:.3f})"
    )
    assert pipeline.explain_empty("brass lamp reading room", threshold=0.99) == (
        f"no result scored at least the threshold 0.99 (the best scored {pipeline.query('brass lamp reading room', top_k=1)[0].score:.3f})"
    )


def test_explain_empty_falls_back_to_the_retriever_finding_nothing(tmp_path: Path) -> None:
    pipeline = Pipeline.builder().embedder("hash", dim=32).retriever("bm25").build()
    pipeline.ingest(_lamps(tmp_path / "kb"))
    assert pipeline.query("zeppelin") == []
    assert pipeline.explain_empty("zeppelin") == "the retriever found no matching chunk"
    assert pipeline.explain_empty("zeppelin", threshold=0.5) == "the retriever found no matching chunk"
    assert pipeline.explain_empty("zeppelin", filter={"lang": "en"}) == "the filter excluded every stored chunk"


def test_iter_results_as_dicts_ranks_from_one_with_every_field(tmp_path: Path) -> None:
    pipeline = Pipeline.builder().embedder("hash", dim=32).build()
    pipeline.ingest(_lamps(tmp_path / "kb"), tags=["home", "kitchen"])
    results = pipeline.query("brass lamp", top_k=2)
    assert len(results) == 2
    rows = list(iter_results_as_dicts(results))
    assert rows == [
        {
            "rank": rank,
            "score": r.score,
            "source": r.source,
            "span": list(r.span),
            "citation": r.citation(),
            "chunk_id": r.chunk_id,
            "document_id": r.document_id,
            "text": r.text,
            "metadata": r.metadata,
            "tags": ["home", "kitchen"],
        }
        for rank, r in enumerate(results, start=1)
    ]
    assert rows[0]["span"] != [0, 0] and rows[0]["citation"].startswith(rows[0]["source"])
    assert {row["metadata"]["lang"] for row in rows} == {"en", "fr"}
    assert isinstance(rows[0]["span"], list) and isinstance(rows[0]["tags"], list)


class EchoLLM:
    """An LLM client instance: rates the kettle 9 and everything else 1 (the llm reranker's prompt lists passages)."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def generate(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return "\n".join(f"{i}: {9 if 'kettle' in text else 1}" for i, text in re.findall(r"^\[(\d+)\] (.*)$", prompt, flags=re.M))


def test_builder_llm_instance_reaches_the_llm_reranker_and_the_pipeline(tmp_path: Path) -> None:
    client = EchoLLM()
    builder = Pipeline.builder().embedder("hash", dim=32)
    assert builder.llm(client) is builder and builder.reranker("llm", top_n=1) is builder
    pipeline = builder.build()
    assert pipeline.llm is client and pipeline.config.llm is None
    pipeline.ingest(_lamps(tmp_path / "kb"))
    [best] = pipeline.query("brass lamp", top_k=1)
    assert client.prompts and "brass lamp" in client.prompts[0]
    assert best.source.endswith("kettle.md") and not best.metadata.get("rerank_fallback")


def test_builder_llm_by_name_goes_through_the_config_class() -> None:
    default = Pipeline.builder().llm().config().llm
    assert default is not None and default.type == "openai" and default.config.model == "gpt-4o-mini"
    named = Pipeline.builder().llm("openai", model="local-model", temperature=0.5).config().llm
    assert named is not None and (named.type, named.config.model, named.config.temperature) == ("openai", "local-model", 0.5)
    assert Pipeline.builder().llm("openai").config().llm == default
    with pytest.raises(ConfigError) as bad:
        Pipeline.builder().llm("openai", model="")
    assert str(bad.value) == "Length of 'model' must be >= 1: 0 @ $.llm"
    with pytest.raises(ConfigError) as unknown:
        Pipeline.builder().llm("nope")
    assert str(unknown.value).startswith("unknown llm type 'nope' @ $.llm.type")


def test_builder_retriever_and_reranker_by_name_with_options(tmp_path: Path) -> None:
    builder = Pipeline.builder().embedder("hash", dim=32)
    assert builder.retriever("bm25", top_k=3) is builder and builder.reranker("keyword", top_n=1, weight=1.0) is builder
    config = builder.config()
    assert config.retriever.type == "bm25" and config.retriever.config.top_k == 3
    assert config.reranker is not None and (config.reranker.type, config.reranker.config.top_n, config.reranker.config.weight) == ("keyword", 1, 1.0)
    pipeline = builder.build()
    pipeline.ingest(_lamps(tmp_path / "kb"))
    assert [r.source for r in pipeline.query("kettle")] == [str(tmp_path / "kb" / "kettle.md")]
    assert [r.source for r in pipeline.query("zeppelin")] == []  # BM25: no shared term, no result
    with pytest.raises(ConfigError) as bad_retriever:
        Pipeline.builder().retriever("bm25", bogus=1)
    assert str(bad_retriever.value) == "unknown key 'bogus' @ $.retriever (allowed: top_k, threshold, filter)"
    with pytest.raises(ConfigError) as bad_reranker:
        Pipeline.builder().reranker("keyword", bogus=1)
    assert str(bad_reranker.value) == "unknown key 'bogus' @ $.reranker (allowed: top_n, weight, analyzer, strict)"


def test_builder_retriever_and_reranker_instances(tmp_path: Path) -> None:
    donor = Pipeline.builder().embedder("hash", dim=32).retriever("bm25", top_k=1).reranker("keyword", top_n=1).build()
    builder = Pipeline.builder().embedder("hash", dim=32).store(donor.store)
    pipeline = builder.retriever(donor.retriever).reranker(donor.reranker).build()
    assert pipeline.retriever is donor.retriever and pipeline.reranker is donor.reranker
    assert pipeline.config.retriever.type == "<BM25Retriever>" and pipeline.config.reranker is not None
    assert pipeline.config.reranker.type == "<KeywordReranker>"
    for stage in ("retriever", "reranker"):
        with pytest.raises(ConfigError) as bad:
            getattr(Pipeline.builder(), stage)(getattr(donor, stage), top_k=2)
        assert str(bad.value) == f"options are given with a component name, not with an instance ({stage})"
    # a name after an instance replaces it
    again = Pipeline.builder().embedder("hash", dim=32).retriever(donor.retriever).retriever("similarity").build()
    assert again.retriever is not donor.retriever and again.config.retriever.type == "similarity"


def test_builder_base_dir_resolves_relative_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _lamps(tmp_path / "kb")
    monkeypatch.chdir(tmp_path.parent)
    builder = Pipeline.builder().embedder("hash", dim=32)
    assert builder.base_dir(str(tmp_path)) is builder
    pipeline = builder.build()
    assert pipeline.config.base_dir == tmp_path
    result = pipeline.ingest("kb/lamp.md")
    assert result.failed == () and pipeline.sources() == [str(tmp_path / "kb" / "lamp.md")]
    assert pipeline.remove_source("kb/lamp.md") > 0 and pipeline.sources() == []


def test_from_toml_builds_a_plugin_component_of_the_given_registry(tmp_path: Path) -> None:
    registry = Registry(make_plugin_manager(load_entry_points=False, extra_plugins=[shouting]))
    config = tmp_path / "ragloom.toml"
    config.write_text('[embedder]\ntype = "shout"\ndim = 8\n', encoding="utf-8")
    pipeline = Pipeline.from_toml(config, registry=registry)
    assert pipeline.registry is registry and pipeline.embedder.dim == 8 and pipeline.embedder.base_dir == tmp_path
    with pytest.raises(ConfigError, match="unknown embedder type 'shout'"):
        Pipeline.from_toml(config)  # the default registry has no such embedder
    plain = tmp_path / "plain.toml"
    plain.write_text('[embedder]\ntype = "hash"\ndim = 16\n', encoding="utf-8")
    assert Pipeline.from_toml(plain).embedder.dim == 16


class NoSourceCounts:
    """A store that lists sources but has no ``source_counts`` (the method is optional): the memory store otherwise."""

    def __init__(self) -> None:
        self._inner = MemoryStore()

    def __getattr__(self, name: str) -> Any:
        if name == "source_counts":
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_source_counts_per_source_or_none_when_the_store_cannot_count(tmp_path: Path) -> None:
    folder = _lamps(tmp_path / "kb")
    counting = Pipeline.builder().namespace("kb").embedder("hash", dim=32).chunker("recursive", size=20, overlap=0).build()
    counting.ingest(folder)
    counts = counting.source_counts()
    expected = {str(folder / name): len(counting.query("tea lamp", top_k=50, filter={"source": str(folder / name)})) for name in ("kettle.md", "lamp.md")}
    assert counts == expected and min(expected.values()) >= 2  # several chunks each
    blind = Pipeline.builder().namespace("kb").embedder("hash", dim=32).store(NoSourceCounts()).build()
    blind.ingest(folder)
    Pipeline.builder().namespace("other").embedder("hash", dim=32).store(blind.store).build().ingest(folder / "lamp.md")
    blind.remove_source(folder / "lamp.md")
    assert blind.source_counts() == {str(folder / "kettle.md"): None}


class NoKeywordSearch:
    """The memory store without its own keyword search: BM25 runs on ragloom's keyword index kept beside the store."""

    capabilities = frozenset({VECTORS, CHUNKS})

    def __init__(self) -> None:
        self._inner = MemoryStore()

    def __getattr__(self, name: str) -> Any:
        if name in ("keyword_search", "keyword_ceiling"):
            raise AttributeError(name)
        return getattr(self._inner, name)


def _bm25_pair(folder: Path) -> tuple[Pipeline, Pipeline]:
    """Two BM25 pipelines over one store, namespaces "kb" and "other", both holding ``folder``; both keyword indexes built."""
    kb = Pipeline.builder().namespace("kb").embedder("hash", dim=32).store(NoKeywordSearch()).retriever("bm25").build()
    other = Pipeline.builder().namespace("other").embedder("hash", dim=32).store(kb.store).retriever("bm25").build()
    for pipeline in (kb, other):
        pipeline.ingest(folder)
        assert [r.source for r in pipeline.query("kettle")] == [str(folder / "kettle.md")]  # the index is built now
    return kb, other


def _builds(pipeline: Pipeline) -> tuple[int, int]:
    """How often the keyword indexes of "kb" and "other" were rebuilt by reading every chunk back from the store."""
    return keyword_index_for(pipeline.store, "kb").builds, keyword_index_for(pipeline.store, "other").builds


def test_removing_a_source_takes_it_out_of_keyword_search_in_its_namespace_only(tmp_path: Path) -> None:
    folder = _lamps(tmp_path / "kb")
    kb, other = _bm25_pair(folder)
    builds = _builds(kb)
    assert kb.remove_source(folder / "kettle.md") > 0
    assert kb.query("kettle") == []
    assert [r.source for r in kb.query("brass lamp")] == [str(folder / "lamp.md")]  # the other source stays searchable
    assert [r.source for r in other.query("kettle")] == [str(folder / "kettle.md")]  # the other namespace keeps it
    # the removal was applied to the indexes, not found by reading every chunk back from the store
    assert _builds(kb) == builds


def test_clear_empties_keyword_search_of_its_namespace_only(tmp_path: Path) -> None:
    folder = _lamps(tmp_path / "kb")
    kb, other = _bm25_pair(folder)
    builds = _builds(kb)
    stored = kb.store.count("kb")
    assert kb.clear() == stored and stored >= 2
    assert kb.query("kettle") == [] and kb.query("brass lamp") == [] and kb.sources() == []
    assert [r.source for r in other.query("kettle")] == [str(folder / "kettle.md")] and other.store.count("other") == stored
    assert kb.clear() == 0
    assert _builds(kb) == builds  # forgotten, not rebuilt


def test_ingest_documents_uses_the_per_call_chunker(tmp_path: Path) -> None:
    from ragloom.types import Document

    text = " ".join(f"word{i}" for i in range(120))
    pipeline = Pipeline.builder().embedder("hash", dim=32).chunker("recursive", size=1000, overlap=0).build()
    whole = pipeline.ingest_documents([Document(id="d1", source="app:1", text=text)])
    assert whole.chunks == 1
    small = pipeline.ingest_documents([Document(id="d1", source="app:1", text=text)], chunker={"size": 100})
    assert small.chunks > 5 and small.unchanged == 0  # the override's fingerprint makes the document new
    assert pipeline.source_counts() == {"app:1": small.chunks}
    again = pipeline.ingest_documents([Document(id="d1", source="app:1", text=text)], chunker={"size": 100})
    assert again.unchanged == 1 and again.chunks == 0


def test_a_blank_source_to_remove_is_refused_and_removes_nothing(tmp_path: Path) -> None:
    pipeline = Pipeline.builder().base_dir(tmp_path).embedder("hash", dim=32).build()
    pipeline.ingest(_lamps(tmp_path / "kb"))
    for blank in ("", "   "):
        with pytest.raises(ConfigError) as refused:
            pipeline.remove_source(blank)
        assert str(refused.value) == "a source to remove must be a non-empty path, URL or id (use clear() to empty the namespace)"
    assert len(pipeline.sources()) == 2
