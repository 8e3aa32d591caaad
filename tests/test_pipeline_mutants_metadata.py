"""What ``check_document`` / ``checked_metadata_hash`` accept and refuse, and how ``_SourceWriter.add`` reads stored hashes.

Written against the mutants of ``pipeline.py`` the rest of the pipeline
selection let through after 960eabd (the metadata check moved into
``checked_metadata_hash``, ``_SourceWriter.add`` compares stored content hashes
of both forms with ``same_content``):

- ``check_document`` called by a loader plugin on a sound document returns
  without error (its argument passed on);
- a key left out of the metadata hash (``fetched_at``, volatile) is still
  checked, because it is still stored: a lone surrogate there is refused with
  the index in the JSON that was checked, a sound value is accepted, and a new
  value alone changes nothing on re-ingest;
- a metadata check without a volatile key reports the index in the metadata
  hash's own JSON (keys sorted);
- a store written before ``c2:`` content hashes (the first form) is read on
  upgrade: an unchanged document embeds nothing, a re-tagged one keeps its
  vectors.

Real memory store, real hash embedder (counting its texts), real documents.
The first-form store is written by the same pipeline with ``content_hash``
patched to :func:`legacy_content_hash` for that first ingest only (standing in
for the older release that wrote it, as in ``test_content_hash_upgrade.py``);
everything checked afterwards runs the code as it is.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import CountingEmbedder

import ragloom.pipeline
from ragloom import Document, LoaderError, Pipeline, check_document
from ragloom.pipeline import checked_metadata_hash
from ragloom.stores.memory import MemoryStore
from ragloom.types import CONTENT_HASH_PREFIX, legacy_content_hash, metadata_hash


def build(embedder: CountingEmbedder) -> Pipeline:
    return Pipeline.builder().chunker("recursive", size=60, overlap=0).embedder(embedder).store(MemoryStore()).build()


def stored_hashes(pipeline: Pipeline, source: str) -> dict[str, str]:
    return dict(pipeline.store.source_states(pipeline.namespace, [source])[source].documents)


def stored_metadata(pipeline: Pipeline) -> list[dict[str, Any]]:
    """The metadata the documents gave each stored chunk (without the fields the chunker adds)."""
    added = {"documentId", "source", "order", "startOffset", "endOffset"}
    chunks = sorted(pipeline.store.chunks(pipeline.namespace), key=lambda c: c.id)  # type: ignore[attr-defined]
    return [{k: v for k, v in c.metadata.items() if k not in added} for c in chunks]


def test_check_document_accepts_a_sound_document_and_refuses_a_broken_one() -> None:
    sound = Document(
        id="d", text="hello", source="app:s", metadata={"lang": "en", "fetched_at": "2026-12-03T00:00:00Z"}, tags=("t",)
    )
    assert check_document(sound) is None
    assert check_document(Document(id="e", text="", source="app:e")) is None
    assert checked_metadata_hash(sound) == metadata_hash(sound)
    with pytest.raises(LoaderError) as raised:
        check_document(Document(id="d", text="bad \ud800", source="app:t"))
    assert raised.value.reason == "text is not valid Unicode (a lone surrogate or undecodable byte at index 4)"
    assert raised.value.source == "app:t"


def test_a_volatile_key_is_checked_though_left_out_of_the_hash() -> None:
    # [{"fetched_at": "\ud800"}, []]: the surrogate is character 17 of the JSON checked
    broken = Document(id="d", text="hello", source="app:v", metadata={"fetched_at": "\ud800"})
    with pytest.raises(LoaderError) as raised:
        check_document(broken)
    assert raised.value.reason == "metadata is not valid Unicode (a lone surrogate at index 17 of its JSON)"
    assert raised.value.source == "app:v"
    with pytest.raises(LoaderError) as raised:
        checked_metadata_hash(broken)
    assert raised.value.reason == "metadata is not valid Unicode (a lone surrogate at index 17 of its JSON)"

    # beside other keys and tags, unsorted: [{"lang": "en", "fetched_at": "\ud800"}, ["t"]] -> index 31
    beside = Document(id="d", text="hello", source="app:w", metadata={"lang": "en", "fetched_at": "\ud800"}, tags=("t",))
    embedder = CountingEmbedder(dim=32)
    pipeline = build(embedder)
    with pytest.raises(LoaderError) as raised:
        pipeline.ingest_documents([beside])
    assert raised.value.reason == "metadata is not valid Unicode (a lone surrogate at index 31 of its JSON)"
    assert raised.value.source == "app:w"
    assert pipeline.sources() == [] and embedder.texts == 0


def test_a_sound_volatile_key_is_stored_and_a_new_value_alone_changes_nothing() -> None:
    embedder = CountingEmbedder(dim=32)
    pipeline = build(embedder)

    def page(fetched_at: str) -> Document:
        return Document(
            id="p", text="a page of text.", source="https://example.org/p", metadata={"lang": "en", "fetched_at": fetched_at}
        )

    first = pipeline.ingest_documents([page("2026-12-01T00:00:00Z")])
    assert (first.documents, first.chunks, first.embedded, first.failed) == (1, 1, 1, ())
    assert stored_metadata(pipeline) == [{"lang": "en", "fetched_at": "2026-12-01T00:00:00Z"}]
    assert checked_metadata_hash(page("2026-12-01T00:00:00Z")) == checked_metadata_hash(page("2026-12-02T00:00:00Z"))

    again = pipeline.ingest_documents([page("2026-12-02T00:00:00Z")])
    assert (again.documents, again.unchanged, again.updated, again.embedded, again.failed) == (1, 1, 0, 0, ())
    assert embedder.texts == 1


def test_without_a_volatile_key_the_index_is_the_one_of_the_hashed_json() -> None:
    # the metadata hash's JSON sorts keys: [{"a": "x", "b": "\ud800"}, []] -> index 18 (unsorted it would be 8)
    document = Document(id="d", text="hello", source="app:m", metadata={"b": "\ud800", "a": "x"})
    with pytest.raises(LoaderError) as raised:
        build(CountingEmbedder(dim=32)).ingest_documents([document])
    assert raised.value.reason == "metadata is not valid Unicode (a lone surrogate at index 18 of its JSON)"
    assert raised.value.source == "app:m"


def test_a_store_of_first_form_content_hashes_is_read_without_embedding_again(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = {"a": "alpha beta gamma delta. " * 4, "b": "epsilon zeta eta theta. " * 4, "c": "iota kappa lambda mu. " * 4}

    def documents(lang_of_b: str = "en", text_of_c: str | None = None) -> list[Document]:
        changed = {**texts, "c": text_of_c or texts["c"]}
        return [
            Document(id=k, text=t, source="corpus.jsonl", metadata={"lang": lang_of_b if k == "b" else "en"})
            for k, t in changed.items()
        ]

    embedder = CountingEmbedder(dim=32)
    pipeline = build(embedder)
    with monkeypatch.context() as patch:  # the older release: first-form hashes
        patch.setattr(ragloom.pipeline, "content_hash", legacy_content_hash)
        first = pipeline.ingest_documents(documents())
    legacy = stored_hashes(pipeline, "corpus.jsonl")
    assert sorted(legacy) == ["a", "b", "c"] and not any(h.startswith(CONTENT_HASH_PREFIX) for h in legacy.values())
    fingerprint, model = pipeline.chunker.fingerprint, pipeline.embedder.model_id
    assert legacy == {d.id: legacy_content_hash(d, fingerprint, model) for d in documents()}
    embedded = embedder.texts
    assert embedded == first.chunks > 3

    unchanged = pipeline.ingest_documents(documents())
    assert (unchanged.documents, unchanged.unchanged, unchanged.updated, unchanged.embedded, unchanged.chunks) == (3, 3, 0, 0, 0)
    assert embedder.texts == embedded and stored_hashes(pipeline, "corpus.jsonl") == legacy

    retagged = pipeline.ingest_documents(documents(lang_of_b="fr"))
    assert (retagged.unchanged, retagged.updated, retagged.embedded) == (2, 1, 0)
    assert embedder.texts == embedded
    assert {m["lang"] for m in stored_metadata(pipeline)} == {"en", "fr"}

    edited = pipeline.ingest_documents(documents(lang_of_b="fr", text_of_c="nu xi omicron pi. " * 4))
    assert (edited.unchanged, edited.updated, edited.embedded > 0) == (2, 0, True)
    hashes = stored_hashes(pipeline, "corpus.jsonl")
    assert hashes["a"] == legacy["a"] and hashes["c"].startswith(CONTENT_HASH_PREFIX)
