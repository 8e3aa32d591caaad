"""Ingestion semantics end to end on the memory store: ids, hashes, generations, removal."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from helpers import CountingEmbedder

from ragloom import ConfigError, DimensionMismatchError, LoaderError, Pipeline
from ragloom.stores.memory import MemoryStore


def build(embedder: CountingEmbedder, store: MemoryStore | None = None, namespace: str = "default", **ingest: object) -> Pipeline:
    builder = Pipeline.builder().namespace(namespace).chunker("recursive", size=300, overlap=40).embedder(embedder)
    builder = builder.store(store or MemoryStore())
    if ingest:
        builder = builder.ingest_options(**ingest)
    return builder.build()


def snapshot(pipeline: Pipeline) -> dict[str, tuple[str, str, bytes]]:
    chunks = pipeline.store.chunks(pipeline.namespace)
    vectors = pipeline.store.get_vectors(pipeline.namespace, [c.id for c in chunks])
    return {c.id: (c.source, c.text, vectors[i].tobytes()) for i, c in enumerate(chunks)}


def test_first_ingest_stores_every_file_and_answers(corpus: Path, counting_embedder: CountingEmbedder) -> None:
    pipeline = build(counting_embedder)
    result = pipeline.ingest(corpus)
    assert result.sources == len(list(corpus.iterdir())) == 12
    assert result.documents == 12 and result.unchanged == 0
    assert result.chunks == pipeline.store.count("default") == counting_embedder.texts > 12
    hits = pipeline.query("What does error E12 mean?", top_k=5)
    assert any(h.source.endswith("troubleshooting.md") for h in hits)
    for hit in hits:
        text = Path(hit.source).read_text(encoding="utf-8")
        # frontmatter is stripped: offsets index the document text, which the metadata says where it starts
        assert hit.text in text
        assert hit.metadata["startOffset"] == hit.span[0] and hit.metadata["endOffset"] == hit.span[1]


def test_reingest_unchanged_directory_embeds_nothing(corpus: Path, counting_embedder: CountingEmbedder) -> None:
    pipeline = build(counting_embedder)
    pipeline.ingest(corpus)
    before = snapshot(pipeline)
    calls = counting_embedder.calls
    again = pipeline.ingest(corpus)
    assert counting_embedder.calls == calls, "an unchanged source must not be embedded again"
    assert again.embedded == 0 and again.chunks == 0
    assert again.unchanged == 12 and again.unchanged_sources == 12
    assert snapshot(pipeline) == before  # same chunk ids, no duplicates
    assert pipeline.store.count("default") == len(before)


def test_editing_one_file_replaces_only_that_source(corpus: Path, counting_embedder: CountingEmbedder) -> None:
    pipeline = build(counting_embedder)
    pipeline.ingest(corpus)
    before = snapshot(pipeline)
    edited = corpus / "warranty.txt"
    edited.write_text(edited.read_text(encoding="utf-8") + "\n\nExtended cover: the warranty lasts 99 years on Mars.\n", encoding="utf-8")
    texts = counting_embedder.texts
    result = pipeline.ingest(corpus)
    after = snapshot(pipeline)
    assert result.unchanged == 11 and result.documents == 12
    assert result.embedded == counting_embedder.texts - texts > 0
    untouched_before = {k: v for k, v in before.items() if not v[0].endswith("warranty.txt")}
    untouched_after = {k: v for k, v in after.items() if not v[0].endswith("warranty.txt")}
    assert untouched_after == untouched_before  # ids, text and vectors of other sources are untouched
    warranty = [v for v in after.values() if v[0].endswith("warranty.txt")]
    assert any("99 years on Mars" in text for _, text, _ in warranty)
    assert len(warranty) == result.chunks  # old generation gone, no duplicates


def test_deleted_file_disappears_on_reingest(corpus: Path, counting_embedder: CountingEmbedder) -> None:
    pipeline = build(counting_embedder)
    pipeline.ingest(corpus)
    gone = corpus / "faq.md"
    gone_source = str(gone.resolve())
    count_faq = sum(1 for v in snapshot(pipeline).values() if v[0] == gone_source)
    assert count_faq > 0
    gone.unlink()
    result = pipeline.ingest(corpus)
    assert result.removed_sources == (gone_source,)
    assert result.removed == count_faq
    assert gone_source not in pipeline.sources()
    assert all(v[0] != gone_source for v in snapshot(pipeline).values())


def test_remove_source_and_stats(corpus: Path, counting_embedder: CountingEmbedder) -> None:
    pipeline = build(counting_embedder)
    pipeline.ingest(corpus)
    total = pipeline.stats()["chunks"]
    removed = pipeline.remove_source(corpus / "faq.md")
    assert removed > 0
    stats = pipeline.stats()
    assert stats["chunks"] == total - removed
    assert stats["sources"] == 11
    assert stats["documents_ingested"] == 12
    pipeline.query("lamp")
    pipeline.query("warranty")
    assert pipeline.stats()["queries"] == 2
    assert pipeline.remove_source(corpus / "faq.md") == 0


def test_namespaces_share_a_store_without_seeing_each_other(corpus: Path) -> None:
    store = MemoryStore()
    first = build(CountingEmbedder(), store, namespace="first")
    second = build(CountingEmbedder(), store, namespace="second")
    first.ingest(corpus / "warranty.txt")
    second.ingest(corpus / "faq.md")
    assert {Path(r.source).name for r in first.query("lamp warranty years", top_k=50)} == {"warranty.txt"}
    assert {Path(r.source).name for r in second.query("lamp warranty years", top_k=50)} == {"faq.md"}
    first.remove_source(corpus / "faq.md")  # not first's: nothing happens to second
    assert second.store.count("second") > 0


def test_dimension_mismatch_names_both_dimensions(corpus: Path) -> None:
    store = MemoryStore()
    build(CountingEmbedder(dim=64), store).ingest(corpus / "faq.md")
    with pytest.raises(DimensionMismatchError, match="dimension 64.*dimension 32"):
        build(CountingEmbedder(dim=32), store)


def test_query_during_reingest_never_sees_a_source_missing_or_doubled(corpus: Path) -> None:
    pipeline = build(CountingEmbedder(), batch_size=4)  # many staged writes per source
    pipeline.ingest(corpus)
    target = corpus / "troubleshooting.md"
    source = str(target.resolve())
    expected = {len([v for v in snapshot(pipeline).values() if v[0] == source])}
    stop = threading.Event()
    problems: list[str] = []
    seen_counts: set[int] = set()
    completed = [0]
    answering = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                hits = pipeline.query("error code reset", top_k=500, filter={"source": source})
                ids = [h.chunk_id for h in hits]
                if len(ids) != len(set(ids)):
                    problems.append("doubled chunk ids")
                if not hits:
                    problems.append("source missing")
                seen_counts.add(len(hits))
                completed[0] += 1
                answering.set()
        except Exception as exc:  # noqa: BLE001 - a reader that dies must fail the test, not end it quietly
            problems.append(f"reader failed: {type(exc).__name__}: {exc}")
            answering.set()

    thread = threading.Thread(target=reader)
    thread.start()
    assert answering.wait(timeout=60), "the reader never completed a query"
    try:
        original = target.read_text(encoding="utf-8")
        for round_ in range(6):
            extra = "\n\nAppendix. " + " ".join(f"note{round_}-{i}" for i in range(40 * (round_ + 1)))
            target.write_text(original + extra, encoding="utf-8")
            result = pipeline.ingest(target)
            assert result.chunks > 0
            expected.add(pipeline.store.count("default") - sum(1 for v in snapshot(pipeline).values() if v[0] != source))
    finally:
        stop.set()
        thread.join()
    assert not problems, problems[:3]
    assert completed[0] > 0 and seen_counts, "the reader completed no query"
    assert seen_counts <= expected  # every observation is a whole generation


def test_failed_source_keeps_old_generation_and_skip_reports(corpus: Path) -> None:
    pipeline = build(CountingEmbedder(), on_error="skip")
    pipeline.ingest(corpus)
    before = snapshot(pipeline)
    (corpus / "faq.md").write_bytes(b"---\ntitle: [unclosed\n---\nbody")
    (corpus / "notes.xyz").write_text("no loader for me", encoding="utf-8")
    result = pipeline.ingest(corpus)
    assert [Path(f.source).name for f in result.failed] == ["faq.md"]
    assert "frontmatter" in result.failed[0].reason
    assert [Path(s).name for s in result.skipped] == ["notes.xyz"]
    assert snapshot(pipeline) == before  # nothing already stored is lost


def test_failed_source_with_on_error_fail_names_the_path(corpus: Path) -> None:
    pipeline = build(CountingEmbedder())
    (corpus / "faq.md").write_bytes(b"\xff\xfe not utf-8 \xff")
    with pytest.raises(LoaderError, match="faq.md"):
        pipeline.ingest(corpus)
    # files before faq.md in sorted order were committed whole; faq.md holds nothing half-written
    assert str((corpus / "faq.md").resolve()) not in pipeline.sources()


def test_single_document_changes_inside_a_source_keep_other_documents(tmp_path: Path) -> None:
    from ragloom import Document

    embedder = CountingEmbedder()
    pipeline = build(embedder)
    docs = [Document.create(f"document number {i} " * 20, "virtual://set", part=i) for i in range(5)]
    pipeline.ingest_documents(docs)
    before = snapshot(pipeline)
    changed = [*docs[:4], Document.create("a brand new text " * 20, "virtual://set", part=4)]
    texts = embedder.texts
    tally = pipeline.ingest_documents(changed)
    after = snapshot(pipeline)
    assert tally.unchanged == 4
    assert embedder.texts - texts == tally.chunks  # only document 4 was embedded
    kept = {k: v for k, v in before.items() if not k.startswith(docs[4].id)}
    assert {k: v for k, v in after.items() if not k.startswith(docs[4].id)} == kept



def test_memory_is_bounded_by_the_batch(tmp_path: Path) -> None:
    """Writes happen every batch_size chunks, not once per corpus."""

    class RecordingStore(MemoryStore):
        def __init__(self) -> None:
            super().__init__()
            self.write_sizes: list[int] = []

        def _stage_write(self, namespace, source, generation, chunks, vectors):  # type: ignore[no-untyped-def]
            self.write_sizes.append(len(chunks))
            super()._stage_write(namespace, source, generation, chunks, vectors)

    big = tmp_path / "big.txt"
    big.write_text("\n\n".join(f"Paragraph {i}. " + "word " * 50 for i in range(400)), encoding="utf-8")
    store = RecordingStore()
    pipeline = build(CountingEmbedder(), store, batch_size=32)
    result = pipeline.ingest(big)
    assert result.chunks > 300
    assert max(store.write_sizes) <= 32
    assert len(store.write_sizes) >= result.chunks // 32


def test_ingest_without_sources_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="nothing to ingest"):
        Pipeline.builder().build().ingest()


def test_missing_source_is_reported(tmp_path: Path) -> None:
    with pytest.raises(LoaderError, match="no such file"):
        Pipeline.builder().build().ingest(tmp_path / "nope.md")


def test_tags_are_added_and_filterable(corpus: Path) -> None:
    pipeline = build(CountingEmbedder())
    pipeline.ingest(corpus / "faq.md", tags=["public"])
    pipeline.ingest(corpus / "warranty.txt", tags=["legal"])
    hits = pipeline.query("lamp", top_k=100, filter={"tags": "legal"})
    assert hits and {Path(h.source).name for h in hits} == {"warranty.txt"}
    assert all(h.tags == ("legal",) for h in hits)


def test_empty_query_is_rejected() -> None:
    with pytest.raises(ConfigError):
        Pipeline.builder().build().query("   ")


def test_vectors_are_unit_length(corpus: Path) -> None:
    pipeline = build(CountingEmbedder())
    pipeline.ingest(corpus / "faq.md")
    chunks = pipeline.store.chunks("default")
    vectors = pipeline.store.get_vectors("default", [c.id for c in chunks])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_volatile_metadata_does_not_change_the_metadata_hash() -> None:
    from ragloom import Document, content_hash, metadata_hash

    first = Document.create("same page", "https://example.org/", metadata={"fetched_at": "2026-01-01T00:00:00Z", "title": "T"})
    later = Document.create("same page", "https://example.org/", metadata={"fetched_at": "2026-02-01T00:00:00Z", "title": "T"})
    retitled = Document.create("same page", "https://example.org/", metadata={"fetched_at": "2026-02-01T00:00:00Z", "title": "U"})
    assert metadata_hash(first) == metadata_hash(later) != metadata_hash(retitled)
    # the content hash covers text, chunker and embedder only: metadata and tags never re-embed
    tagged = Document.create("same page", "https://example.org/", tags=["beta"])
    assert content_hash(first, "c", "e") == content_hash(retitled, "c", "e") == content_hash(tagged, "c", "e")
    assert content_hash(first, "c", "e") != content_hash(first, "c2", "e") != content_hash(first, "c", "e2")
    assert metadata_hash(tagged) != metadata_hash(Document.create("same page", "https://example.org/"))


def test_loader_error_about_another_source_keeps_the_finished_source(tmp_path: Path) -> None:
    """A multi-source loader (a sitemap) that fails after its last page: that page is kept."""
    from ragloom import Document

    def pages():  # type: ignore[no-untyped-def]
        for i in range(3):
            yield Document.create(f"page {i} text " * 10, f"https://site.example/p{i}")
        raise LoaderError("1 of 4 URLs failed", source="https://site.example/sitemap.xml")

    pipeline = build(CountingEmbedder())
    with pytest.raises(LoaderError, match="sitemap.xml"):
        pipeline.ingest_documents(pages())
    assert pipeline.sources() == [f"https://site.example/p{i}" for i in range(3)]

    def broken_page():  # type: ignore[no-untyped-def]
        yield Document.create("half a page", "https://site.example/p9", part=0)
        raise LoaderError("connection reset", source="https://site.example/p9")

    with pytest.raises(LoaderError):
        pipeline.ingest_documents(broken_page())
    assert "https://site.example/p9" not in pipeline.sources()


def test_another_embedder_model_re_embeds_everything(corpus: Path) -> None:
    """The embedder's model id is part of the content hash (any embedder: the pipeline reads model_id)."""
    store = MemoryStore()
    first = Pipeline.builder().embedder("hash", dim=64).store(store).build()
    assert first.ingest(corpus).embedded > 0
    same = Pipeline.builder().embedder("hash", dim=64).store(store).build()
    assert same.ingest(corpus).embedded == 0
    other = Pipeline.builder().embedder("hash", dim=64, ngram_weight=0.0).store(store).build()
    assert other.embedder.model_id != first.embedder.model_id
    again = other.ingest(corpus)
    assert again.unchanged == 0 and again.embedded == store.count("default")


