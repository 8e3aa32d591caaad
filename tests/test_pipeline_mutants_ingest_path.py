"""The ingest path's bookkeeping, seen from outside: store calls, failures, flushes, the router.

Written against the mutants of ``pipeline.py`` the rest of the suite let through
when the ingest path (``ingest``, ``_ingest_target``, ``_SourceWriter``,
``_IngestRun``) and the assembly were measured: the read-ahead of stored states
batch by batch (a folder longer than one batch), the check that the ``auto``
loader routes sources, a per-call chunker of a chunker without options, an
embedder failing inside a file's own batch, files named one by one (no sweep),
the exact "nothing to ingest" message, and the hashes a retag stores. Real files,
the real memory store and hash embedder; store subclasses only count calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import FlushCountingStore

import ragloom.pipeline
from ragloom import ConfigError, Document, EmbeddingError, Failure, LoaderError, Pipeline, Registry, hookimpl, make_plugin_manager
from ragloom.chunkers.recursive import RecursiveChunker, RecursiveConfig
from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.stores.memory import MemoryStore


class CountingStore(MemoryStore):
    """The memory store, recording the sources each ``source_states`` call asks for."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups: list[list[str]] = []

    def source_states(self, namespace: str, sources: Any) -> Any:
        self.lookups.append(list(sources))
        return super().source_states(namespace, sources)


def build(store: MemoryStore | None = None, registry: Registry | None = None) -> Pipeline:
    builder = Pipeline.builder(registry=registry).chunker("recursive", size=200, overlap=0).embedder("hash", dim=32)
    return builder.store(store if store is not None else MemoryStore()).build()


def numbered(folder: Path, count: int) -> list[str]:
    """``count`` one-line text files ``f00.txt`` ... in ``folder``; their paths in the order a folder is read."""
    folder.mkdir()
    for i in range(count):
        (folder / f"f{i:02d}.txt").write_text(f"file number {i} of the folder.", encoding="utf-8")
    return [str(folder / f"f{i:02d}.txt") for i in range(count)]


# ---------------------------------------------------------------------- read-ahead of stored states


def test_a_folder_longer_than_one_read_ahead_batch_reads_its_states_batch_by_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One ``source_states`` call per batch of files, each asking for exactly that batch's files.

    The batch is 2048 files; it is made 4 here so that ten files span three batches
    (4 + 4 + 2) instead of writing more than a thousand files.
    """
    monkeypatch.setattr(ragloom.pipeline, "_STATE_BATCH", 4)
    files = numbered(tmp_path / "docs", 10)
    store = CountingStore()
    pipeline = build(store)
    assert pipeline.ingest(tmp_path / "docs").sources == 10
    assert store.lookups == [files[0:4], files[4:8], files[8:10]]
    store.lookups.clear()
    again = pipeline.ingest(tmp_path / "docs")
    assert again.unchanged_sources == 10 and again.chunks == 0
    assert store.lookups == [files[0:4], files[4:8], files[8:10]], "an unchanged folder reads its states the same way"


# ---------------------------------------------------------------------- the auto loader must route sources


def test_an_auto_loader_that_does_not_route_sources_is_refused_naming_its_class() -> None:
    """``[loaders]`` reach every file through the registered ``auto`` loader; one that cannot route is a ConfigError."""

    class Flat:
        """A loader with ``load`` only: no ``expand``, ``name_for`` or ``get``."""

        def load(self, source: str) -> list[Any]:
            return []

    registry = Registry(make_plugin_manager(load_entry_points=False))
    info = registry.get("loader", "auto")
    object.__setattr__(info, "factory", lambda config, context: Flat())
    with pytest.raises(ConfigError) as raised:
        build(registry=registry)
    assert str(raised.value) == "the 'auto' loader (Flat) must route sources: expand(), name_for() and get()"


# ---------------------------------------------------------------------- a per-call chunker of a chunker without options


class OptionlessChunkers:
    """Registers ``whole``: a chunker that takes no options (registered without a config class)."""

    def __init__(self) -> None:
        self.built = 0

    @hookimpl
    def register_chunkers(self, register: Any) -> None:
        def whole(config: Any, context: Any) -> RecursiveChunker:
            self.built += 1
            return RecursiveChunker(RecursiveConfig(size=500, overlap=0))

        register("whole", whole)


def test_a_per_call_table_for_a_chunker_without_options_builds_it_afresh_or_names_the_unknown_key() -> None:
    plugin = OptionlessChunkers()
    registry = Registry(make_plugin_manager(load_entry_points=False, extra_plugins=[plugin]))
    pipeline = Pipeline.builder(registry=registry).chunker("whole").embedder("hash", dim=32).store(MemoryStore()).build()
    assert plugin.built == 1
    fresh = pipeline.chunker_for({})  # no type: the configured chunker, with none of its (no) options changed
    assert isinstance(fresh, RecursiveChunker) and fresh is not pipeline.chunker and plugin.built == 2
    with pytest.raises(ConfigError) as raised:
        pipeline.chunker_for({"size": 5})
    assert str(raised.value) == "unknown key(s) size @ chunker: this component takes no options"
    assert pipeline.ingest_documents([Document.create("one short text.", "app:1")], chunker={}).chunks == 1


# ---------------------------------------------------------------------- an embedder failing inside a file's own batch


class Refusing(HashEmbedder):
    """The real hash embedder; a call with a text containing ``poison`` fails."""

    def __init__(self) -> None:
        super().__init__(HashEmbedderConfig(dim=32))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if any("poison" in t for t in texts):
            raise EmbeddingError("the model refused a text")
        return super().embed_documents(texts)


def test_a_file_whose_own_batch_fails_to_embed_is_the_failure_named_by_its_path(tmp_path: Path) -> None:
    """A file of more chunks than ``batch_size`` is embedded while it is read: a failure there names that file."""
    docs = tmp_path / "docs"
    docs.mkdir()
    big = docs / "big.txt"
    big.write_text("\n\n".join(f"paragraph {i} of a poison file here." for i in range(3)), encoding="utf-8")
    (docs / "small.txt").write_text("a small clean file.", encoding="utf-8")

    def pipeline(on_error: str) -> Pipeline:
        builder = Pipeline.builder().chunker("recursive", size=40, overlap=0).embedder(Refusing()).store(MemoryStore())
        return builder.ingest_options(batch_size=2, on_error=on_error).build()

    skipping = pipeline("skip")
    result = skipping.ingest(docs)
    assert result.failed == (Failure(source=str(big), reason="the model refused a text", error="EmbeddingError"),)
    assert skipping.sources() == [str(docs / "small.txt")]
    with pytest.raises(LoaderError) as raised:
        pipeline("fail").ingest(docs)
    assert raised.value.source == str(big) and str(raised.value) == f"{big}: EmbeddingError: the model refused a text"


# ---------------------------------------------------------------------- a file target is not swept like a folder


def test_files_given_one_by_one_are_committed_with_the_session_and_not_swept_like_a_folder(tmp_path: Path) -> None:
    """The flush before the sweep for vanished files is a folder's; files named one by one are written when the session ends."""
    files = numbered(tmp_path / "docs", 3)
    store = FlushCountingStore()
    pipeline = build(store)
    result = pipeline.ingest(files[:2])
    assert result.sources == 2 and store.flushes == 0
    assert sorted(pipeline.sources()) == files[:2]
    pipeline.ingest(tmp_path / "docs")
    assert store.flushes == 1, "a folder: one flush, before its sweep"
    assert sorted(pipeline.sources()) == files


