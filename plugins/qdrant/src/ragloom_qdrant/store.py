"""The ``qdrant`` store: chunks as Qdrant points, one source generation visible at a time.

Every point carries its namespace (``ns``), its source's generation (``gen``),
``live`` and its chunk's ``source_type``. Searches, counts and reads see
``live`` points of ``source_type = "document"`` only (other rows an
application writes into the collection never come back). A stage
writes its points with ``live = false``; ``commit`` queues the source and the
session's ``flush`` makes each queued source visible in four steps, under the
store's lock (so readers of this process see the old generation or the new
one, never a mix):

1. record ``committed = G, pending = true`` (and the kept documents) in the
   source's manifest point, in ``<collection>_sources``: the commit point;
2. set ``live = true`` on the points of generation ``G``;
3. delete every other point of the source (except the live points of kept documents);
4. clear ``pending``.

Opening a store finishes steps 2-4 of every manifest still ``pending``, so a
crash anywhere leaves each source wholly old (before step 1) or wholly new.
Point ids are ``uuid5(namespace, chunk id, generation)``: a new generation
never overwrites the old one's points.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import QdrantClient, models

from ragloom.plugin import (
    CHUNKS,
    DOCUMENT_SOURCE_TYPE,
    VECTORS,
    Chunk,
    DimensionMismatchError,
    FilterNode,
    Result,
    SourceState,
    StoreError,
    check_write,
    matches,
    normalize_rows,
)
from ragloom_qdrant.config import QdrantStoreConfig
from ragloom_qdrant.filters import filter_fields, has_residual, translate

_IDS = uuid.UUID("6f1d3c1e-3a51-4d44-9a0e-6c1b0a9d2f10")
_PAYLOAD = ["chunk_id", "document_id", "index", "text", "start", "end", "source", "metadata", "tags", "content_hash", "metadata_hash", "source_type"]
#: payload fields with an index (the ones every read filters on, and the reserved filter keys)
_INDEXES: dict[str, models.PayloadSchemaType] = {
    "ns": models.PayloadSchemaType.KEYWORD,
    "live": models.PayloadSchemaType.BOOL,
    "source_type": models.PayloadSchemaType.KEYWORD,
    "gen": models.PayloadSchemaType.INTEGER,
    "source": models.PayloadSchemaType.KEYWORD,
    "document_id": models.PayloadSchemaType.KEYWORD,
    "chunk_id": models.PayloadSchemaType.KEYWORD,
    "tags": models.PayloadSchemaType.KEYWORD,
    "e": models.PayloadSchemaType.KEYWORD,
}


def point_id(namespace: str, chunk_id: str, generation: int) -> str:
    """The id of a chunk's point in one generation."""
    return str(uuid.uuid5(_IDS, f"{namespace}\x00{chunk_id}\x00{generation}"))


def manifest_id(namespace: str, source: str) -> str:
    """The id of a source's manifest point."""
    return str(uuid.uuid5(_IDS, f"{namespace}\x00{source}"))


def _eq(field: str, value: Any) -> models.FieldCondition:
    return models.FieldCondition(key=field, match=models.MatchValue(value=value))


def _visible(namespace: str) -> list[Any]:
    """Conditions of the points reads see: the namespace's live ingested content (``source_type = "document"``)."""
    return [_eq("ns", namespace), _eq("live", True), _eq("source_type", DOCUMENT_SOURCE_TYPE)]


def _any(field: str, values: Sequence[str]) -> models.FieldCondition:
    return models.FieldCondition(key=field, match=models.MatchAny(any=list(values)))


def _chunk(payload: dict[str, Any]) -> Chunk:
    return Chunk(
        id=payload["chunk_id"],
        document_id=payload["document_id"],
        index=int(payload["index"]),
        text=payload["text"],
        start=int(payload["start"]),
        end=int(payload["end"]),
        source=payload["source"],
        metadata=dict(payload.get("metadata") or {}),
        tags=tuple(payload.get("tags") or ()),
        content_hash=payload.get("content_hash", ""),
        metadata_hash=payload.get("metadata_hash", ""),
        source_type=payload.get("source_type", DOCUMENT_SOURCE_TYPE),
    )


def _result(payload: dict[str, Any], score: float) -> Result:
    return Result(
        chunk_id=payload["chunk_id"],
        document_id=payload["document_id"],
        text=payload["text"],
        score=float(score),
        source=payload["source"],
        metadata=dict(payload.get("metadata") or {}),
        span=(int(payload["start"]), int(payload["end"])),
        tags=tuple(payload.get("tags") or ()),
    )


