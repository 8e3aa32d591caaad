"""The ``qdrant`` store: chunks as Qdrant points, one source generation visible at a time.

Every point carries its namespace (``ns``), its source's generation (``gen``),
``live`` and its chunk's ``source_type``; reads see the committed points of
``source_type = "document"`` only. Each source has a *manifest* point in
``<collection>_sources``: its committed generation, the generations handed
out, and its documents (content and metadata hashes, generation, chunk ids).
Per-source work (states, the points a commit replaces, stored vectors for a
metadata update) reads the manifest and addresses points by id; it never
scans the collection.

A stage writes its points under a new generation ``G`` (recorded in the
manifest's ``staged`` list first); ``commit`` queues the source and the
session's ``flush`` makes it visible under the store's lock (readers of this
process see the old generation or the new one, never a mix):

1. the manifest records ``committed = G, pending = true``, the new documents
   and the ids of the points being replaced (``drop``): the commit point;
2. on a shared Qdrant (a server), ``live = true`` is set on the points of ``G``;
3. the replaced points are deleted (on a shared Qdrant also the source's other
   ``live = false`` points: stages a killed writer left behind);
4. ``pending`` is cleared.

Opening a store finishes every manifest still ``pending``, so a crash anywhere
leaves each source wholly old (before step 1) or wholly new.

Two ways of hiding what is not committed:

- **shared** (a server, or a client passed in): points are written with
  ``live = false`` and every read filters on ``ns``, ``live`` and
  ``source_type`` (payload indexes make that cheap on a server);
- **exclusive** (local mode opened by the store: one process owns the folder
  or memory): points are written ``live = true`` and the store keeps the ids
  of the staged points it has not made visible; reads add a condition only
  when one is needed (another namespace stored, rows of another source type,
  points staged). qdrant-client's local mode evaluates every payload
  condition in Python per point, so the common read — one namespace, nothing
  staged — is a plain numpy search. Opening a folder deletes the points of
  generations a killed process staged but never committed (``staged``). The
  folder's point table is switched to SQLite's WAL journal with
  ``synchronous = NORMAL`` (one commit per point otherwise syncs the disk
  each time), with a checkpoint — the sync — before each manifest write, so
  the points a manifest names are on disk before it. Its collection uses the
  dot product (the vectors are unit length, so it is the cosine): local mode's
  cosine renormalises every stored vector on each search.

Point ids are ``uuid5(namespace, chunk id, generation)``: a new generation
never overwrites the old one's points.
"""

from __future__ import annotations

import os
import sqlite3
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
_MANIFEST_INDEXES = {"ns": models.PayloadSchemaType.KEYWORD, "pending": models.PayloadSchemaType.BOOL, "staged": models.PayloadSchemaType.INTEGER}
#: points per delete / retrieve request
_BATCH = 4096

#: a manifest's documents: ``{document_id: {"g": generation, "c": content hash, "m": metadata hash,
#: "ids": [chunk ids], "n": chunks of source_type "document"}}``
Docs = dict[str, dict[str, Any]]


def point_id(namespace: str, chunk_id: str, generation: int) -> str:
    """The id of a chunk's point in one generation."""
    return str(uuid.uuid5(_IDS, f"{namespace}\x00{chunk_id}\x00{generation}"))


def manifest_id(namespace: str, source: str) -> str:
    """The id of a source's manifest point."""
    return str(uuid.uuid5(_IDS, f"{namespace}\x00{source}"))


def _eq(field: str, value: Any) -> models.FieldCondition:
    return models.FieldCondition(key=field, match=models.MatchValue(value=value))


def _any(field: str, values: Sequence[Any]) -> models.FieldCondition:
    return models.FieldCondition(key=field, match=models.MatchAny(any=list(values)))