def _tagged(pipeline: Pipeline, tag: str) -> set[str]:
    return {Path(h.source).name for h in pipeline.query("lamp", top_k=500, filter={"tags": tag})}


def test_a_tag_over_an_unchanged_stored_corpus_is_applied_and_removed_without_embedding(corpus: Path) -> None:
    embedder = CountingEmbedder()
    pipeline = build(embedder)
    first = pipeline.ingest(corpus)
    vectors = snapshot(pipeline)
    calls, texts = embedder.calls, embedder.texts
    tagged = pipeline.ingest(corpus, tags=["beta"])
    assert (embedder.calls, embedder.texts) == (calls, texts)  # nothing embedded
    assert tagged.embedded == 0 and tagged.updated == first.documents and tagged.unchanged == 0 and tagged.removed == 0
    assert _tagged(pipeline, "beta") == {p.name for p in corpus.iterdir()}
    assert all(h.tags == ("beta",) for h in pipeline.query("lamp", top_k=500))
    assert snapshot(pipeline) == vectors  # same chunks, same vectors
    calls, texts = embedder.calls, embedder.texts  # (queries embed too)
    plain = pipeline.ingest(corpus)
    assert (embedder.calls, embedder.texts) == (calls, texts)
    assert plain.embedded == 0 and plain.updated == first.documents
    assert _tagged(pipeline, "beta") == set()
    texts = embedder.texts
    again = pipeline.ingest(corpus)
    assert again.updated == 0 and again.unchanged_sources == first.sources and embedder.texts == texts


