"""When sources are held, embedded and flushed: the exact grouping of an ingest of files of known sizes.

Small sources are held until ``[ingest] batch_size`` chunks wait (then embedded
together); a source that fills a batch on its own is embedded as its batches
fill, after the held sources are written; the session is flushed every
``commit_every`` sources or ``batch_size`` chunks written. A threshold off by
one, a counter set instead of added to, or a held source emptied shows here as
another grouping of the embedder's calls or another number of flushes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import FlushCountingStore

from ragloom import EmbeddingError, IngestResult, LoaderError, Pipeline
from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.stores.memory import MemoryStore


class RecordingEmbedder(HashEmbedder):
    """The real hash embedder recording each call's size; a text with ``poison`` fails the call."""

    def __init__(self) -> None:
        super().__init__(HashEmbedderConfig(dim=32))
        self.batch_size = 100  # one call per group the pipeline hands over
        self.calls: list[int] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        if any("poison" in t for t in texts):
            raise EmbeddingError("the model refused a text")
        return super().embed_documents(texts)


def files_of(folder: Path, sizes: list[int], poison: int | None = None) -> None:
    """File ``f{i}.txt`` of ``sizes[i]`` paragraphs of 30 characters: one chunk each at size 40."""
    folder.mkdir()
    for i, size in enumerate(sizes):
        word = "poison" if i == poison else "sits  "
        text = "\n\n".join(f"file {i} paragraph {j:02d} {word} here." for j in range(size))
        (folder / f"f{i}.txt").write_text(text, encoding="utf-8")


def build(embedder: RecordingEmbedder, store: MemoryStore, **ingest: Any) -> Pipeline:
    return (
        Pipeline.builder()
        .chunker("recursive", size=40, overlap=0)
        .embedder(embedder)
        .store(store)
        .ingest_options(**ingest)
        .build()
    )


SIZES = [3, 3, 5, 1, 8, 2, 6, 1]


def test_held_sources_are_embedded_in_groups_of_batch_size_and_a_big_one_as_its_batches_fill(tmp_path: Path) -> None:
    files_of(tmp_path / "docs", SIZES)
    embedder, store = RecordingEmbedder(), FlushCountingStore()
    result = build(embedder, store, batch_size=6, commit_every=1000).ingest(tmp_path / "docs")
    assert result == IngestResult(documents=8, chunks=29, embedded=29, sources=8)
    assert store.count("default") == 29
    # f0+f1 (3+3) reach 6: one call; f2+f3 (5+1): one call; f4 fills 6 on its own, then its last 2 at its end;
    # f5 (2) is held until f6 fills a batch of its own: f5 is embedded first, then f6's 6; f7 (1) at the end
    assert embedder.calls == [6, 6, 6, 2, 2, 6, 1]
    # flushes once 6 chunks were written since the last: after f1, f3, f4 and f6; then once before the
    # sweep for vanished files (f7 committed)
    assert store.flushes == 5


def test_commit_every_counts_committed_sources(tmp_path: Path) -> None:
    files_of(tmp_path / "docs", [1] * 7)
    embedder, store = RecordingEmbedder(), FlushCountingStore()
    build(embedder, store, batch_size=3, commit_every=2).ingest(tmp_path / "docs")
    assert embedder.calls == [3, 3, 1]
    # held in threes, each group written in order: a flush once 2 sources were committed since the last
    # (after f1, f3 and f5: the 3-chunk threshold is never reached first), then once before the sweep (f6)
    assert store.flushes == 4


def test_an_unchanged_reingest_flushes_nothing_before_the_sweep(tmp_path: Path) -> None:
    files_of(tmp_path / "docs", [2, 2, 2])
    embedder, store = RecordingEmbedder(), FlushCountingStore()
    pipeline = build(embedder, store, batch_size=4, commit_every=1)
    pipeline.ingest(tmp_path / "docs")
    before = store.flushes
    embedder.calls.clear()
    assert pipeline.ingest(tmp_path / "docs").unchanged_sources == 3
    assert embedder.calls == [] and store.flushes == before  # nothing committed: no flush at all


def test_a_failure_while_held_sources_are_committed_does_not_hide_the_error_that_stopped_the_ingest(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    files_of(folder, [2, 2], poison=1)
    (folder / os.fsdecode(b"f2\xff.txt")).write_text("a file whose name is not UTF-8", encoding="utf-8")
    embedder, store = RecordingEmbedder(), FlushCountingStore()
    pipeline = build(embedder, store, batch_size=1000, on_error="fail")
    with pytest.raises(LoaderError, match="file name is not valid Unicode"):
        pipeline.ingest(folder)
    # the held f0 and f1 were drained on the way out: together (refused), then each alone; f0 committed
    assert embedder.calls == [4, 2, 2]
    assert store.sources("default") == [str(folder / "f0.txt")]


def test_removed_chunks_of_every_source_add_up(tmp_path: Path) -> None:
    files_of(tmp_path / "docs", [3, 3, 3])
    embedder, store = RecordingEmbedder(), FlushCountingStore()
    pipeline = build(embedder, store, batch_size=100)
    pipeline.ingest(tmp_path / "docs")
    for i in (0, 1):  # drop the last paragraph of f0 and f1
        path = tmp_path / "docs" / f"f{i}.txt"
        path.write_text(path.read_text(encoding="utf-8").rsplit("\n\n", 1)[0], encoding="utf-8")
    result = pipeline.ingest(tmp_path / "docs")
    # one document per file: the two edited files are embedded again (2 chunks each), their 3 old chunks removed
    assert result == IngestResult(documents=3, chunks=4, embedded=4, unchanged=1, removed=6, sources=3, unchanged_sources=1)
    assert store.count("default") == 7


def test_a_file_given_before_its_folder_is_ingested_once(tmp_path: Path) -> None:
    """The folder's stored states are read ahead, but not for a file this call already wrote (still held)."""
    files_of(tmp_path / "docs", [2, 2])
    embedder, store = RecordingEmbedder(), FlushCountingStore()
    pipeline = build(embedder, store, batch_size=1000)
    result = pipeline.ingest([tmp_path / "docs" / "f0.txt", tmp_path / "docs"])
    assert result == IngestResult(documents=3, chunks=4, embedded=4, sources=3, unchanged=1, unchanged_sources=1)
    assert sum(embedder.calls) == 4 and store.count("default") == 4


def test_a_commit_that_wrote_no_chunk_is_flushed_before_the_sweep(tmp_path: Path) -> None:
    folder = tmp_path / "rows"
    folder.mkdir()
    path = folder / "rows.jsonl"
    path.write_text("".join(f'{{"id": "r{i}", "text": "row {i}."}}\n' for i in range(3)), encoding="utf-8")
    store = FlushCountingStore()
    pipeline = (
        Pipeline.builder().embedder(RecordingEmbedder()).store(store).loader("jsonl", content_field="text", id_field="id").build()
    )
    pipeline.ingest(folder)
    before = store.flushes
    path.write_text("".join(f'{{"id": "r{i}", "text": "row {i}."}}\n' for i in range(2)), encoding="utf-8")
    result = pipeline.ingest(folder)
    assert result.removed == 1 and result.chunks == 0
    assert store.flushes == before + 1  # the commit removing a row, flushed before vanished files are looked for