class QdrantStore:
    """Chunks in one Qdrant collection (namespaces are a payload field), generations made visible atomically."""

    capabilities: frozenset[str]

    def __init__(self, config: QdrantStoreConfig | None = None, *, path: str | os.PathLike[str] | None = None, client: QdrantClient | None = None):
        self.config = config or QdrantStoreConfig()
        self.capabilities = frozenset({VECTORS, CHUNKS} if self.config.vectors else {CHUNKS})
        self.collection = self.config.collection
        self.manifest = f"{self.collection}_sources"
        self._lock = threading.RLock()
        self._dim: int | None = None
        self._indexed: set[str] = set()
        #: where the data lives (the local-mode folder), for files kept beside it; None for a server or memory
        self.location: Path | None = None
        try:
            if client is not None:
                self.client = client
            elif self.config.url is not None:
                key = os.environ.get(self.config.api_key.env) and self.config.api_key.get()
                self.client = QdrantClient(
                    url=self.config.url, api_key=key or None, timeout=int(self.config.timeout), prefer_grpc=self.config.prefer_grpc, check_compatibility=False
                )
            else:
                where = str(path) if path is not None else self.config.path
                if where == ":memory:":
                    self.client = QdrantClient(location=":memory:")
                else:
                    Path(where).mkdir(parents=True, exist_ok=True)
                    self.client = QdrantClient(path=where, force_disable_check_same_thread=True)
                    self.location = Path(where)
            self._open()
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - the client raises many kinds; all mean "cannot open"
            raise StoreError(f"qdrant store: cannot open {self.config.url or path or self.config.path}: {type(exc).__name__}: {exc}") from exc

    # ------------------------------------------------------------------ setup

    def _open(self) -> None:
        # payload indexes do nothing in local mode (qdrant-client warns): created on a server only
        self._server = type(getattr(self.client, "_client", None)).__name__ != "QdrantLocal"
        if not self.client.collection_exists(self.manifest):
            self.client.create_collection(self.manifest, vectors_config=models.VectorParams(size=1, distance=models.Distance.DOT))
            for field, schema in (("ns", models.PayloadSchemaType.KEYWORD), ("pending", models.PayloadSchemaType.BOOL)):
                self._create_index(self.manifest, field, schema)
        if self.client.collection_exists(self.collection):
            vectors = self.client.get_collection(self.collection).config.params.vectors
            size = getattr(vectors, "size", None)
            if size is None:
                raise StoreError(f"qdrant store: collection {self.collection!r} exists but has no single unnamed vector (not a ragloom collection)")
            self._dim = int(size)
        self._recover()

    def _ensure_collection(self, dim: int) -> None:
        if self._dim is not None:
            if dim != self._dim:
                raise DimensionMismatchError(store_dim=self._dim, embedder_dim=dim, where=f"qdrant collection {self.collection!r}")
            return
        self.client.create_collection(self.collection, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE))
        for field, schema in _INDEXES.items():
            self._create_index(self.collection, field, schema)
        self._dim = dim

    def _create_index(self, collection: str, field: str, schema: models.PayloadSchemaType) -> None:
        if self._server:
            self._call(f"creating the payload index {field}", self.client.create_payload_index, collection, field, field_schema=schema, wait=True)

    def _index_fields(self, fields: set[str]) -> None:
        """Payload indexes for the metadata fields a filter reads (created once, on first use)."""
        for field in sorted(fields - self._indexed):
            if field in _INDEXES:
                continue
            schema = models.PayloadSchemaType.FLOAT if field.startswith("n_") else models.PayloadSchemaType.KEYWORD
            self._create_index(self.collection, field, schema)
            self._indexed.add(field)

    def _call(self, what: str, function: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - chained into the store's error
            raise StoreError(f"qdrant store: {what} failed: {type(exc).__name__}: {exc}") from exc

    # ------------------------------------------------------------------ manifest

    def _manifests(self, namespace: str, sources: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not sources:
            return {}
        points = self._call("reading source manifests", self.client.retrieve, self.manifest, ids=[manifest_id(namespace, s) for s in sources], with_payload=True)
        return {p.payload["source"]: dict(p.payload) for p in points if p.payload}

    def _put_manifest(self, namespace: str, source: str, payload: dict[str, Any]) -> None:
        record = {"ns": namespace, "source": source, "committed": 0, "next": 0, "pending": False, "keep": [], **payload}
        point = models.PointStruct(id=manifest_id(namespace, source), vector=[1.0], payload=record)
        self._call("writing a source manifest", self.client.upsert, self.manifest, points=[point], wait=True)

    def _recover(self) -> None:
        """Finish the visibility flips a crash interrupted (manifests still ``pending``)."""
        offset = None
        while True:
            points, offset = self.client.scroll(self.manifest, scroll_filter=models.Filter(must=[_eq("pending", True)]), limit=256, offset=offset, with_payload=True)
            for point in points:
                payload = dict(point.payload or {})
                self._flip(payload["ns"], payload["source"], int(payload["committed"]), list(payload.get("keep") or ()), payload)
            if offset is None:
                return

    def _flip(self, namespace: str, source: str, generation: int, keep: list[str], manifest: dict[str, Any], ids: list[str] | None = None) -> None:
        """Steps 2-4 of a commit (see the module docstring); idempotent. ``ids``: the staged points, when known."""
        if self._dim is not None:
            mine: list[Any] = [_eq("ns", namespace), _eq("source", source)]
            staged: Any = models.Filter(must=[*mine, _eq("gen", generation), _eq("live", False)])
            if ids is not None:
                staged = models.PointIdsList(points=list[Any](ids))
            if ids is None or ids:
                self._call("making a generation visible", self.client.set_payload, self.collection, payload={"live": True}, points=staged, wait=True)
            spared: list[Any] = [_eq("gen", generation)]
            if keep:
                spared.append(models.Filter(must=[_eq("live", True), _any("document_id", keep)]))
            self._call("dropping the old generation", self.client.delete, self.collection, points_selector=models.Filter(must=mine, must_not=spared), wait=True)
        self._put_manifest(namespace, source, {**manifest, "committed": generation, "pending": False, "keep": []})

    # ------------------------------------------------------------------ reads

    def dimension(self) -> int | None:
        """Dimension of the collection's vectors, or None before the first write."""
        return self._dim

    def _live(self, namespace: str, node: FilterNode | None = None) -> models.Filter:
        """The filter of the visible points of ``namespace`` matching ``node`` (residual conditions resolved to ids)."""
        must: list[Any] = [*_visible(namespace)]
        translated, fields = translate(node)
        self._index_fields(fields)
        if translated is not None:
            must.append(translated)
        if has_residual(node):
            ids = []
            for point in self._scroll(models.Filter(must=must), ["chunk_id", "source", "document_id", "metadata", "tags"]):
                p = point.payload or {}
                if matches(node, metadata=p.get("metadata") or {}, source=p["source"], document_id=p["document_id"], tags=tuple(p.get("tags") or ())):
                    ids.append(point.id)
            must = [*_visible(namespace), models.HasIdCondition(has_id=ids)]
        return models.Filter(must=must)

    def _scroll(self, scroll_filter: models.Filter, payload: Any, *, vectors: bool = False, batch: int = 1024) -> Iterator[Any]:
        offset = None
        while True:
            points, offset = self._call(
                "scrolling points", self.client.scroll, self.collection, scroll_filter=scroll_filter, limit=batch, offset=offset, with_payload=payload, with_vectors=vectors
            )
            yield from points
            if offset is None:
                return

    def source_states(self, namespace: str, sources: Sequence[str]) -> dict[str, SourceState]:
        """Committed state of many sources: manifests by id, then one scroll of their live points."""
        wanted = list(dict.fromkeys(sources))
        with self._lock:
            manifests = self._manifests(namespace, wanted)
            documents: dict[str, dict[str, str]] = {s: {} for s in wanted}
            metadata: dict[str, dict[str, str]] = {s: {} for s in wanted}
            if self._dim is not None and wanted:
                for start in range(0, len(wanted), 512):
                    part = wanted[start : start + 512]
                    where = models.Filter(must=[*_visible(namespace), _any("source", part)])
                    for point in self._scroll(where, ["source", "document_id", "content_hash", "metadata_hash"]):
                        p = point.payload or {}
                        documents[p["source"]][p["document_id"]] = p.get("content_hash", "")
                        metadata[p["source"]][p["document_id"]] = p.get("metadata_hash", "")
        states = {}
        for source in wanted:
            manifest = manifests.get(source, {})
            committed = int(manifest.get("committed", 0))
            states[source] = SourceState(
                generation=committed,
                next_generation=max(committed, int(manifest.get("next", 0))) + 1,
                documents=documents[source],
                metadata=metadata[source],
            )
        return states

    def search(self, namespace: str, vector: np.ndarray, *, top_k: int, filter: FilterNode | None = None) -> list[Result]:
        """Top-k visible chunks by cosine similarity (Qdrant's ``query_points``)."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._lock:
            if self._dim is None or top_k <= 0:
                return []
            if query.shape[0] != self._dim:
                raise DimensionMismatchError(store_dim=self._dim, embedder_dim=query.shape[0], where=f"qdrant collection {self.collection!r}")
            where = self._live(namespace, filter)
            answer = self._call(
                "search", self.client.query_points, self.collection, query=normalize_rows(query).tolist(), query_filter=where, limit=top_k, with_payload=_PAYLOAD
            )
        return [_result(p.payload or {}, p.score) for p in answer.points]

    def get_vectors(self, namespace: str, chunk_ids: Sequence[str]) -> np.ndarray:
        """Stored (normalised) vectors of visible chunks, in the order asked."""
        if VECTORS not in self.capabilities:
            raise StoreError("this qdrant store is configured with vectors = false: it does not return stored vectors")
        with self._lock:
            found: dict[str, np.ndarray] = {}
            if self._dim is not None and chunk_ids:
                where = models.Filter(must=[*_visible(namespace), _any("chunk_id", list(dict.fromkeys(chunk_ids)))])
                for point in self._scroll(where, ["chunk_id"], vectors=True):
                    found[(point.payload or {})["chunk_id"]] = np.asarray(point.vector, dtype=np.float32)
        missing = [cid for cid in chunk_ids if cid not in found]
        if missing:
            raise StoreError(f"unknown chunk id(s): {', '.join(missing[:5])}")
        if not chunk_ids:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        return normalize_rows(np.stack([found[cid] for cid in chunk_ids]))

    def iter_chunks(self, namespace: str, *, batch_size: int = 1000) -> Iterator[list[Chunk]]:
        """The namespace's visible chunks, in batches of at most ``batch_size`` (one Qdrant scroll page each)."""
        if self._dim is None:
            return
        where = models.Filter(must=[*_visible(namespace)])
        offset = None
        while True:
            with self._lock:
                points, offset = self._call(
                    "scrolling chunks", self.client.scroll, self.collection, scroll_filter=where, limit=batch_size, offset=offset, with_payload=_PAYLOAD
                )
            if points:
                yield [_chunk(p.payload or {}) for p in points]
            if offset is None:
                return

    def _source_column(self, namespace: str) -> list[str]:
        if self._dim is None:
            return []
        return [(p.payload or {})["source"] for p in self._scroll(models.Filter(must=[*_visible(namespace)]), ["source"])]

    def sources(self, namespace: str) -> list[str]:
        """Sources with visible chunks, sorted."""
        with self._lock:
            return sorted(set(self._source_column(namespace)))

    def source_counts(self, namespace: str) -> dict[str, int]:
        """Visible chunks per source, sorted by source."""
        counts: dict[str, int] = {}
        with self._lock:
            for source in self._source_column(namespace):
                counts[source] = counts.get(source, 0) + 1
        return dict(sorted(counts.items()))

    def count(self, namespace: str) -> int:
        """Visible chunks in the namespace (Qdrant's exact count)."""
        with self._lock:
            if self._dim is None:
                return 0
            where = models.Filter(must=[*_visible(namespace)])
            return int(self._call("count", self.client.count, self.collection, count_filter=where, exact=True).count)

    def stats(self, namespace: str) -> dict[str, Any]:
        """Chunk, source and document counts, the dimension and where the data lives."""
        with self._lock:
            documents: set[str] = set()
            sources: set[str] = set()
            if self._dim is not None:
                for point in self._scroll(models.Filter(must=[*_visible(namespace)]), ["source", "document_id"]):
                    p = point.payload or {}
                    sources.add(p["source"])
                    documents.add(p["document_id"])
            return {
                "chunks": self.count(namespace),
                "sources": len(sources),
                "documents": len(documents),
                "dimension": self._dim,
                "collection": self.collection,
                "server": self.config.url or ("local: " + str(self.location) if self.location else "local: memory"),
            }

    # ------------------------------------------------------------------ writes

    def session(self, namespace: str) -> QdrantSession:
        """A write session; committed sources become visible when it flushes (or closes)."""
        return QdrantSession(self, namespace)

    def delete(self, namespace: str, filter: FilterNode | None) -> int:
        """Delete visible chunks matching ``filter``; a source left with none has no committed generation."""
        with self._lock:
            if self._dim is None:
                return 0
            ids: list[Any] = []
            touched: set[str] = set()
            for point in self._scroll(self._live(namespace, filter), ["source"]):
                ids.append(point.id)
                touched.add((point.payload or {})["source"])
            for start in range(0, len(ids), 4096):
                self._call("delete", self.client.delete, self.collection, points_selector=models.PointIdsList(points=ids[start : start + 4096]), wait=True)
            if touched:
                left = set(self._source_column(namespace)) if filter is not None else set()
                manifests = self._manifests(namespace, sorted(touched - left))
                for source, manifest in manifests.items():
                    self._put_manifest(namespace, source, {**manifest, "committed": 0})
            return len(ids)

    def _reserve(self, namespace: str, source: str, state: SourceState) -> int:
        with self._lock:
            manifest = self._manifests(namespace, [source]).get(source, {})
            generation = max(state.next_generation, int(manifest.get("committed", 0)) + 1, int(manifest.get("next", 0)) + 1)
            self._put_manifest(namespace, source, {**manifest, "next": generation})
            return generation

    def _points(self, namespace: str, generation: int, chunks: Sequence[Chunk], vectors: np.ndarray) -> list[models.PointStruct]:
        points = []
        for chunk, vector in zip(chunks, vectors.tolist(), strict=True):
            payload = {
                "ns": namespace,
                "live": False,
                "gen": generation,
                "chunk_id": chunk.id,
                "document_id": chunk.document_id,
                "index": chunk.index,
                "text": chunk.text,
                "start": chunk.start,
                "end": chunk.end,
                "source": chunk.source,
                "metadata": dict(chunk.metadata),
                "tags": list(chunk.tags),
                "content_hash": chunk.content_hash,
                "metadata_hash": chunk.metadata_hash,
                "source_type": chunk.source_type,
                **filter_fields(chunk.metadata),
            }
            points.append(models.PointStruct(id=point_id(namespace, chunk.id, generation), vector=vector, payload=payload))
        return points

    def _upsert(self, points: list[models.PointStruct]) -> None:
        size = self.config.batch_size
        for start in range(0, len(points), size):
            self._call("writing points", self.client.upsert, self.collection, points=points[start : start + size], wait=True)

    def _stage_write(self, namespace: str, generation: int, chunks: Sequence[Chunk], vectors: np.ndarray) -> list[str]:
        array = check_write(chunks, vectors)
        if not chunks:
            return []
        with self._lock:
            self._ensure_collection(int(array.shape[1]))
            points = self._points(namespace, generation, chunks, normalize_rows(array))
            self._upsert(points)
            return [str(p.id) for p in points]

    def _stage_update(self, namespace: str, source: str, generation: int, chunks: Sequence[Chunk]) -> list[str]:
        if not chunks:
            return []
        with self._lock:
            stored: dict[str, np.ndarray] = {}
            if self._dim is not None:
                where = models.Filter(must=[*_visible(namespace), _eq("source", source), _any("chunk_id", [c.id for c in chunks])])
                for point in self._scroll(where, ["chunk_id"], vectors=True):
                    stored[(point.payload or {})["chunk_id"]] = np.asarray(point.vector, dtype=np.float32)
            missing = [c.id for c in chunks if c.id not in stored]
            if missing:
                raise StoreError(f"update_metadata of {source}: no stored chunk {', '.join(missing[:5])}")
            points = self._points(namespace, generation, chunks, np.stack([stored[c.id] for c in chunks]))
            self._upsert(points)
            return [str(p.id) for p in points]

    def _removed_by(self, namespace: str, source: str, spared: Collection[str]) -> int:
        """Visible chunks of ``source`` a commit removes (all but the spared documents')."""
        if self._dim is None:
            return 0
        where = models.Filter(must=[*_visible(namespace), _eq("source", source)], must_not=[_any("document_id", list(spared))] if spared else None)
        return int(self._call("count", self.client.count, self.collection, count_filter=where, exact=True).count)

    def _abort(self, namespace: str, source: str, generation: int) -> None:
        with self._lock:
            if self._dim is None:
                return
            where = models.Filter(must=[_eq("ns", namespace), _eq("source", source), _eq("gen", generation), _eq("live", False)])
            self._call("dropping an aborted stage", self.client.delete, self.collection, points_selector=where, wait=True)

    def _publish(self, namespace: str, commits: Sequence[tuple[str, int, list[str], list[str]]]) -> None:
        """Make each committed source visible (steps 1-4), readers of this process locked out per source."""
        for source, generation, keep, ids in commits:
            with self._lock:
                manifest = self._manifests(namespace, [source]).get(source, {})
                record = {**manifest, "committed": generation, "next": max(generation, int(manifest.get("next", 0))), "pending": True, "keep": keep}
                self._put_manifest(namespace, source, record)
                self._flip(namespace, source, generation, keep, record, ids)

    def close(self) -> None:
        """Close the client (releases the local-mode folder's lock)."""
        with self._lock:
            try:
                self.client.close()
            except Exception:  # noqa: BLE001 - closing twice or a dead server: nothing left to release
                pass


class QdrantStage:
    """A staged generation of one source."""

    def __init__(self, session: QdrantSession, source: str, generation: int, state: SourceState):
        self.source = source
        self.generation = generation
        self.state = state
        self._session = session
        self._keep: set[str] = set()
        self._carried: set[str] = set()
        self._ids: list[str] = []
        self._done = False

    def _check(self, action: str) -> None:
        if self._done:
            raise StoreError(f"cannot {action}: the stage of {self.source} (generation {self.generation}) is already closed")

    def _check_sources(self, chunks: Sequence[Chunk]) -> None:
        stray = next((c.source for c in chunks if c.source != self.source), None)
        if stray is not None:
            raise StoreError(f"a chunk of {stray!r} was staged for the source {self.source!r}")

    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Stage chunks (invisible until the session flushes after :meth:`commit`)."""
        self._check("write")
        self._check_sources(chunks)
        self._ids += self._session.store._stage_write(self._session.namespace, self.generation, chunks, vectors)

    def keep(self, document_ids: Collection[str]) -> None:
        """Documents whose stored chunks stay in the new generation."""
        self._check("keep documents")
        self._keep.update(document_ids)

    def update_metadata(self, chunks: Sequence[Chunk]) -> None:
        """Carry stored chunks (and their vectors) into the new generation with new metadata."""
        self._check("update metadata")
        self._check_sources(chunks)
        self._ids += self._session.store._stage_update(self._session.namespace, self.source, self.generation, chunks)
        self._carried.update(c.document_id for c in chunks)

    def commit(self) -> int:
        """Queue the generation for the session's next flush; return the visible chunks it removes."""
        self._check("commit")
        self._done = True
        session = self._session
        session._open.pop(id(self), None)
        removed = session.store._removed_by(session.namespace, self.source, self._keep | self._carried)
        session._committed.append((self.source, self.generation, sorted(self._keep - self._carried), list(dict.fromkeys(self._ids))))
        return removed

    def abort(self) -> None:
        """Drop the staged points (a closed stage ignores it)."""
        if self._done:
            return
        self._done = True
        self._session._open.pop(id(self), None)
        self._session.store._abort(self._session.namespace, self.source, self.generation)


class QdrantSession:
    """Write session: commits are queued and made visible, source by source, when it flushes."""

    def __init__(self, store: QdrantStore, namespace: str):
        self.store = store
        self.namespace = namespace
        self._open: dict[int, QdrantStage] = {}
        self._committed: list[tuple[str, int, list[str], list[str]]] = []
        self._closed = False

    def stage(self, source: str, state: SourceState | None = None) -> QdrantStage:
        """Start a new generation of ``source`` (a commit of it still queued is flushed first)."""
        if self._closed:
            raise StoreError("the write session is closed")
        if any(queued == source for queued, *_ in self._committed):
            self.flush()
            state = None
        if state is None:
            state = self.store.source_states(self.namespace, [source])[source]
        stage = QdrantStage(self, source, self.store._reserve(self.namespace, source, state), state)
        self._open[id(stage)] = stage
        return stage

    def flush(self) -> None:
        """Make every source committed so far visible."""
        if self._closed:
            raise StoreError("the write session is closed")
        self._publish()

    def _publish(self) -> None:
        while self._committed:
            self.store._publish(self.namespace, [self._committed[0]])
            self._committed.pop(0)

    def close(self) -> None:
        """Abort the stages not committed, then publish the committed ones."""
        if self._closed:
            return
        self._closed = True
        for stage in list(self._open.values()):
            stage.abort()
        self._publish()

    def __enter__(self) -> QdrantSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