def test_a_changed_frontmatter_field_updates_metadata_without_embedding(tmp_path: Path) -> None:
    page = tmp_path / "note.md"
    body = "# Lamp care\n\n" + "Clean the lamp glass with a soft cloth every week. " * 20
    page.write_text("---\nstatus: draft\nowner: ann\n---\n" + body, encoding="utf-8")
    other = tmp_path / "other.md"
    other.write_text("---\nstatus: draft\n---\nThe desk lamp needs a new bulb.", encoding="utf-8")
    embedder = CountingEmbedder()
    pipeline = build(embedder)
    pipeline.ingest(tmp_path)
    texts = embedder.texts
    page.write_text("---\nstatus: final\nowner: ann\n---\n" + body, encoding="utf-8")
    result = pipeline.ingest(tmp_path)
    assert embedder.texts == texts and result.embedded == 0
    assert result.updated == 1 and result.unchanged == 1 and result.unchanged_sources == 1
    final = pipeline.query("lamp", top_k=50, filter={"status": "final"})
    assert final and {Path(h.source).name for h in final} == {"note.md"}
    assert all(h.metadata["owner"] == "ann" for h in final)
    assert {Path(h.source).name for h in pipeline.query("lamp", top_k=50, filter={"status": "draft"})} == {"other.md"}
    texts = embedder.texts
    # a text change embeds again (only that document)
    page.write_text("---\nstatus: final\n---\nA new text about the lamp.", encoding="utf-8")
    result = pipeline.ingest(tmp_path)
    assert result.embedded == embedder.texts - texts > 0 and result.updated == 0


