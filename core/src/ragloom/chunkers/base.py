"""The Chunker contract and the helpers every chunker shares.

A chunker turns a Document into Chunks with exact offsets:
``document.text[chunk.start:chunk.end] == chunk.text``. Its ``fingerprint``
names it and every option that changes its output; the fingerprint is part of
each stored chunk's content hash, so changing an option re-embeds on the next
ingest. Chunk ids derive from the document id and the chunk's position.

Most chunkers only compute ``(start, end)`` spans; :func:`spans_to_chunks`
does the rest (ids, metadata: the document's metadata plus ``documentId``,
``source``, ``order``, ``startOffset``, ``endOffset``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

import attrs

from ragloom.types import DOCUMENT_SOURCE_TYPE, FAST_CHUNKS, Chunk, ChunkLayout, Document


@runtime_checkable
class Chunker(Protocol):
    """Splits documents into chunks."""

    fingerprint: str

    def chunk(self, document: Document) -> list[Chunk]:
        """Chunks in document order, with exact offsets."""


def fingerprint_of(name: str, config: Any, version: int = 1) -> str:
    """``name:v1:{options as sorted JSON}`` for an attrs config object."""
    options = attrs.asdict(config) if config is not None and attrs.has(type(config)) else {}
    return f"{name}:v{version}:" + json.dumps(options, sort_keys=True, default=str, separators=(",", ":"))


def spans_to_chunks(
    document: Document,
    spans: Iterable[tuple[int, int]],
    extra_metadata: Iterable[dict[str, Any]] | None = None,
) -> list[Chunk]:
    """Build Chunks for ``(start, end)`` spans of ``document.text``.

    Hot path of every ingest: the document's fields are read once, and each
    chunk's metadata is one dict display (the document's metadata, then the
    extras, then the locator keys: the same keys in the same order as
    ``dict.update`` would give).
    """
    text, doc_id, source, tags, base = document.text, document.id, document.source, document.tags, document.metadata
    extras = list(extra_metadata) if extra_metadata is not None else None
    if extras is None and FAST_CHUNKS:
        return _layout_chunks(text, doc_id, source, tags, {**base, "documentId": doc_id, "source": source}, spans)
    chunks: list[Chunk] = []
    append = chunks.append
    for index, (start, end) in enumerate(spans):
        if extras is not None:
            metadata = {**base, **extras[index], "documentId": doc_id, "source": source, "order": index, "startOffset": start, "endOffset": end}
        else:
            metadata = {**base, "documentId": doc_id, "source": source, "order": index, "startOffset": start, "endOffset": end}
        append(
            Chunk(
                id=f"{doc_id}:{index}",  # make_chunk_id, inlined
                document_id=doc_id,
                index=index,
                text=text[start:end],
                start=start,
                end=end,
                source=source,
                metadata=metadata,
                tags=tags,
            )
        )
    return chunks


def _layout_chunks(
    text: str, doc_id: str, source: str, tags: tuple[str, ...], prefix: dict[str, Any], spans: Iterable[tuple[int, int]]
) -> list[Chunk]:
    """:func:`spans_to_chunks` without extras, filling :class:`ChunkLayout` records (see there).

    ``prefix`` is the document's metadata plus ``documentId`` and ``source``;
    each chunk's metadata is a copy of it with ``order`` and the offsets set,
    which gives the same keys in the same order as the dict display above.
    """
    chunks: list[Chunk] = []
    append = chunks.append
    new = object.__new__
    layout = ChunkLayout
    for index, (start, end) in enumerate(spans):
        metadata = prefix.copy()
        metadata["order"] = index
        metadata["startOffset"] = start
        metadata["endOffset"] = end
        chunk = new(layout)
        chunk.id = f"{doc_id}:{index}"  # make_chunk_id, inlined
        chunk.document_id = doc_id
        chunk.index = index
        chunk.text = text[start:end]
        chunk.start = start
        chunk.end = end
        chunk.source = source
        chunk.metadata = metadata
        chunk.tags = tags
        chunk.content_hash = ""
        chunk.metadata_hash = ""
        chunk.source_type = DOCUMENT_SOURCE_TYPE
        chunk.__class__ = Chunk  # type: ignore[assignment]
        append(chunk)  # type: ignore[arg-type]
    return chunks


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink a span so it neither starts nor ends with whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def drop_contained(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Drop empty spans and spans inside their predecessor (overlap must add text).

    A span starting where its predecessor starts and reaching further covers
    it (after trimming, only whitespace told them apart): it replaces it.
    """
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if end <= start:
            continue
        if out and start >= out[-1][0] and end <= out[-1][1]:
            continue
        if out and start == out[-1][0]:
            out.pop()
        out.append((start, end))
    return out


def check_sizes(size: int, overlap: int, size_unit: str = "chars", tokenizer: str = "") -> None:
    """Shared validation of the sizing options."""
    if overlap >= size:
        raise ValueError(f"'overlap' ({overlap}) must be smaller than 'size' ({size})")
    if size_unit == "tokens" and not tokenizer:
        raise ValueError("size_unit = 'tokens' needs 'tokenizer' (a tokenizer.json path or 'tiktoken:NAME')")


def check_separators(separators: tuple[str, ...]) -> None:
    """Shared validation of a separator list."""
    if any(not s for s in separators):
        raise ValueError("'separators' must not contain an empty string")
