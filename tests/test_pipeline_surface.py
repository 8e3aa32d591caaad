"""The pipeline's small surfaces pinned whole: ``stats()`` keys and defaults, builder sources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragloom import Pipeline
from ragloom.stores.memory import MemoryStore


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
