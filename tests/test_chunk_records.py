"""The ingest hot path's record builders give exactly what the plain attrs/dict formulation gives."""

from __future__ import annotations

from typing import Any

import attrs

from ragloom.chunkers.base import spans_to_chunks
from ragloom.types import Chunk, Document, make_chunk_id, with_hashes


def every_field_set() -> Chunk:
    """A chunk whose every field differs from its default (fields added later included)."""
    values: dict[str, Any] = {}
    for field in attrs.fields(Chunk):
        if field.name in ("index", "start", "end"):
            values[field.name] = 3
        elif field.name == "metadata":
            values[field.name] = {"k": "v"}
        elif field.name == "tags":
            values[field.name] = ("a", "b")
        else:
            values[field.name] = f"value-of-{field.name}"
    return Chunk(**values)


def test_with_hashes_equals_attrs_evolve_on_every_field() -> None:
    chunk = every_field_set()
    fast = with_hashes(chunk, "content", "meta")
    assert fast == attrs.evolve(chunk, content_hash="content", metadata_hash="meta")
    assert attrs.asdict(fast) == attrs.asdict(attrs.evolve(chunk, content_hash="content", metadata_hash="meta"))


def reference_spans_to_chunks(document: Document, spans: list[tuple[int, int]], extras: list[dict[str, Any]] | None) -> list[Chunk]:
    """The formulation before the hot-path rewrite: dict copy + update per chunk."""
    chunks = []
    for index, (start, end) in enumerate(spans):
        metadata = dict(document.metadata)
        if extras is not None:
            metadata.update(extras[index])
        metadata.update(documentId=document.id, source=document.source, order=index, startOffset=start, endOffset=end)
        chunks.append(
            Chunk(
                id=make_chunk_id(document.id, index),
                document_id=document.id,
                index=index,
                text=document.text[start:end],
                start=start,
                end=end,
                source=document.source,
                metadata=metadata,
                tags=document.tags,
            )
        )
    return chunks


def test_spans_to_chunks_matches_the_reference_including_metadata_key_order() -> None:
    # the document's metadata already has a locator key ("source"): its position is kept, its value replaced
    document = Document.create("alpha beta gamma delta", "notes/a.md", metadata={"source": "old", "lang": "en"}, tags=["x", "y"])
    spans = [(0, 10), (6, 16), (11, 22)]
    extras = [{"heading": "A"}, {"heading": "B", "lang": "de"}, {}]
    for extra in (None, extras):
        fast = spans_to_chunks(document, spans, extra)
        slow = reference_spans_to_chunks(document, spans, extra)
        assert fast == slow
        assert [list(c.metadata) for c in fast] == [list(c.metadata) for c in slow]
        assert all(c.tags == ("x", "y") for c in fast)
    # every chunk owns its metadata dict: changing one never changes another or the document
    chunks = spans_to_chunks(document, spans)
    chunks[0].metadata["lang"] = "fr"
    assert chunks[1].metadata["lang"] == "en" and document.metadata["lang"] == "en"


def test_tags_given_as_a_list_or_non_strings_are_still_frozen_to_strings() -> None:
    assert Chunk(id="a:0", document_id="a", index=0, text="t", start=0, end=1, tags=["x", 2]).tags == ("x", "2")  # type: ignore[list-item]
    assert Chunk(id="a:0", document_id="a", index=0, text="t", start=0, end=1, tags=("x", 2)).tags == ("x", "2")  # type: ignore[arg-type]
    assert Chunk(id="a:0", document_id="a", index=0, text="t", start=0, end=1, tags="solo").tags == ("solo",)  # type: ignore[arg-type]