def test_ingest_reads_stored_states_in_batches(corpus: Path) -> None:
    class CountingStore(MemoryStore):
        def __init__(self) -> None:
            super().__init__()
            self.lookups: list[int] = []

        def source_states(self, namespace, sources):  # type: ignore[no-untyped-def]
            self.lookups.append(len(sources))
            return super().source_states(namespace, sources)

    store = CountingStore()
    pipeline = build(CountingEmbedder(), store)
    pipeline.ingest(corpus)
    pipeline.ingest(corpus)
    assert store.lookups == [12, 12]  # one call per ingest of the 12-file directory, not one per file


def test_commit_every_paces_the_session_flushes(corpus: Path) -> None:
    flushes: list[int] = []

    class FlushCountingStore(MemoryStore):
        def session(self, namespace):  # type: ignore[no-untyped-def]
            session = super().session(namespace)
            flush = session.flush
            session.flush = lambda: (flushes.append(1), flush())[1]  # type: ignore[method-assign]
            return session

    pipeline = build(CountingEmbedder(), FlushCountingStore(), commit_every=5, batch_size=10_000)
    result = pipeline.ingest(corpus)
    # after sources 5 and 10, then once before the sweep for vanished files (2 sources pending)
    assert result.sources == 12 and len(flushes) == 3
    with pytest.raises(ConfigError):
        build(CountingEmbedder(), commit_every=0)
