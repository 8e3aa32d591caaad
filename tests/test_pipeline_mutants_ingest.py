"""What one ingest call reports, counted exactly: the whole ``IngestResult``, progress, failures, tags.

Written against the mutants of ``pipeline.py`` that a test checking one field at
a time let through (a count off by one, a failure without its source, a progress
total of the wrong list, a tag order changed): each test here compares the whole
result a user gets back (``IngestResult``, ``Failure``, ``Progress``, stored
chunks) with the value worked out by hand. Real loaders, real files, the real
memory store and hash embedder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from helpers import CountingEmbedder

from ragloom import (
    ConfigError,
    Document,
    EmbeddingError,
    Failure,
    IngestResult,
    IngestTarget,
    LoaderError,
    Pipeline,
    Registry,
    hookimpl,
    make_plugin_manager,
)
from ragloom.pipeline import Progress
from ragloom.stores.memory import MemoryStore


def build(embedder: Any = None, **ingest: Any) -> Pipeline:
    builder = Pipeline.builder().chunker("recursive", size=40, overlap=0).embedder(embedder or CountingEmbedder(dim=64))
    builder = builder.loader("jsonl", content_field="text", metadata_fields=["kind"]).store(MemoryStore())
    return (builder.ingest_options(**ingest) if ingest else builder).build()


def chunks(pipeline: Pipeline) -> list[Any]:
    return sorted(pipeline.store.chunks(pipeline.namespace), key=lambda c: c.id)  # type: ignore[attr-defined]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


TWO_CHUNKS = "first paragraph of the file.\n\nsecond paragraph of the file."


def folder(root: Path) -> Path:
    """docs/a.txt (2 chunks), docs/b.md (1 chunk), docs/c.unknownsuffix (skipped: no loader)."""
    docs = root / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(TWO_CHUNKS, encoding="utf-8")
    (docs / "b.md").write_text("one short markdown line.", encoding="utf-8")
    (docs / "c.unknownsuffix").write_text("no loader reads this", encoding="utf-8")
    return docs


# ---------------------------------------------------------------------- the whole result of an ingest


def test_first_ingest_unchanged_reingest_and_an_edit_report_exact_counts(tmp_path: Path) -> None:
    docs = folder(tmp_path)
    embedder = CountingEmbedder(dim=64)
    pipeline = build(embedder)
    a, b, c = (str(docs / n) for n in ("a.txt", "b.md", "c.unknownsuffix"))
    first = pipeline.ingest(docs)
    assert first == IngestResult(documents=2, chunks=3, embedded=3, sources=2, skipped=(c,))
    assert embedder.texts == 3
    assert pipeline.stats()["documents_ingested"] == 2 and pipeline.stats()["chunks_written"] == 3

    again = pipeline.ingest(docs)
    assert again == IngestResult(documents=2, unchanged=2, sources=2, unchanged_sources=2, skipped=(c,))
    assert embedder.texts == 3, "an unchanged folder embeds nothing"
    assert pipeline.stats()["documents_ingested"] == 2 and pipeline.stats()["chunks_written"] == 3

    (docs / "b.md").write_text("a new markdown line.", encoding="utf-8")
    edited = pipeline.ingest(docs)
    # removed: b.md's one old chunk, replaced by the new one
    assert edited == IngestResult(
        documents=2, chunks=1, embedded=1, unchanged=1, removed=1, sources=2, unchanged_sources=1, skipped=(c,)
    )
    assert embedder.texts == 4
    assert pipeline.stats()["documents_ingested"] == 3 and pipeline.stats()["chunks_written"] == 4
    assert sorted(pipeline.sources()) == [a, b]


def test_a_vanished_file_is_removed_and_reported_with_its_chunk_count(tmp_path: Path) -> None:
    docs = folder(tmp_path)
    sibling = tmp_path / "docs2"
    sibling.mkdir()
    (sibling / "s.txt").write_text("a sibling folder's file.", encoding="utf-8")
    pipeline = build()
    pipeline.ingest([docs, sibling])
    (docs / "a.txt").unlink()
    result = pipeline.ingest(docs)
    a = str(docs / "a.txt")
    assert result == IngestResult(
        documents=1,
        unchanged=1,
        sources=1,
        unchanged_sources=1,
        removed=2,
        removed_sources=(a,),
        skipped=(str(docs / "c.unknownsuffix"),),
    )
    assert sorted(pipeline.sources()) == [str(docs / "b.md"), str(sibling / "s.txt")]


def test_without_remove_missing_a_vanished_file_stays_stored(tmp_path: Path) -> None:
    docs = folder(tmp_path)
    pipeline = build(remove_missing=False)
    pipeline.ingest(docs)
    (docs / "a.txt").unlink()
    result = pipeline.ingest(docs)
    assert result.removed == 0 and result.removed_sources == ()
    assert str(docs / "a.txt") in pipeline.sources() and pipeline.store.count("default") == 3


def test_a_file_that_becomes_skipped_is_not_removed_as_vanished(tmp_path: Path) -> None:
    """A stored source still present in the folder, now skipped by the loaders, is not 'missing'."""
    docs = folder(tmp_path)
    pipeline = build()
    pipeline.ingest(docs)
    skipped = str(docs / "c.unknownsuffix")
    pipeline.ingest_documents([Document.create("stored under the skipped file's name", skipped)])
    result = pipeline.ingest(docs)
    assert result.removed_sources == () and result.skipped == (skipped,)
    assert skipped in pipeline.sources()


def test_progress_reports_each_file_of_each_target_with_its_own_total(tmp_path: Path) -> None:
    docs = folder(tmp_path)
    single = tmp_path / "single.txt"
    single.write_text("a file given on its own.", encoding="utf-8")
    seen: list[Progress] = []
    build().ingest([docs, single], progress=seen.append)
    assert seen == [
        Progress(source=str(docs / "a.txt"), done=1, total=2),
        Progress(source=str(docs / "b.md"), done=2, total=2),
        Progress(source=str(single), done=1, total=1),
    ]
    assert all(p.stage == "ingest" and p.chunks == 0 for p in seen)


def test_progress_is_reported_for_a_file_that_fails(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    seen: list[Progress] = []
    result = build(on_error="skip").ingest(bad, progress=seen.append)
    assert seen == [Progress(source=str(bad), done=1, total=1)]
    assert [f.source for f in result.failed] == [str(bad)]


# ---------------------------------------------------------------------- failures, skipped and raised


def test_every_kind_of_unreadable_target_is_one_exact_failure(tmp_path: Path) -> None:
    missing = tmp_path / "missing.txt"
    no_suffix = tmp_path / "README"
    no_suffix.write_text("no suffix", encoding="utf-8")
    odd = tmp_path / "data.unknownsuffix"
    odd.write_text("no loader", encoding="utf-8")
    result = build(on_error="skip").ingest([missing, no_suffix, odd, "gopher://example.org/x"])
    assert result.failed == (
        Failure(source=str(missing), reason="no such file or directory", error="LoaderError"),
        Failure(source=str(no_suffix), reason="no loader for files without a suffix files", error="LoaderError"),
        Failure(source=str(odd), reason="no loader for .unknownsuffix files", error="LoaderError"),
        Failure(source="gopher://example.org/x", reason="no loader handles this URL scheme", error="LoaderError"),
    )
    assert result.sources == 0 and result.documents == 0 and result.skipped == ()


def test_a_file_name_that_is_not_utf8_fails_with_a_printable_name(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.txt").write_text("a good file.", encoding="utf-8")
    bad = docs / os.fsdecode(b"bad\xff.txt")
    bad.write_text("a file whose name is not UTF-8", encoding="utf-8")
    pipeline = build(on_error="skip")
    result = pipeline.ingest(docs)
    assert result.failed == (
        Failure(
            source=str(docs / "bad\\xff.txt"),
            reason="file name is not valid Unicode (not UTF-8); rename the file",
            error="LoaderError",
        ),
    )
    assert result.sources == 1 and pipeline.sources() == [str(docs / "good.txt")]


def test_a_loader_error_with_on_error_fail_is_raised_as_is_with_its_source(tmp_path: Path) -> None:
    missing = tmp_path / "missing.txt"
    with pytest.raises(LoaderError, match="no such file") as raised:
        build(on_error="fail").ingest(missing)
    assert raised.value.source == str(missing)


def test_an_embedder_error_with_on_error_fail_is_a_loader_error_naming_the_file(tmp_path: Path) -> None:
    class Refusing(CountingEmbedder):
        def embed_documents(self, texts: Any) -> Any:
            raise EmbeddingError("the model is away")

    path = tmp_path / "a.txt"
    path.write_text("some text.", encoding="utf-8")
    pipeline = build(Refusing(dim=64), on_error="fail")
    with pytest.raises(LoaderError) as raised:
        pipeline.ingest(path)
    assert raised.value.source == str(path)
    assert "EmbeddingError: " in str(raised.value) and "the model is away" in str(raised.value)
    assert isinstance(raised.value.__cause__, EmbeddingError)
    assert pipeline.sources() == []
    skipping = build(Refusing(dim=64), on_error="skip")
    result = skipping.ingest(path)
    assert result.failed == (Failure(source=str(path), reason="the model is away", error="EmbeddingError"),)
    assert result.chunks == 0 and skipping.sources() == []


def test_an_unknown_loader_name_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("some text.", encoding="utf-8")
    pipeline = build()
    with pytest.raises(ConfigError, match="no-such-loader"):
        pipeline.ingest(path, loader="no-such-loader")
    assert pipeline.sources() == []


def test_a_named_loader_reads_a_file_whatever_its_suffix(tmp_path: Path) -> None:
    path = tmp_path / "notes.unknownsuffix"
    path.write_text("plain text under an odd suffix.", encoding="utf-8")
    pipeline = build()
    result = pipeline.ingest(path, loader="text")
    assert result.sources == 1 and result.chunks == 1 and not result.failed
    assert [c.text for c in chunks(pipeline)] == ["plain text under an odd suffix."]


# ---------------------------------------------------------------------- configured sources and tags


def test_configured_sources_get_their_tags_then_the_calls_tags_once_each(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("some text.", encoding="utf-8")
    pipeline = Pipeline.builder().embedder("hash", dim=32).store(MemoryStore()).source(str(path), tags=["handbook", "v1"]).build()
    result = pipeline.ingest(tags=["v1", "extra"])
    assert result.sources == 1
    assert [c.tags for c in chunks(pipeline)] == [("handbook", "v1", "extra")]


def test_a_calls_tags_follow_a_documents_own_tags_once_each() -> None:
    pipeline = build()
    pipeline.ingest_documents([Document.create("tagged text.", "app:1", tags=("own", "shared"))], tags=["shared", "added"])
    assert [c.tags for c in chunks(pipeline)] == [("own", "shared", "added")]
    untagged = build()
    untagged.ingest_documents([Document.create("tagged text.", "app:1", tags=("own",))])
    assert [c.tags for c in chunks(untagged)] == [("own",)]


def test_changed_tags_update_without_embedding_and_count_as_updated(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text(TWO_CHUNKS, encoding="utf-8")
    embedder = CountingEmbedder(dim=64)
    pipeline = build(embedder)
    pipeline.ingest(path, tags=["old"])
    result = pipeline.ingest(path, tags=["new"])
    assert result == IngestResult(documents=1, updated=1, sources=1)
    assert embedder.texts == 2
    assert [c.tags for c in chunks(pipeline)] == [("new",), ("new",)]
    assert pipeline.stats()["documents_ingested"] == 1


# ---------------------------------------------------------------------- rows of one file


def test_rows_changed_kept_retagged_and_deleted_in_one_reingest(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    rows = [{"id": f"r{i}", "text": f"row {i} text.", "kind": "a"} for i in range(4)]
    write_jsonl(path, rows)
    embedder = CountingEmbedder(dim=64)
    pipeline = (
        Pipeline.builder()
        .chunker("recursive", size=40, overlap=0)
        .embedder(embedder)
        .store(MemoryStore())
        .loader("jsonl", content_field="text", id_field="id", metadata_fields=["kind"])
        .build()
    )
    assert pipeline.ingest(path) == IngestResult(documents=4, chunks=4, embedded=4, sources=1)
    rows[0]["text"] = "row 0 rewritten."
    rows[1]["kind"] = "b"
    del rows[3]
    write_jsonl(path, rows)
    result = pipeline.ingest(path)
    # removed: row 0's old chunk (replaced) and row 3's
    assert result == IngestResult(documents=3, chunks=1, embedded=1, updated=1, unchanged=1, removed=2, sources=1)
    assert embedder.texts == 5
    assert sorted((c.text, c.metadata.get("kind")) for c in chunks(pipeline)) == [
        ("row 0 rewritten.", "a"),
        ("row 1 text.", "b"),
        ("row 2 text.", "a"),
    ]


# ---------------------------------------------------------------------- documents given by an app


def test_two_documents_with_one_id_in_a_source_are_refused_and_nothing_of_it_is_stored() -> None:
    pipeline = build()
    twice = [Document(id="d1", text="one.", source="app:1"), Document(id="d1", text="two.", source="app:1")]
    with pytest.raises(LoaderError, match="two documents share the id 'd1'") as raised:
        pipeline.ingest_documents(twice)
    assert raised.value.source == "app:1" and pipeline.sources() == []
    kept = [Document(id="d1", text="one.", source="app:1"), Document(id="d2", text="two.", source="app:1")]
    pipeline.ingest_documents(kept)
    for again in (kept, [kept[0], kept[0]]):  # an unchanged document repeated is refused too
        with pytest.raises(LoaderError, match="share the id"):
            pipeline.ingest_documents([*again, Document(id="d1", text="one.", source="app:1")])
    assert sorted(c.text for c in chunks(pipeline)) == ["one.", "two."]


def test_a_retagged_document_repeated_is_refused() -> None:
    pipeline = build()
    pipeline.ingest_documents([Document(id="d1", text="one.", source="app:1")])
    retagged = Document(id="d1", text="one.", source="app:1", tags=("t",))
    with pytest.raises(LoaderError, match="share the id"):
        pipeline.ingest_documents([retagged, retagged])
    assert [c.tags for c in chunks(pipeline)] == [()]


def test_documents_of_one_source_must_come_together_and_the_first_run_of_it_is_kept() -> None:
    pipeline = build()
    documents = [
        Document(id="a1", text="a one.", source="app:a"),
        Document(id="b1", text="b one.", source="app:b"),
        Document(id="a2", text="a two.", source="app:a"),
    ]
    with pytest.raises(LoaderError, match="must come together") as raised:
        pipeline.ingest_documents(documents)
    assert raised.value.source == "app:a"
    assert sorted(pipeline.sources()) == ["app:a", "app:b"]
    assert sorted(c.text for c in chunks(pipeline)) == ["a one.", "b one."]


def stream_then_error(source_of_error: str) -> Iterator[Document]:
    yield Document(id="a1", text="a one.", source="app:a")
    yield Document(id="a2", text="a two.", source="app:a")
    raise LoaderError("the feed broke", source=source_of_error)


def test_a_loader_error_about_the_next_source_keeps_the_source_that_arrived_whole() -> None:
    pipeline = build()
    with pytest.raises(LoaderError, match="the feed broke"):
        pipeline.ingest_documents(stream_then_error("app:b"))
    assert pipeline.sources() == ["app:a"] and pipeline.store.count("default") == 2


def test_a_loader_error_about_the_source_being_read_stores_nothing_of_it() -> None:
    pipeline = build()
    with pytest.raises(LoaderError, match="the feed broke"):
        pipeline.ingest_documents(stream_then_error("app:a"))
    assert pipeline.sources() == [] and pipeline.store.count("default") == 0


def test_documents_that_cannot_be_stored_are_refused_naming_what_is_wrong() -> None:
    pipeline = build()
    cases = [
        (Document(id="d", text="bad \ud800 text", source="app:t"), "text is not valid Unicode", "app:t"),
        (Document(id="d\udc80", text="fine", source="app:i"), "id is not valid Unicode", "app:i"),
        (Document(id="d", text="fine", source="app:\udcff"), "file name is not valid Unicode", "app:\\udcff"),
        (Document(id="d", text="fine", source="app:m", metadata={"k": "\ud800"}), "metadata is not valid Unicode", "app:m"),
        (Document(id="d", text="fine", source="app:g", tags=("\ud800",)), "metadata is not valid Unicode", "app:g"),
        (Document(id="d", text="fine", source="app:j", metadata={"k": float("nan")}), None, "app:j"),
    ]
    for document, message, source in cases:
        if message is None:  # NaN is stored as JSON NaN: accepted
            pipeline.ingest_documents([document])
            continue
        with pytest.raises(LoaderError, match=message) as raised:
            pipeline.ingest_documents([document])
        assert raised.value.source == source
    circular: dict[str, Any] = {}
    circular["self"] = circular
    with pytest.raises(LoaderError, match=r"metadata cannot be stored as JSON \(ValueError: Circular") as raised:
        pipeline.ingest_documents([Document(id="d", text="fine", source="app:c", metadata=circular)])
    assert raised.value.source == "app:c"
    assert pipeline.sources() == ["app:j"]


def test_an_app_source_that_now_has_fewer_documents_reports_the_removed_chunks() -> None:
    pipeline = build()
    pipeline.ingest_documents([Document(id=f"d{i}", text=f"doc {i}.", source="app:1") for i in range(3)])
    result = pipeline.ingest_documents([Document(id="d0", text="doc 0.", source="app:1")])
    assert result == IngestResult(documents=1, unchanged=1, removed=2, sources=1)
    assert [c.text for c in chunks(pipeline)] == ["doc 0."]


# ---------------------------------------------------------------------- an executor receives the ingest


@attrs.frozen(kw_only=True)
class HandOverConfig:
    note: str = "none"


class HandOver:
    """An executor that records what it was handed and answers with a fixed result."""

    def __init__(self, config: HandOverConfig, context: Any):
        self.config = config
        self.context = context
        self.calls: list[tuple[Any, list[IngestTarget], Any]] = []

    def ingest(self, pipeline: Pipeline, targets: Any, *, progress: Any = None) -> IngestResult:
        self.calls.append((pipeline, list(targets), progress))
        return IngestResult(sources=len(self.calls))


class HandOverPlugin:
    def __init__(self) -> None:
        self.built: list[HandOver] = []

    @hookimpl
    def register_executors(self, register: Any) -> None:
        def factory(config: HandOverConfig, context: Any) -> HandOver:
            self.built.append(HandOver(config, context))
            return self.built[-1]

        register("handover", factory, config=HandOverConfig)


def test_an_executor_is_handed_the_pipeline_every_target_and_the_progress_callback(tmp_path: Path) -> None:
    plugin = HandOverPlugin()
    registry = Registry(make_plugin_manager(extra_plugins=[plugin]))
    store = MemoryStore()
    pipeline = (
        Pipeline.builder(registry=registry)
        .namespace("shop")
        .base_dir(tmp_path)
        .embedder("hash", dim=32)
        .store(store)
        .source("configured.txt", tags=["c"])
        .ingest_options(executor="handover", handover={"note": "n"})
        .build()
    )
    seen: list[Progress] = []
    result = pipeline.ingest(["one.txt", tmp_path / "two"], loader="text", tags=["t"], progress=seen.append)
    assert result == IngestResult(sources=1)
    [executor] = plugin.built
    assert executor.config == HandOverConfig(note="n")
    context = executor.context
    assert context.registry is registry and context.base_dir == tmp_path and context.namespace == "shop"
    assert context.embedder is pipeline.embedder and context.store is store
    [(handed, targets, progress)] = executor.calls
    assert handed is pipeline and progress == seen.append
    assert targets == [
        IngestTarget(source="one.txt", loader="text", tags=("t",)),
        IngestTarget(source=str(tmp_path / "two"), loader="text", tags=("t",)),
    ]
    assert pipeline.ingest(tags=["x"]) == IngestResult(sources=1)
    assert plugin.built[-1].calls[0][1] == [IngestTarget(source="configured.txt", loader=None, tags=("c", "x"))]
    with pytest.raises(ConfigError) as raised:
        pipeline.ingest("one.txt", chunker={"type": "recursive"})
    assert str(raised.value).startswith(
        "a per-call chunker is not supported with the 'handover' executor: set [chunker] in the config"
    )
    assert store.sources("shop") == []


def test_a_loaders_own_error_with_on_error_fail_is_raised_unwrapped(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{not json\n', encoding="utf-8")
    pipeline = build(on_error="fail")
    with pytest.raises(LoaderError) as raised:
        pipeline.ingest(bad)
    assert raised.value.source == str(bad) and "LoaderError: " not in str(raised.value)
    assert pipeline.sources() == []


# ---------------------------------------------------------------------- one namespace only


def test_removal_counts_and_clear_touch_the_pipelines_own_namespace_only(tmp_path: Path) -> None:
    store = MemoryStore()
    docs, sibling = tmp_path / "docs", tmp_path / "docs2"
    for folder in (docs, sibling):
        folder.mkdir()
        (folder / "a.txt").write_text(TWO_CHUNKS, encoding="utf-8")

    def pipeline_in(namespace: str) -> Pipeline:
        return (
            Pipeline.builder()
            .namespace(namespace)
            .base_dir(tmp_path)
            .chunker("recursive", size=40, overlap=0)
            .embedder("hash", dim=32)
            .store(store)
            .build()
        )

    shop, other = pipeline_in("shop"), pipeline_in("other")
    for pipeline in (shop, other):
        pipeline.ingest([docs, sibling])
        pipeline.ingest_documents([Document.create("an app record.", "ticket:1")])
    a, s = str(docs / "a.txt"), str(sibling / "a.txt")
    assert shop.source_counts() == {a: 2, s: 2, "ticket:1": 1}
    assert shop.match_sources("docs/") == [a] and shop.match_sources(docs) == [a]  # a folder: its files, not docs2's
    assert shop.match_sources("ticket:1") == ["ticket:1"] and shop.match_sources("https://example.org/x") == []
    assert shop.match_sources("docs/a.txt") == [a] and shop.match_sources("nothing-here") == []
    assert shop.remove_source("docs") == 2 and shop.remove_sources(["ticket:1"]) == {"ticket:1": 1}
    assert shop.source_counts() == {s: 2}
    assert other.source_counts() == {a: 2, s: 2, "ticket:1": 1}
    assert shop.clear() == 2 and shop.sources() == [] and store.count("shop") == 0
    assert sorted(other.sources()) == sorted([a, s, "ticket:1"]) and store.count("other") == 5
    for blank in ("", "   "):
        with pytest.raises(ConfigError) as raised:
            other.match_sources(blank)
        assert str(raised.value).startswith(
            "a source to remove must be a non-empty path, URL or id (use clear() to empty the namespace)"
        )


def test_a_failed_document_of_an_empty_source_is_reported_with_that_empty_source() -> None:
    class Refusing(CountingEmbedder):
        def embed_documents(self, texts: Any) -> Any:
            raise EmbeddingError("the model is away")

    pipeline = build(Refusing(dim=64), on_error="skip")
    result = pipeline.ingest_documents([Document(id="d", text="some text.", source="")])
    assert result.failed == (Failure(source="", reason="the model is away", error="EmbeddingError"),)
    assert pipeline.store.count("default") == 0


def test_a_folder_whose_name_ends_in_a_space_is_not_its_trimmed_siblings(tmp_path: Path) -> None:
    """'notes ' and 'notes' are two folders: removing or re-ingesting one never touches the other's files."""
    spaced, plain = tmp_path / "notes ", tmp_path / "notes"
    for folder in (spaced, plain):
        folder.mkdir()
        (folder / "a.txt").write_text("a note.", encoding="utf-8")
    (spaced / "b.txt").write_text("another note.", encoding="utf-8")
    pipeline = Pipeline.builder().base_dir(tmp_path).embedder("hash", dim=32).store(MemoryStore()).build()
    pipeline.ingest([spaced, plain])
    (spaced / "b.txt").unlink()
    result = pipeline.ingest(spaced)
    assert result.removed_sources == (str(spaced / "b.txt"),)
    assert pipeline.match_sources("notes ") == [str(spaced / "a.txt")]
    assert pipeline.remove_source(str(spaced) + "/") == 1
    assert pipeline.sources() == [str(plain / "a.txt")]


def test_a_path_that_cannot_be_resolved_is_one_exact_failure(tmp_path: Path) -> None:
    result = build(on_error="skip").ingest([str(tmp_path / "a\x00b.txt"), str(tmp_path / "c\ud800d.txt")])
    assert result.failed == (
        Failure(source=str(tmp_path / "a\\0b.txt"), reason="path contains a NUL byte", error="LoaderError"),
        Failure(
            source=str(tmp_path / "c\\ud800d.txt"), reason="path is not valid Unicode (a lone surrogate)", error="LoaderError"
        ),
    )