def _doc_points(namespace: str, docs: Docs) -> dict[str, str]:
    """``{chunk id: point id}`` of a manifest's documents."""
    return {cid: point_id(namespace, cid, int(entry["g"])) for entry in docs.values() for cid in entry["ids"]}


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
        #: local mode opened here: this process alone reads and writes the data (see the module docstring)
        self.exclusive = False
        #: exclusive mode: ids of points staged and not yet visible; namespaces stored; rows of another source type stored
        self._hidden: set[str] = set()
        self._namespaces: set[str] = set()
        self._others = False
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
                self.exclusive = True
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
            for field, schema in _MANIFEST_INDEXES.items():
                self._create_index(self.manifest, field, schema)
        if self.client.collection_exists(self.collection):
            vectors = self.client.get_collection(self.collection).config.params.vectors
            size = getattr(vectors, "size", None)
            if size is None:
                raise StoreError(f"qdrant store: collection {self.collection!r} exists but has no single unnamed vector (not a ragloom collection)")
            self._dim = int(size)
            self._tune_storage()
        self._recover()

    def _sqlite(self) -> sqlite3.Connection | None:
        """The SQLite connection of the local folder's point table (None in memory, on a server, or if qdrant-client changed)."""
        if not self.exclusive or self.location is None:
            return None
        collection = getattr(getattr(self.client, "_client", None), "collections", {}).get(self.collection)
        connection = getattr(getattr(collection, "storage", None), "storage", None)
        return connection if isinstance(connection, sqlite3.Connection) else None

    def _tune_storage(self) -> None:
        connection = self._sqlite()
        if connection is not None:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")

    def _durable(self) -> None:
        """Sync the folder's point table to disk (a WAL checkpoint) before a manifest names its points."""
        connection = self._sqlite()
        if connection is not None:
            connection.execute("PRAGMA wal_checkpoint(FULL)")

    def _ensure_collection(self, dim: int) -> None:
        if self._dim is not None:
            if dim != self._dim:
                raise DimensionMismatchError(store_dim=self._dim, embedder_dim=dim, where=f"qdrant collection {self.collection!r}")
            return
        # every vector the store writes or searches with is unit length, so the dot product is the cosine;
        # local mode's cosine renormalises every stored vector on each search (three passes instead of one)
        distance = models.Distance.DOT if self.exclusive else models.Distance.COSINE
        self.client.create_collection(self.collection, vectors_config=models.VectorParams(size=dim, distance=distance))
        for field, schema in _INDEXES.items():
            self._create_index(self.collection, field, schema)
        self._dim = dim
        self._tune_storage()

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
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(sources), _BATCH):
            ids = [manifest_id(namespace, s) for s in sources[start : start + _BATCH]]
            points = self._call("reading source manifests", self.client.retrieve, self.manifest, ids=ids, with_payload=True)
            found.update({p.payload["source"]: dict(p.payload) for p in points if p.payload})
        return found

    def _all_manifests(self, where: models.Filter | None = None) -> Iterator[dict[str, Any]]:
        offset = None
        while True:
            points, offset = self._call(
                "reading source manifests", self.client.scroll, self.manifest, scroll_filter=where, limit=256, offset=offset, with_payload=True
            )
            for point in points:
                yield dict(point.payload or {})
            if offset is None:
                return

    def _namespace_manifests(self, namespace: str) -> list[dict[str, Any]]:
        return list(self._all_manifests(models.Filter(must=[_eq("ns", namespace)])))

    def _put_manifest(self, namespace: str, source: str, payload: dict[str, Any]) -> None:
        record = {"ns": namespace, "source": source, "committed": 0, "next": 0, "pending": False, "keep": [], "staged": [], "docs": {}, "drop": [], **payload}
        point = models.PointStruct(id=manifest_id(namespace, source), vector=[1.0], payload=record)
        self._durable()
        self._call("writing a source manifest", self.client.upsert, self.manifest, points=[point], wait=True)

    def _recover(self) -> None:
        """Finish the commits a crash interrupted (``pending``); in exclusive mode also drop generations staged and never committed."""
        if not self.exclusive:
            for manifest in list(self._all_manifests(models.Filter(must=[_eq("pending", True)]))):
                if "docs" in manifest:  # a first-layout manifest's interrupted flip is finished by its migration (below)
                    self._flip(manifest["ns"], manifest["source"], manifest, None)
            for manifest in list(self._all_manifests(models.Filter(must=[models.IsEmptyCondition(is_empty=models.PayloadField(key="docs"))]))):
                self._migrate(manifest)
            return
        for manifest in list(self._all_manifests()):
            if "docs" not in manifest:
                manifest = self._migrate(manifest)
            if manifest.get("pending"):
                manifest = self._flip(manifest["ns"], manifest["source"], manifest, None)
            staged = [int(g) for g in manifest.get("staged") or ()]
            if staged:
                if self._dim is not None:
                    where = models.Filter(must=[_eq("ns", manifest["ns"]), _eq("source", manifest["source"]), _any("gen", staged)])
                    self._call("dropping an interrupted stage", self.client.delete, self.collection, points_selector=where, wait=True)
                    self._durable()
                manifest = {**manifest, "staged": []}
                self._put_manifest(manifest["ns"], manifest["source"], manifest)
            if manifest.get("committed") or manifest.get("docs"):
                self._namespaces.add(manifest["ns"])
            self._others = self._others or bool(manifest.get("others"))

    def _migrate(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """A manifest of ragloom-qdrant's first layout (no document list): list its live points' documents, drop the rest.

        That layout hid uncommitted points with ``live = false`` only, finished interrupted flips by filter,
        and recorded no staged generations, so its non-live points are leftovers of stages.
        """
        namespace, source = manifest["ns"], manifest["source"]
        if manifest.get("pending"):  # finish the old flip: the committed generation's points become the visible ones
            done = {**manifest, "docs": {}, "drop": []}
            if self._dim is not None:
                generation = int(manifest["committed"])
                mine: list[Any] = [_eq("ns", namespace), _eq("source", source)]
                self._call("migrating a manifest", self.client.set_payload, self.collection, payload={"live": True}, points=models.Filter(must=[*mine, _eq("gen", generation)]), wait=True)
                spared: list[Any] = [_eq("gen", generation)]
                if manifest.get("keep"):
                    spared.append(models.Filter(must=[_eq("live", True), _any("document_id", manifest["keep"])]))
                self._call("migrating a manifest", self.client.delete, self.collection, points_selector=models.Filter(must=mine, must_not=spared), wait=True)
            manifest = {**done, "pending": False, "keep": []}
        docs: Docs = {}
        if self._dim is not None:
            mine = [_eq("ns", namespace), _eq("source", source)]
            self._call("migrating a manifest", self.client.delete, self.collection, points_selector=models.Filter(must=[*mine, _eq("live", False)]), wait=True)
            # the first layout wrote no source_type; shared reads keep only points of source_type "document"
            untyped = models.Filter(must=[*mine, models.IsEmptyCondition(is_empty=models.PayloadField(key="source_type"))])
            self._call("migrating a manifest", self.client.set_payload, self.collection, payload={"source_type": DOCUMENT_SOURCE_TYPE}, points=untyped, wait=True)
            for point in self._scroll(models.Filter(must=[*mine, _eq("live", True)]), ["chunk_id", "document_id", "content_hash", "metadata_hash", "source_type", "gen"]):
                p = point.payload or {}
                entry = docs.setdefault(p["document_id"], {"g": int(p["gen"]), "c": "", "m": "", "ids": [], "n": 0})
                entry["ids"].append(p["chunk_id"])
                if p.get("source_type", DOCUMENT_SOURCE_TYPE) == DOCUMENT_SOURCE_TYPE:
                    entry.update(c=p.get("content_hash", ""), m=p.get("metadata_hash", ""), n=entry["n"] + 1)
                else:
                    manifest["others"] = True
        migrated = {**manifest, "docs": docs, "staged": [], "drop": []}
        self._put_manifest(namespace, source, migrated)
        return migrated

    def _flip(self, namespace: str, source: str, record: dict[str, Any], ids: list[str] | None) -> dict[str, Any]:
        """Steps 2-4 of a commit (see the module docstring); idempotent. ``ids``: the staged points, when known."""
        generation = int(record["committed"])
        if self._dim is not None:
            if not self.exclusive:
                staged: Any = models.Filter(must=[_eq("ns", namespace), _eq("source", source), _eq("gen", generation), _eq("live", False)])
                if ids is not None:
                    staged = models.PointIdsList(points=list[Any](ids))
                if ids is None or ids:
                    self._call("making a generation visible", self.client.set_payload, self.collection, payload={"live": True}, points=staged, wait=True)
            drop = list(record.get("drop") or ())
            if not self.exclusive:  # also the invisible leftovers of stages a killed writer never committed
                stale = models.Filter(must=[_eq("ns", namespace), _eq("source", source), _eq("live", False)], must_not=[_eq("gen", generation)])
                self._call("dropping the old generation", self.client.delete, self.collection, points_selector=stale, wait=True)
            for start in range(0, len(drop), _BATCH):
                self._call("dropping the old generation", self.client.delete, self.collection, points_selector=models.PointIdsList(points=list[Any](drop[start : start + _BATCH])), wait=True)
        done = {**record, "pending": False, "keep": [], "drop": []}
        self._put_manifest(namespace, source, done)
        return done

    # ------------------------------------------------------------------ reads

    def dimension(self) -> int | None:
        """Dimension of the collection's vectors, or None before the first write."""
        return self._dim

    def _where(self, namespace: str, *conditions: Any) -> models.Filter | None:
        """The filter of the visible points of ``namespace`` (with ``conditions``); None when every point is one."""
        must: list[Any] = []
        must_not: list[Any] = []
        if not self.exclusive:
            must += [_eq("ns", namespace), _eq("live", True), _eq("source_type", DOCUMENT_SOURCE_TYPE)]
        else:
            if self._namespaces - {namespace}:
                must.append(_eq("ns", namespace))
            if self._others:
                must.append(_eq("source_type", DOCUMENT_SOURCE_TYPE))
            if self._hidden:
                must_not.append(models.HasIdCondition(has_id=list[Any](self._hidden)))
        must += conditions
        if not must and not must_not:
            return None
        return models.Filter(must=must or None, must_not=must_not or None)

    def _live(self, namespace: str, node: FilterNode | None = None) -> models.Filter | None:
        """The filter of the visible points of ``namespace`` matching ``node`` (residual conditions resolved to ids)."""
        translated, fields = translate(node)
        self._index_fields(fields)
        where = self._where(namespace, *([translated] if translated is not None else []))
        if has_residual(node):
            ids = []
            for point in self._scroll(where, ["chunk_id", "source", "document_id", "metadata", "tags"]):
                p = point.payload or {}
                if matches(node, metadata=p.get("metadata") or {}, source=p["source"], document_id=p["document_id"], tags=tuple(p.get("tags") or ())):
                    ids.append(point.id)
            where = self._where(namespace, models.HasIdCondition(has_id=ids))
        return where

    def _scroll(self, scroll_filter: models.Filter | None, payload: Any, *, vectors: bool = False, batch: int = 1024) -> Iterator[Any]:
        offset = None
        while True:
            points, offset = self._call(
                "scrolling points", self.client.scroll, self.collection, scroll_filter=scroll_filter, limit=batch, offset=offset, with_payload=payload, with_vectors=vectors
            )
            yield from points
            if offset is None:
                return

    def source_states(self, namespace: str, sources: Sequence[str]) -> dict[str, SourceState]:
        """Committed state of many sources, from their manifests."""
        wanted = list(dict.fromkeys(sources))
        with self._lock:
            manifests = self._manifests(namespace, wanted)
        states = {}
        for source in wanted:
            manifest = manifests.get(source, {})
            committed = int(manifest.get("committed", 0))
            docs: Docs = manifest.get("docs") or {}
            documents = {d: e["c"] for d, e in docs.items() if e["n"]}
            states[source] = SourceState(
                generation=committed,
                next_generation=max(committed, int(manifest.get("next", 0))) + 1,
                documents=documents,
                metadata={d: docs[d]["m"] for d in documents},
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

    def _vectors(self, points: dict[str, str]) -> dict[str, np.ndarray]:
        """Stored vectors by chunk id, for ``{chunk id: point id}`` (points that do not exist are left out)."""
        found: dict[str, np.ndarray] = {}
        items = list(points.items())
        for start in range(0, len(items), _BATCH):
            part = dict(items[start : start + _BATCH])
            got = self._call("reading vectors", self.client.retrieve, self.collection, ids=list(part.values()), with_payload=["chunk_id"], with_vectors=True)
            found.update({(p.payload or {})["chunk_id"]: np.asarray(p.vector, dtype=np.float32) for p in got})
        return found

    def get_vectors(self, namespace: str, chunk_ids: Sequence[str]) -> np.ndarray:
        """Stored (normalised) vectors of visible chunks, in the order asked."""
        if VECTORS not in self.capabilities:
            raise StoreError("this qdrant store is configured with vectors = false: it does not return stored vectors")
        with self._lock:
            found: dict[str, np.ndarray] = {}
            if self._dim is not None and chunk_ids:
                where = self._where(namespace, _any("chunk_id", list(dict.fromkeys(chunk_ids))))
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
        offset = None
        while True:
            with self._lock:
                points, offset = self._call(
                    "scrolling chunks", self.client.scroll, self.collection, scroll_filter=self._where(namespace), limit=batch_size, offset=offset, with_payload=_PAYLOAD
                )
            if points:
                yield [_chunk(p.payload or {}) for p in points]
            if offset is None:
                return

    def source_counts(self, namespace: str) -> dict[str, int]:
        """Visible chunks per source, sorted by source (from the manifests)."""
        with self._lock:
            manifests = self._namespace_manifests(namespace)
        counts = {m["source"]: sum(int(e["n"]) for e in (m.get("docs") or {}).values()) for m in manifests if m.get("committed")}
        return dict(sorted((s, n) for s, n in counts.items() if n))

    def sources(self, namespace: str) -> list[str]:
        """Sources with visible chunks, sorted."""
        return list(self.source_counts(namespace))

    def count(self, namespace: str) -> int:
        """Visible chunks in the namespace (Qdrant's exact count)."""
        with self._lock:
            if self._dim is None:
                return 0
            return int(self._call("count", self.client.count, self.collection, count_filter=self._where(namespace), exact=True).count)

    def stats(self, namespace: str) -> dict[str, Any]:
        """Chunk, source and document counts, the dimension and where the data lives."""
        with self._lock:
            manifests = [m for m in self._namespace_manifests(namespace) if m.get("committed")]
            documents = {d for m in manifests for d, e in (m.get("docs") or {}).items() if e["n"]}
            return {
                "chunks": self.count(namespace),
                "sources": len(self.source_counts(namespace)),
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
        """Delete visible chunks matching ``filter`` (and their manifest entries); a source left with none has no committed generation."""
        with self._lock:
            if self._dim is None:
                return 0
            ids: list[Any] = []
            gone: dict[str, set[str]] = {}
            for point in self._scroll(self._live(namespace, filter), ["source", "chunk_id"]):
                ids.append(point.id)
                gone.setdefault((point.payload or {})["source"], set()).add((point.payload or {})["chunk_id"])
            for start in range(0, len(ids), _BATCH):
                self._call("delete", self.client.delete, self.collection, points_selector=models.PointIdsList(points=ids[start : start + _BATCH]), wait=True)
            for source, manifest in self._manifests(namespace, sorted(gone)).items():
                docs: Docs = {}
                for document, entry in (manifest.get("docs") or {}).items():
                    left = [cid for cid in entry["ids"] if cid not in gone[source]]
                    if left:
                        docs[document] = {**entry, "ids": left, "n": int(entry["n"]) - (len(entry["ids"]) - len(left))}
                visible = any(e["n"] for e in docs.values())
                self._put_manifest(namespace, source, {**manifest, "docs": docs if visible else {}, "committed": manifest["committed"] if visible else 0})
            return len(ids)

    def _reserve(self, namespace: str, source: str, state: SourceState) -> int:
        with self._lock:
            manifest = self._manifests(namespace, [source]).get(source, {})
            generation = max(state.next_generation, int(manifest.get("committed", 0)) + 1, int(manifest.get("next", 0)) + 1)
            self._put_manifest(namespace, source, {**manifest, "next": generation, "staged": [*(manifest.get("staged") or ()), generation]})
            self._namespaces.add(namespace)
            return generation

    def _points(self, namespace: str, generation: int, chunks: Sequence[Chunk], vectors: np.ndarray) -> list[models.PointStruct]:
        points = []
        for chunk, vector in zip(chunks, vectors.tolist(), strict=True):
            payload = {
                "ns": namespace,
                "live": self.exclusive,
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
        if self.exclusive:  # hidden before they exist, so no read of this process sees them half written
            self._hidden.update(str(p.id) for p in points)
        if any(p.payload and p.payload["source_type"] != DOCUMENT_SOURCE_TYPE for p in points):
            self._others = True
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
                manifest = self._manifests(namespace, [source]).get(source, {})
                known = _doc_points(namespace, manifest.get("docs") or {}) if manifest.get("committed") else {}
                stored = self._vectors({c.id: known[c.id] for c in chunks if c.id in known})
            missing = [c.id for c in chunks if c.id not in stored]
            if missing:
                raise StoreError(f"update_metadata of {source}: no stored chunk {', '.join(missing[:5])}")
            points = self._points(namespace, generation, chunks, np.stack([stored[c.id] for c in chunks]))
            self._upsert(points)
            return [str(p.id) for p in points]

    def _removed_by(self, namespace: str, source: str, spared: Collection[str]) -> int:
        """Visible chunks of ``source`` a commit removes (all but the spared documents')."""
        with self._lock:
            manifest = self._manifests(namespace, [source]).get(source, {})
        if not manifest.get("committed"):
            return 0
        return sum(int(e["n"]) for d, e in (manifest.get("docs") or {}).items() if d not in spared)

    def _unstage(self, namespace: str, source: str, generation: int) -> None:
        manifest = self._manifests(namespace, [source]).get(source, {})
        self._put_manifest(namespace, source, {**manifest, "staged": [g for g in manifest.get("staged") or () if int(g) != generation]})

    def _abort(self, namespace: str, source: str, generation: int, ids: list[str]) -> None:
        with self._lock:
            for start in range(0, len(ids), _BATCH):
                self._call("dropping an aborted stage", self.client.delete, self.collection, points_selector=models.PointIdsList(points=list[Any](ids[start : start + _BATCH])), wait=True)
            self._hidden.difference_update(ids)
            self._unstage(namespace, source, generation)

    def _publish(self, namespace: str, commit: Commit) -> None:
        """Make a committed source visible (steps 1-4), readers of this process locked out."""
        with self._lock:
            manifest = self._manifests(namespace, [commit.source]).get(commit.source, {})
            old: Docs = manifest.get("docs") or {} if manifest.get("committed") else {}
            docs: Docs = {d: old[d] for d in commit.keep if d in old}
            docs.update(commit.docs)
            drop = [point_id(namespace, cid, int(e["g"])) for d, e in old.items() if docs.get(d) is not e for cid in e["ids"]]
            record = {
                **manifest,
                "committed": commit.generation,
                "next": max(commit.generation, int(manifest.get("next", 0))),
                "pending": True,
                "keep": commit.keep,
                "staged": [g for g in manifest.get("staged") or () if int(g) != commit.generation],
                "docs": docs,
                "drop": drop,
                "others": commit.others or (bool(manifest.get("others")) and any(d not in commit.docs for d in docs)),
            }
            self._put_manifest(namespace, commit.source, record)
            self._hidden.difference_update(commit.ids)
            self._flip(namespace, commit.source, record, commit.ids)

    def close(self) -> None:
        """Close the client (releases the local-mode folder's lock)."""
        with self._lock:
            try:
                self.client.close()
            except Exception:  # noqa: BLE001 - closing twice or a dead server: nothing left to release
                pass


class Commit:
    """A committed stage waiting for its session's flush."""

    def __init__(self, source: str, generation: int, keep: list[str], ids: list[str], docs: Docs, others: bool):
        self.source, self.generation, self.keep, self.ids, self.docs, self.others = source, generation, keep, ids, docs, others


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
        self._docs: Docs = {}
        self._others = False
        self._done = False
        self._failed = False

    def _check(self, action: str) -> None:
        if self._done:
            raise StoreError(f"cannot {action}: the stage of {self.source} (generation {self.generation}) is already closed")

    def _check_sources(self, chunks: Sequence[Chunk]) -> None:
        stray = next((c.source for c in chunks if c.source != self.source), None)
        if stray is not None:
            raise StoreError(f"a chunk of {stray!r} was staged for the source {self.source!r}")

    def _stage(self, chunks: Sequence[Chunk], staging: Any, *args: Any) -> None:
        """Stage points with ``staging(*args)`` and record them. A write that fails part-way may leave some of its
        points in the collection: their ids are kept for :meth:`abort`, and the stage refuses to commit."""
        try:
            ids = staging(*args)
        except BaseException:
            self._failed = True
            if self._session.store._dim is not None:  # without a collection nothing was stored
                self._ids += [point_id(self._session.namespace, c.id, self.generation) for c in chunks]
            raise
        self._ids += ids
        self._record(chunks)

    def _record(self, chunks: Sequence[Chunk]) -> None:
        for chunk in chunks:
            entry = self._docs.setdefault(chunk.document_id, {"g": self.generation, "c": "", "m": "", "ids": [], "n": 0})
            if chunk.id not in entry["ids"]:
                entry["ids"].append(chunk.id)
                if chunk.source_type == DOCUMENT_SOURCE_TYPE:
                    entry.update(c=chunk.content_hash, m=chunk.metadata_hash, n=entry["n"] + 1)
                else:
                    self._others = True

    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Stage chunks (invisible until the session flushes after :meth:`commit`)."""
        self._check("write")
        self._check_sources(chunks)
        self._stage(chunks, self._session.store._stage_write, self._session.namespace, self.generation, chunks, vectors)

    def keep(self, document_ids: Collection[str]) -> None:
        """Documents whose stored chunks stay in the new generation."""
        self._check("keep documents")
        self._keep.update(document_ids)

    def update_metadata(self, chunks: Sequence[Chunk]) -> None:
        """Carry stored chunks (and their vectors) into the new generation with new metadata."""
        self._check("update metadata")
        self._check_sources(chunks)
        self._stage(chunks, self._session.store._stage_update, self._session.namespace, self.source, self.generation, chunks)
        self._carried.update(c.document_id for c in chunks)

    def commit(self) -> int:
        """Queue the generation for the session's next flush; return the visible chunks it removes."""
        self._check("commit")
        if self._failed:
            raise StoreError(f"cannot commit the stage of {self.source}: one of its writes failed (abort the stage)")
        self._done = True
        session = self._session
        session._open.pop(id(self), None)
        removed = session.store._removed_by(session.namespace, self.source, self._keep | self._carried)
        session._committed.append(Commit(self.source, self.generation, sorted(self._keep - self._carried), list(dict.fromkeys(self._ids)), self._docs, self._others))
        return removed

    def abort(self) -> None:
        """Drop the staged points (a closed stage ignores it)."""
        if self._done:
            return
        self._done = True
        self._session._open.pop(id(self), None)
        self._session.store._abort(self._session.namespace, self.source, self.generation, list(dict.fromkeys(self._ids)))


class QdrantSession:
    """Write session: commits are queued and made visible, source by source, when it flushes."""

    def __init__(self, store: QdrantStore, namespace: str):
        self.store = store
        self.namespace = namespace
        self._open: dict[int, QdrantStage] = {}
        self._committed: list[Commit] = []
        self._closed = False

    def stage(self, source: str, state: SourceState | None = None) -> QdrantStage:
        """Start a new generation of ``source`` (a commit of it still queued is flushed first)."""
        if self._closed:
            raise StoreError("the write session is closed")
        if any(queued.source == source for queued in self._committed):
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
            self.store._publish(self.namespace, self._committed[0])
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
