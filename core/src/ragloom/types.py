"""The data model: dependency-free frozen records.

Vectors never live inside these records; they travel beside them as float32
numpy batches (row ``i`` belongs to chunk ``i``).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import attrs


def _freeze_tags(value: Any) -> tuple[str, ...]:
    if type(value) is tuple and (not value or all(type(v) is str for v in value)):
        return value  # already frozen (every Chunk of a Document passes its tags on): no copy
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def make_document_id(source: str, part: str | int | None = None) -> str:
    """Stable id of a document: its source, plus the row / item / page inside it."""
    key = source if part is None else f"{source}\x00{part}"
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:24]  # a non-UTF-8 file name hashes by its bytes


def make_chunk_id(document_id: str, index: int) -> str:
    """Stable id of a chunk: its document id plus its position."""
    return f"{document_id}:{index}"


@attrs.frozen(kw_only=True)
class Document:
    """One loaded unit of text: a file, a row, a page, a JSON item."""

    id: str
    text: str
    source: str
    metadata: dict[str, Any] = attrs.field(factory=dict)
    tags: tuple[str, ...] = attrs.field(factory=tuple, converter=_freeze_tags)

    @classmethod
    def create(
        cls,
        text: str,
        source: str,
        *,
        part: str | int | None = None,
        metadata: dict[str, Any] | None = None,
        tags: Any = (),
    ) -> Document:
        """Build a document whose id derives from ``source`` (+ ``part``)."""
        return cls(
            id=make_document_id(source, part),
            text=text,
            source=source,
            metadata=dict(metadata or {}),
            tags=tags,
        )


#: The ``source_type`` of ingested content: the only kind of row retrieval sees.
DOCUMENT_SOURCE_TYPE = "document"


@attrs.frozen(kw_only=True, weakref_slot=False)  # no __weakref__ slot: see ChunkLayout
class Chunk:
    """A span of a document: ``document.text[start:end] == text``."""

    id: str
    document_id: str
    index: int
    text: str
    start: int
    end: int
    source: str = ""
    metadata: dict[str, Any] = attrs.field(factory=dict)
    tags: tuple[str, ...] = attrs.field(factory=tuple, converter=_freeze_tags)
    content_hash: str = ""
    metadata_hash: str = ""
    #: what kind of row this is: ``"document"`` for ingested content; stores scope every
    #: read to ``"document"`` rows, so other rows an application writes into the same
    #: table (agent memory, say) never come back as results. Not part of either hash.
    source_type: str = DOCUMENT_SOURCE_TYPE


class ChunkLayout:
    """:class:`Chunk`'s slots without attrs' frozen ``__setattr__``: the bulk builders' fast path.

    Building a Chunk through its attrs ``__init__`` costs one ``object.__setattr__``
    call per field, which dominates chunking once offsets are computed. A bulk
    builder instead fills a ``ChunkLayout`` with plain slot stores and then sets
    its ``__class__`` to ``Chunk``: the result is an ordinary, frozen ``Chunk``
    (equal, hashed and printed alike). Only when :data:`FAST_CHUNKS` is true —
    the two classes share their layout field for field and this Python accepts
    the ``__class__`` assignment — otherwise builders call ``Chunk(...)``.
    """

    __slots__ = tuple(field.name for field in attrs.fields(Chunk))
    id: str
    document_id: str
    index: int
    text: str
    start: int
    end: int
    source: str
    metadata: dict[str, Any]
    tags: tuple[str, ...]
    content_hash: str
    metadata_hash: str
    source_type: str


def _retyping_works() -> bool:
    if getattr(Chunk, "__slots__", None) != ChunkLayout.__slots__:  # the same slots in the same order, nothing more
        return False
    probe = object.__new__(ChunkLayout)
    try:
        probe.__class__ = Chunk  # type: ignore[assignment]
    except TypeError:
        return False
    return True


#: Whether a filled :class:`ChunkLayout` may be retyped to :class:`Chunk` (else builders call ``Chunk(...)``).
FAST_CHUNKS = _retyping_works()


def with_hashes(chunk: Chunk, content_hash: str, metadata_hash: str) -> Chunk:
    """A copy of ``chunk`` carrying the two hashes (``attrs.evolve`` without its per-field introspection: ingest's hot path)."""
    if FAST_CHUNKS:
        copy = object.__new__(ChunkLayout)
        copy.id = chunk.id
        copy.document_id = chunk.document_id
        copy.index = chunk.index
        copy.text = chunk.text
        copy.start = chunk.start
        copy.end = chunk.end
        copy.source = chunk.source
        copy.metadata = chunk.metadata
        copy.tags = chunk.tags
        copy.content_hash = content_hash
        copy.metadata_hash = metadata_hash
        copy.source_type = chunk.source_type
        copy.__class__ = Chunk  # type: ignore[assignment]
        return copy  # type: ignore[return-value]
    return Chunk(
        id=chunk.id,
        document_id=chunk.document_id,
        index=chunk.index,
        text=chunk.text,
        start=chunk.start,
        end=chunk.end,
        source=chunk.source,
        metadata=chunk.metadata,
        tags=chunk.tags,
        content_hash=content_hash,
        metadata_hash=metadata_hash,
        source_type=chunk.source_type,
    )


#: Metadata keys that locate a document inside its file (CSV row and line, JSONL line, JSON item, PDF page).
LOCATOR_KEYS = ("row", "item", "line", "page")


@attrs.frozen(kw_only=True)
class Result:
    """A retrieved chunk with everything needed to cite it."""

    chunk_id: str
    document_id: str
    text: str
    score: float
    source: str
    metadata: dict[str, Any] = attrs.field(factory=dict)
    span: tuple[int, int] = (0, 0)
    tags: tuple[str, ...] = attrs.field(factory=tuple, converter=_freeze_tags)

    def with_score(self, score: float, **extra_metadata: Any) -> Result:
        """A copy with another score, optionally adding metadata keys."""
        metadata = {**self.metadata, **extra_metadata} if extra_metadata else self.metadata
        return attrs.evolve(self, score=float(score), metadata=metadata)

    @property
    def locator(self) -> str:
        """Where the document sits in a file holding many (``row 3, line 4``, ``line 7``, ``item 2``, ``page 5``), or ``""``."""
        return ", ".join(f"{key} {self.metadata[key]}" for key in LOCATOR_KEYS if key in self.metadata)

    def citation(self) -> str:
        """``source[start:end]``, or ``source (row 3, line 4) [start:end]`` for a record of a multi-document file.

        The span indexes the document's text: the whole file for a text file,
        the row or record for CSV, JSON and JSONL files, the page for a PDF.
        """
        span = f"[{self.span[0]}:{self.span[1]}]"
        locator = self.locator
        return f"{self.source} ({locator}) {span}" if locator else f"{self.source}{span}"


@attrs.frozen(kw_only=True)
class Failure:
    """A source that could not be ingested, and why."""

    source: str
    reason: str
    error: str = ""


@attrs.frozen(kw_only=True)
class IngestTarget:
    """One source an ingest call was given: a path, directory or URL, a forced loader, extra tags."""

    source: str
    loader: str | None = None
    tags: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class IngestResult:
    """What one ``Pipeline.ingest`` call did."""

    documents: int = 0
    chunks: int = 0
    unchanged: int = 0
    updated: int = 0
    removed: int = 0
    embedded: int = 0
    sources: int = 0
    unchanged_sources: int = 0
    removed_sources: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    failed: tuple[Failure, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return attrs.asdict(self, recurse=True, value_serializer=lambda _i, _a, v: list(v) if isinstance(v, tuple) else v)


#: Metadata keys that change on every load without changing the content (left out of the metadata hash).
VOLATILE_METADATA_KEYS = frozenset({"fetched_at"})


#: ``json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)``, built once (not per call).
_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)
#: The C string escaper that encoder uses for every string (``ensure_ascii=False``).
_QUOTE: Any = getattr(json.encoder, "c_encode_basestring", None) or json.encoder.py_encode_basestring


def _digest(payload: Any) -> str:
    return hashlib.sha256(_ENCODER.encode(payload).encode("utf-8")).hexdigest()


#: ``", <second quoted>, <third quoted>]"`` of recent legacy content-hash calls (the same chunker and embedder, document after document).
_TAILS: dict[tuple[str, str], str] = {}


def _digest_strings(first: str, second: str, third: str) -> str:
    """``_digest([first, second, third])`` for three strings, without the encoder's per-call setup."""
    if type(first) is str and type(second) is str and type(third) is str:
        tail = _TAILS.get((second, third))
        if tail is None:
            if len(_TAILS) > 64:
                _TAILS.clear()
            tail = _TAILS[(second, third)] = f", {_QUOTE(second)}, {_QUOTE(third)}]"
        return hashlib.sha256(f"[{_QUOTE(first)}{tail}".encode()).hexdigest()
    return _digest([first, second, third])


#: What content hashes begin with (the first form, still read, is 64 hex digits: :func:`legacy_content_hash`).
CONTENT_HASH_PREFIX = "c2:"
#: sha256 already fed the length-prefixed chunker fingerprint and embedder model id, per pair seen recently.
_HEADS: dict[tuple[str, str], Any] = {}


def content_hash(document: Document, chunker_fingerprint: str, embedder_model_id: str) -> str:
    """Hash of everything that decides a document's chunk texts and vectors.

    Text, chunker fingerprint and embedder model id only: metadata and tags are
    in :func:`metadata_hash`, so changing them updates the stored chunks
    without embedding anything again. ``"c2:"`` + sha256 of the two ids, each
    prefixed with its UTF-8 length, then the UTF-8 text: no quoting of the text
    (JSON-quoting 2 kB cost 5× the hash itself).
    """
    key = (chunker_fingerprint, embedder_model_id)
    head = _HEADS.get(key)
    if head is None:
        if len(_HEADS) > 64:
            _HEADS.clear()
        fingerprint, model = chunker_fingerprint.encode(), embedder_model_id.encode()
        head = _HEADS[key] = hashlib.sha256(b"%d:%s%d:%s" % (len(fingerprint), fingerprint, len(model), model))
    digest = head.copy()
    digest.update(document.text.encode())
    return CONTENT_HASH_PREFIX + digest.hexdigest()


def legacy_content_hash(document: Document, chunker_fingerprint: str, embedder_model_id: str) -> str:
    """The first form of content hash, which stores written before ``c2:`` hold: sha256 of ``json.dumps([text, fingerprint, model id])``."""
    return _digest_strings(document.text, chunker_fingerprint, embedder_model_id)


def same_content(stored: str | None, document: Document, chunker_fingerprint: str, embedder_model_id: str, digest: str) -> bool:
    """Whether a stored content hash (of either form) is ``document``'s; ``digest`` is its :func:`content_hash`."""
    if stored == digest:
        return True
    # a hash of the first form is checked the first way: upgrading never re-embeds an unchanged document
    return stored is not None and not stored.startswith(CONTENT_HASH_PREFIX) and stored == legacy_content_hash(document, chunker_fingerprint, embedder_model_id)


def metadata_hash(document: Document) -> str:
    """Hash of a document's metadata and tags.

    Keys in :data:`VOLATILE_METADATA_KEYS` (such as a web page's ``fetched_at``)
    are left out, so re-fetching an unchanged page updates nothing.
    """
    if not document.metadata and not document.tags:
        return _EMPTY_METADATA_HASH
    metadata = {k: v for k, v in document.metadata.items() if k not in VOLATILE_METADATA_KEYS}
    return _digest([metadata, list(document.tags)])


_EMPTY_METADATA_HASH = _digest([{}, []])


def chunk_result(chunk: Chunk, score: float) -> Result:
    """The search result of a stored chunk (its metadata copied, so callers may change it)."""
    return Result(
        chunk_id=chunk.id,
        document_id=chunk.document_id,
        text=chunk.text,
        score=score,
        source=chunk.source,
        metadata=dict(chunk.metadata),
        span=(chunk.start, chunk.end),
        tags=chunk.tags,
    )
