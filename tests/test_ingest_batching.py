"""Many small sources reach the embedder in full batches, and the batching changes nothing else.

A folder of small files used to be embedded one source at a time (two or three
chunks per model call, each padded to the longest of its few texts); the
pipeline now holds finished sources until ``[ingest] batch_size`` chunks wait,
embeds them together, then writes and commits each source in order. These tests
check the batching, that every promise of a per-source ingest still holds
(failures land on their own source, re-ingest changes nothing, the store is the
same), and that ``embed_in_batches`` returns rows in the given order.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragloom import EmbeddingError, LoaderError, Pipeline
from ragloom.embedders.base import embed_in_batches
from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.stores.memory import MemoryStore


class RecordingEmbedder(HashEmbedder):
    """The real hash embedder, recording each call's texts; texts containing ``poison`` fail the call."""

    def __init__(self, batch_size: int = 8):
        super().__init__(HashEmbedderConfig(dim=64))
        self.batch_size = batch_size
        self.calls: list[list[str]] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if any("poison" in t for t in texts):
            raise EmbeddingError("the model refused a text")
        return super().embed_documents(texts)


def build(embedder: HashEmbedder, **ingest: object) -> Pipeline:
    builder = Pipeline.builder().chunker("recursive", size=40, overlap=0).embedder(embedder).store(MemoryStore())
    return builder.ingest_options(**ingest).build() if ingest else builder.build()


def small_files(folder: Path, count: int, *, poison: int | None = None) -> list[Path]:
    """``count`` files of three short paragraphs (three chunks each at size 40)."""
    folder.mkdir(exist_ok=True)
    paths = []
    for i in range(count):
        words = "poison" if i == poison else "lamp"
        text = f"file {i} talks about {words} number one.\n\nfile {i} second paragraph here.\n\nfile {i} third part closes."
        path = folder / f"f{i:03d}.txt"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def stored(pipeline: Pipeline) -> dict[str, tuple[str, str, tuple[float, ...]]]:
    """Every stored chunk: id -> (source, text, rounded vector)."""
    store = pipeline.store
    chunks = [c for batch in store.iter_chunks(pipeline.namespace) for c in batch]  # type: ignore[attr-defined]
    vectors = store.get_vectors(pipeline.namespace, [c.id for c in chunks])  # type: ignore[attr-defined]
    return {c.id: (c.source, c.text, tuple(np.round(v, 6))) for c, v in zip(chunks, vectors, strict=True)}


def test_a_folder_of_small_files_reaches_the_embedder_in_full_batches(tmp_path: Path) -> None:
    small_files(tmp_path / "docs", 40)
    embedder = RecordingEmbedder(batch_size=8)
    pipeline = build(embedder, batch_size=32)
    result = pipeline.ingest(tmp_path / "docs")
    assert result.sources == 40 and result.chunks == 120 and not result.failed
    sizes = [len(c) for c in embedder.calls]
    assert sum(sizes) == 120
    # 120 chunks held in groups of >= 32 (11 files), embedded 8 per call: 18 calls, not 40 calls of 3
    assert len(sizes) == 18 and sizes.count(8) == 14, sizes
    assert sorted(pipeline.store.sources("default")) == sorted(str(p) for p in (tmp_path / "docs").iterdir())


def test_batched_and_one_source_at_a_time_store_the_same_chunks_and_vectors(tmp_path: Path) -> None:
    paths = small_files(tmp_path / "docs", 25)
    together = build(RecordingEmbedder(batch_size=8), batch_size=32)
    together.ingest(tmp_path / "docs")
    alone = build(RecordingEmbedder(batch_size=8), batch_size=32)
    for path in paths:  # one ingest call per file: nothing to batch with
        alone.ingest(path)
    assert stored(together) == stored(alone)
    assert len(stored(together)) == 75


def test_a_failing_source_in_a_batch_fails_alone_and_the_others_commit(tmp_path: Path) -> None:
    small_files(tmp_path / "docs", 20, poison=7)
    embedder = RecordingEmbedder(batch_size=8)
    pipeline = build(embedder, batch_size=32, on_error="skip")
    result = pipeline.ingest(tmp_path / "docs")
    assert [f.source for f in result.failed] == [str(tmp_path / "docs" / "f007.txt")]
    assert result.failed[0].error == "EmbeddingError"
    sources = pipeline.store.sources("default")
    assert len(sources) == 19 and str(tmp_path / "docs" / "f007.txt") not in sources
    assert pipeline.store.count("default") == 57


