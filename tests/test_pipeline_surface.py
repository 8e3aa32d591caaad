"""The pipeline's small surfaces pinned whole: ``stats()`` keys and defaults, builder sources."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragloom import Pipeline
from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.errors import EmbeddingError, LoaderError
from ragloom.stores.memory import MemoryStore
from ragloom.types import Failure


class BareStatsStore(MemoryStore):
    """The memory store reporting no counts at all (a third-party store may report less)."""

    def stats(self, namespace: str) -> dict[str, Any]:
        return {"kind": "bare"}


def test_stats_reports_every_count_under_its_name(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\nOne paragraph about lamps.\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("# B\n\nAnother paragraph about bulbs.\n", encoding="utf-8")
    pipeline = Pipeline.builder().namespace("stats").embedder("hash", dim=32).build()
    pipeline.ingest(tmp_path)
    pipeline.query("lamps")
    stats = pipeline.stats()
    store = pipeline.store.stats("stats")
    assert stats == {
        "namespace": "stats",
        "documents": store["documents"],
        "chunks": store["chunks"],
        "sources": 2,
        "documents_ingested": 2,
        "chunks_written": store["chunks"],
        "queries": 1,
        "rerank_failures": 0,
        "embedder": pipeline.embedder.model_id,
        "chunker": pipeline.chunker.fingerprint,
        "store": store,
    }
    assert store["documents"] == 2 and store["chunks"] >= 2


def test_stats_of_a_store_that_reports_no_counts() -> None:
    pipeline = Pipeline.builder().embedder("hash", dim=32).store(BareStatsStore()).build()
    stats = pipeline.stats()
    assert stats["documents"] is None and stats["chunks"] == 0 and stats["sources"] == 0
    assert stats["store"] == {"kind": "bare"}


def test_builder_sources_keep_url_loader_and_tags() -> None:
    config = (
        Pipeline.builder()
        .source(url="https://example.org/docs", loader="web", tags=["site"])
        .source("notes/", loader="markdown")
        .config()
    )
    web, notes = config.sources
    assert (web.path, web.url, web.loader, web.tags) == (None, "https://example.org/docs", "web", ("site",))
    assert (notes.path, notes.url, notes.loader, notes.tags) == ("notes/", None, "markdown", ())


class FailingEmbedder(HashEmbedder):
    """The hash embedder, failing (as a remote embedder may) on any text holding ``POISON``."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if any("POISON" in t for t in texts):
            raise EmbeddingError("the embedding service refused the batch")
        return super().embed_documents(texts)


def _failing_pipeline(on_error: str) -> Pipeline:
    return Pipeline.builder().embedder(FailingEmbedder(HashEmbedderConfig(dim=32))).ingest_options(on_error=on_error).build()


def test_skipped_failures_name_the_source_the_reason_and_the_error_type(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "good.md").write_text("The lamp glows.", encoding="utf-8")
    (tmp_path / "kb" / "bad.json").write_text("{oops", encoding="utf-8")
    (tmp_path / "kb" / "poison.md").write_text("POISON in the text.", encoding="utf-8")
    (tmp_path / "odd.weird").write_text("x", encoding="utf-8")
    pipeline = _failing_pipeline("skip")
    result = pipeline.ingest([tmp_path / "kb", tmp_path / "gone.md", tmp_path / "odd.weird"])
    assert pipeline.sources() == [str(tmp_path / "kb" / "good.md")]
    assert sorted(result.failed, key=lambda f: f.source) == [
        Failure(source=str(tmp_path / "gone.md"), reason="no such file or directory", error="LoaderError"),
        Failure(source=str(tmp_path / "kb" / "bad.json"), reason="invalid JSON: Expecting property name enclosed in double quotes", error="LoaderError"),
        Failure(source=str(tmp_path / "kb" / "poison.md"), reason="the embedding service refused the batch", error="EmbeddingError"),
        Failure(source=str(tmp_path / "odd.weird"), reason="no loader for .weird files", error="LoaderError"),
    ]


def test_a_failure_stops_the_ingest_as_a_loader_error_naming_the_source(tmp_path: Path) -> None:
    (tmp_path / "poison.md").write_text("POISON in the text.", encoding="utf-8")
    with pytest.raises(LoaderError) as info:
        _failing_pipeline("fail").ingest(tmp_path / "poison.md")
    assert info.value.source == str(tmp_path / "poison.md")
    assert info.value.reason == "EmbeddingError: the embedding service refused the batch"
    assert isinstance(info.value.__cause__, EmbeddingError)
    with pytest.raises(LoaderError) as missing:
        _failing_pipeline("fail").ingest(tmp_path / "gone.md")
    assert missing.value.source == str(tmp_path / "gone.md") and missing.value.reason == "no such file or directory"


def test_removed_counts_add_up_over_every_source_removed_in_one_ingest(tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / f"{name}.md").write_text(f"# {name}\n\nFirst paragraph of {name}.\n\nSecond paragraph of {name}.\n", encoding="utf-8")
    pipeline = Pipeline.builder().embedder("hash", dim=32).chunker("recursive", size=30, overlap=0).build()
    pipeline.ingest(folder)
    counts = pipeline.source_counts()
    (folder / "a.md").unlink()
    (folder / "b.md").unlink()
    result = pipeline.ingest(folder)
    assert result.removed == counts[str(folder / "a.md")] + counts[str(folder / "b.md")] and result.removed > 2
    assert sorted(result.removed_sources) == [str(folder / "a.md"), str(folder / "b.md")]


def test_missing_filter_keys_names_metadata_keys_no_chunk_has(tmp_path: Path) -> None:
    empty = Pipeline.builder().embedder("hash", dim=32).build()
    assert empty.missing_filter_keys({"lang": "en"}) == []  # nothing stored: nothing to say
    (tmp_path / "a.md").write_text("---\nlang: en\n---\nThe lamp glows.", encoding="utf-8")
    pipeline = Pipeline.builder().namespace("kb").embedder("hash", dim=32).build()
    pipeline.ingest(tmp_path / "a.md")
    assert pipeline.store.search("kb", np.ones(32, dtype=np.float32), top_k=1)[0].metadata.get("lang") == "en"
    assert pipeline.missing_filter_keys({"lang": "de"}) == []
    spec = {"$or": [{"colour": "red"}, {"lang": "en"}, {"source": "/x"}, {"tags": "t"}, {"colour": {"$ne": "blue"}}, {"year": 1}]}
    assert pipeline.missing_filter_keys(spec) == ["colour", "year"]
    other = Pipeline.builder().namespace("other").embedder("hash", dim=32).store(pipeline.store).build()
    assert other.missing_filter_keys({"lang": "en"}) == ["lang"]  # only this pipeline's namespace counts


def test_builder_loader_options_are_checked_and_named_where_they_sit() -> None:
    from ragloom.errors import ConfigError

    with pytest.raises(ConfigError) as bad_key:
        Pipeline.builder().loader("markdown", bogus=1)
    assert str(bad_key.value) == "unknown key 'bogus' @ $.loaders.markdown (allowed: strip_frontmatter, max_file_bytes)"
    with pytest.raises(ConfigError) as bad_name:
        Pipeline.builder().loader("nosuchloader")
    assert str(bad_name.value).startswith("unknown loader type 'nosuchloader' @ $.loaders.nosuchloader; installed: ")
    config = Pipeline.builder().loader("markdown", strip_frontmatter=False).config()
    assert config.loaders["markdown"].strip_frontmatter is False