def test_ingest_without_a_source_or_configured_sources_says_what_to_give() -> None:
    with pytest.raises(ConfigError) as raised:
        build().ingest()
    assert str(raised.value) == "nothing to ingest: give a source or declare [[sources]] in the config"


def test_a_retagged_file_is_unchanged_at_the_next_ingest_with_the_same_tags(tmp_path: Path) -> None:
    """Retagging updates the stored chunks' hashes too: the next ingest with those tags finds nothing to do."""
    path = tmp_path / "a.txt"
    path.write_text("first paragraph of the file.\n\nsecond paragraph of the file.", encoding="utf-8")
    store = CountingStore()
    pipeline = Pipeline.builder().chunker("recursive", size=40, overlap=0).embedder("hash", dim=32).store(store).build()
    assert pipeline.ingest(path, tags=["old"]).chunks == 2
    retagged = pipeline.ingest(path, tags=["new"])
    assert (retagged.updated, retagged.chunks, retagged.unchanged) == (1, 0, 0)
    again = pipeline.ingest(path, tags=["new"])
    assert (again.unchanged, again.unchanged_sources, again.updated, again.chunks) == (1, 1, 0, 0)
    assert sorted(c.tags for c in store.chunks("default")) == [("new",), ("new",)]


def test_a_row_added_to_an_unchanged_file_is_stored(tmp_path: Path) -> None:
    """Every stored row kept and one new: the file changed, its new row is embedded and committed."""
    path = tmp_path / "rows.jsonl"
    rows = [f'{{"id": "r{i}", "text": "row {i} text."}}\n' for i in range(3)]
    path.write_text("".join(rows[:2]), encoding="utf-8")
    store = CountingStore()
    pipeline = (
        Pipeline.builder().embedder("hash", dim=32).store(store).loader("jsonl", content_field="text", id_field="id").build()
    )
    assert pipeline.ingest(path).chunks == 2
    path.write_text("".join(rows), encoding="utf-8")
    result = pipeline.ingest(path)
    assert (result.documents, result.chunks, result.unchanged, result.unchanged_sources) == (3, 1, 2, 0)
    assert sorted(c.text for c in store.chunks("default")) == ["row 0 text.", "row 1 text.", "row 2 text."]


def test_a_retagged_file_given_before_its_folder_is_updated_once(tmp_path: Path) -> None:
    """A retag is staged at once (no embedding to wait for); the folder after it waits for that commit instead of
    reading the file's old state ahead, and finds it unchanged."""
    files = numbered(tmp_path / "docs", 2)
    pipeline = build(MemoryStore())
    pipeline.ingest(tmp_path / "docs", tags=["a"])
    result = pipeline.ingest([files[0], tmp_path / "docs"], tags=["b"])
    assert (result.documents, result.updated, result.unchanged, result.sources, result.unchanged_sources) == (3, 2, 1, 3, 1)
    assert [c.tags for c in pipeline.store.chunks("default")] == [("b",), ("b",)]  # type: ignore[attr-defined]