def test_with_on_error_fail_the_sources_before_the_failure_are_committed(tmp_path: Path) -> None:
    small_files(tmp_path / "docs", 6, poison=4)
    pipeline = build(RecordingEmbedder(batch_size=8), batch_size=1000, on_error="fail")
    with pytest.raises(LoaderError, match="refused") as raised:
        pipeline.ingest(tmp_path / "docs")
    assert raised.value.source == str(tmp_path / "docs" / "f004.txt")
    assert pipeline.store.sources("default") == [str(tmp_path / "docs" / f"f{i:03d}.txt") for i in range(4)]


def test_held_sources_are_committed_when_the_next_source_fails_to_load(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    small_files(folder, 3)
    (folder / os.fsdecode(b"f003\xff.txt")).write_text("a file whose name is not UTF-8", encoding="utf-8")
    pipeline = build(RecordingEmbedder(), batch_size=1000, on_error="fail")
    with pytest.raises(LoaderError, match="not valid Unicode"):
        pipeline.ingest(folder)
    assert pipeline.store.sources("default") == [str(folder / f"f{i:03d}.txt") for i in range(3)]


def test_the_same_folder_twice_in_one_call_stores_each_chunk_once(tmp_path: Path) -> None:
    small_files(tmp_path / "docs", 10)
    embedder = RecordingEmbedder()
    pipeline = build(embedder, batch_size=1000)
    result = pipeline.ingest([tmp_path / "docs", tmp_path / "docs"])
    assert pipeline.store.count("default") == 30
    assert result.unchanged_sources == 10 and sum(len(c) for c in embedder.calls) == 30


def test_an_unchanged_reingest_embeds_nothing_and_an_edit_reembeds_one_file(tmp_path: Path) -> None:
    paths = small_files(tmp_path / "docs", 30)
    embedder = RecordingEmbedder()
    pipeline = build(embedder, batch_size=16)
    pipeline.ingest(tmp_path / "docs")
    before = stored(pipeline)
    embedder.calls.clear()
    again = pipeline.ingest(tmp_path / "docs")
    assert embedder.calls == [] and again.unchanged_sources == 30 and stored(pipeline) == before
    paths[12].write_text("a new text for file twelve.", encoding="utf-8")
    edited = pipeline.ingest(tmp_path / "docs")
    assert [t for c in embedder.calls for t in c] == ["a new text for file twelve."]
    assert edited.chunks == 1 and pipeline.store.count("default") == 88


@pytest.mark.parametrize("batch", [1, 2, 3, 100])
def test_embed_in_batches_returns_rows_in_the_given_order(batch: int) -> None:
    texts = [("word " * n).strip() for n in (9, 1, 5, 1, 12, 3, 7, 2, 2, 30)]
    embedder = RecordingEmbedder(batch_size=batch)
    vectors = embed_in_batches(embedder, texts)
    alone = np.vstack([HashEmbedder(HashEmbedderConfig(dim=64)).embed_documents([t]) for t in texts])
    np.testing.assert_allclose(vectors, alone, atol=1e-6)
    assert sum(len(c) for c in embedder.calls) == len(texts)
    assert all(len(c) <= batch for c in embedder.calls)


def test_embed_in_batches_groups_texts_of_similar_length() -> None:
    texts = [("word " * n).strip() for n in (40, 1, 40, 1, 40, 1, 40, 1)]
    embedder = RecordingEmbedder(batch_size=4)
    embed_in_batches(embedder, texts)
    assert [sorted({len(t) for t in call}) for call in embedder.calls] == [[4], [199]]


def test_by_default_one_large_source_reaches_the_model_sorted_by_length_across_several_calls(tmp_path: Path) -> None:
    """The default ``[ingest] batch_size`` spans several embedder calls, so the calls are cut from length-sorted texts.

    A model pads every text of a call to the longest one; with a batch only one call wide the
    chunks would go in document order, long and short mixed in every call.
    """
    paragraphs = [f"p{i:03d} " + "x" * (15 + i % 19) for i in range(600)]  # 20-38 characters: one chunk each at size 40
    (tmp_path / "big.txt").write_text("\n\n".join(paragraphs), encoding="utf-8")
    embedder = RecordingEmbedder(batch_size=256)
    Pipeline.builder().chunker("recursive", size=40, overlap=0).embedder(embedder).store(MemoryStore()).build().ingest(str(tmp_path))
    texts = [t for call in embedder.calls for t in call]
    assert len(texts) == 600 and len(embedder.calls) == 3  # all 600 chunks in one batch, in calls of the embedder's size
    assert [len(t) for t in texts] == sorted(len(t) for t in texts)  # short with short, long with long
    assert sorted(texts) == sorted(paragraphs)
