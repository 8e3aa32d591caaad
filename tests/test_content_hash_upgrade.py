"""A store written with the first form of content hash (before ``c2:``): re-ingesting it embeds nothing that did not change.

The older version that wrote the store is stood in for by patching the
pipeline's ``content_hash`` with :func:`legacy_content_hash` during the first
ingest; the upgrade itself (comparison, metadata-only update, changed text)
runs the real code against a real DuckDB file reopened by a new pipeline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import ragloom.pipeline
from ragloom import Document, LoaderError, Pipeline, check_document
from ragloom.types import CONTENT_HASH_PREFIX, legacy_content_hash


def _pipeline(store: str, path: Path) -> Pipeline:
    builder = Pipeline.builder().chunker("recursive", size=60, overlap=10).embedder("hash", dim=32)
    builder = builder.store("memory") if store == "memory" else builder.store("duckdb", path=str(path / "store.duckdb"))
    return builder.build()


def _documents(texts: dict[str, str], metadata: dict[str, str] | None = None) -> list[Document]:
    return [Document(id=key, text=text, source="corpus.jsonl", metadata={"lang": (metadata or {}).get(key, "en")}) for key, text in texts.items()]


def _stored_hashes(pipeline: Pipeline) -> dict[str, str]:
    return dict(pipeline.store.source_states(pipeline.namespace, ["corpus.jsonl"])["corpus.jsonl"].documents)


@pytest.mark.parametrize("store", ["memory", "duckdb"])
def test_first_form_hashes_are_read_on_upgrade(store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = {"a": "alpha beta gamma " * 8, "b": "delta epsilon zeta " * 8, "c": "eta theta iota " * 8}
    old = _pipeline(store, tmp_path)
    with monkeypatch.context() as patch:
        patch.setattr(ragloom.pipeline, "content_hash", legacy_content_hash)
        first = old.ingest_documents(_documents(texts))
    assert first.embedded > 0
    legacy = _stored_hashes(old)
    assert legacy and not any(h.startswith(CONTENT_HASH_PREFIX) for h in legacy.values())
    pipeline = old if store == "memory" else _pipeline(store, tmp_path)
    if store != "memory":
        old.close()

    unchanged = pipeline.ingest_documents(_documents(texts))
    assert (unchanged.unchanged, unchanged.embedded, unchanged.updated) == (3, 0, 0)
    assert _stored_hashes(pipeline) == legacy  # nothing rewritten

    retagged = pipeline.ingest_documents(_documents(texts, {"b": "fr"}))
    assert (retagged.unchanged, retagged.updated, retagged.embedded) == (2, 1, 0)  # metadata only: the vectors stay

    edited = pipeline.ingest_documents(_documents({**texts, "c": "a different text " * 8}, {"b": "fr"}))
    assert (edited.unchanged, edited.embedded > 0) == (2, True)
    hashes = _stored_hashes(pipeline)
    assert hashes["c"].startswith(CONTENT_HASH_PREFIX) and hashes["a"] == legacy["a"]

    again = pipeline.ingest_documents(_documents({**texts, "c": "a different text " * 8}, {"b": "fr"}))
    assert (again.unchanged, again.embedded) == (3, 0)
    assert pipeline.store.count(pipeline.namespace) == first.chunks - len(old.chunker.chunk(_documents(texts)[2])) + len(
        pipeline.chunker.chunk(_documents({"c": "a different text " * 8})[0])
    )
    pipeline.close()


def test_metadata_keys_that_do_not_compare_are_refused_naming_the_source() -> None:
    # the metadata hash sorts keys; keys of two types that do not compare used to crash the run with a raw TypeError
    pipeline = Pipeline.builder().embedder("hash", dim=16).store("memory").build()
    with pytest.raises(LoaderError, match=r"metadata cannot be stored as JSON \(TypeError") as raised:
        pipeline.ingest_documents([Document(id="d", text="hello", source="app:mixed", metadata={1: "x", "a": "y"})])
    assert raised.value.source == "app:mixed"
    with pytest.raises(LoaderError, match="metadata is not valid Unicode"):
        check_document(Document(id="d", text="hello", source="app:v", metadata={"fetched_at": "\ud800"}))  # volatile: unhashed, still stored
    result = pipeline.ingest_documents([Document(id="d", text="hello", source="app:ok", metadata={"1": "x", "a": "y"})])
    assert result.chunks == 1 and pipeline.sources() == ["app:ok"]
