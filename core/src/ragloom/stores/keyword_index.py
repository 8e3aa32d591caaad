"""A BM25 index of a store's committed chunks, for stores without keyword search of their own.

The ``bm25`` and ``hybrid`` retrievers use the store's ``keyword_search`` when
it declares one; otherwise, for a store declaring the ``chunks`` capability
(:class:`ragloom.stores.base.ChunkStore`), they share one
:class:`StoreKeywordIndex` per store and namespace (:func:`keyword_index_for`):

- **built on first use** from ``store.iter_chunks`` (streamed, in batches);
  the store's committed generations (``sources`` + ``source_states``) and
  chunk count are read before and after, and the build is redone when they
  moved meanwhile;
- **kept current as the pipeline writes**: the pipeline opens its write
  sessions through :func:`open_session`, which tells the index what each
  committed source now holds once the session flushes (no chunk is read back
  from the store); ``remove_source`` / ``clear`` go through :func:`forget`;
- **persisted beside the store** when it has a ``location`` (a file or folder):
  ``<location>.keyword/<namespace digest>.npz`` (analysed terms, chunk records,
  the generations it was built from; no pickle), written after a build and when
  an observed session closes;
- **rebuilt when it no longer matches the store**: a saved index is used only
  if the store's committed generations and count equal the saved ones; while
  no write session of this process is open, every search first compares the
  store's ``count`` with the index's and rebuilds on a difference (a change
  by another process that keeps the count, e.g. an edited file re-ingested
  elsewhere, is seen when the index is next loaded, or after :meth:`StoreKeywordIndex.refresh`).

Scores are exactly those of the memory store's native index on the same
chunks (same :class:`ragloom.keyword.BM25Index`, same analysis); filters are
evaluated with :func:`ragloom.filters.matches`, the reference semantics.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs
import numpy as np

from ragloom.errors import StoreError
from ragloom.filters import FilterNode, compile_predicate, parse_filter
from ragloom.keyword import BM25Config, BM25Index
from ragloom.stores.base import ChunkStore, SourceStage, SourceState, Store, WriteSession, chunk_store
from ragloom.types import DOCUMENT_SOURCE_TYPE, Chunk, Result, chunk_result

logger = logging.getLogger(__name__)

FORMAT = 1
BATCH = 2000


class KeywordSearcher(Protocol):
    """What the keyword retrievers call: a store's own keyword search or a :class:`StoreKeywordIndex`."""

    def keyword_search(self, namespace: str, query: str, *, top_k: int, filter: FilterNode | None = None) -> list[Result]:
        """Top-k visible chunks by BM25, best first."""
        ...


@attrs.frozen
class _Change:
    """What one committed source holds now: its generation, the documents kept, the chunks staged (in order)."""

    source: str
    generation: int
    keep: frozenset[str]
    staged: tuple[Chunk, ...]




def _record(chunk: Chunk) -> list[Any]:
    return [chunk.id, chunk.document_id, chunk.index, chunk.text, chunk.start, chunk.end, chunk.source, chunk.metadata, list(chunk.tags), chunk.content_hash, chunk.metadata_hash]


def _chunk(record: list[Any]) -> Chunk:
    cid, document_id, index, text, start, end, source, metadata, tags, content_hash, metadata_hash = record
    return Chunk(
        id=cid, document_id=document_id, index=index, text=text, start=start, end=end, source=source,
        metadata=metadata, tags=tuple(tags), content_hash=content_hash, metadata_hash=metadata_hash,
    )  # fmt: skip


def _json_bytes(value: Any) -> np.ndarray:
    return np.frombuffer(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"), dtype=np.uint8)


def _from_json_bytes(array: np.ndarray) -> Any:
    return json.loads(array.tobytes().decode("utf-8", "surrogatepass"))


class StoreKeywordIndex:
    """``keyword_search`` and ``keyword_ceiling`` over the committed chunks of one namespace of a store."""

    def __init__(self, store: ChunkStore, namespace: str, config: BM25Config | None = None):
        self.store = store
        self.namespace = namespace
        self.config = config or getattr(getattr(store, "config", None), "bm25", None) or BM25Config()
        self._lock = threading.RLock()
        self._index: BM25Index | None = None
        self._chunks: dict[str, Chunk] = {}
        self._by_source: dict[str, set[str]] = {}
        self._generations: dict[str, int] = {}
        self._writers = 0
        self._stale = False
        self._unsaved = False
        #: how often the index was built from the store / loaded from its file (for tests and ``stats``)
        self.builds = 0
        self.loads = 0

    # ------------------------------------------------------------------ where and when

    @property
    def path(self) -> Path | None:
        """The file the index is saved in, or None when the store has no location."""
        location = getattr(self.store, "location", None)
        if location is None:
            return None
        digest = hashlib.sha256(self.namespace.encode("utf-8", "surrogatepass")).hexdigest()[:24]
        return Path(f"{location}.keyword") / f"{digest}.npz"

    def _signature(self) -> tuple[dict[str, int], int]:
        sources = self.store.sources(self.namespace)
        states: dict[str, SourceState] = self.store.source_states(self.namespace, sources) if sources else {}
        return {s: int(states[s].generation) for s in sources}, int(self.store.count(self.namespace))

    def refresh(self) -> None:
        """Compare with the store's committed generations now; rebuild when they differ."""
        with self._lock:
            if self._index is None or self._signature() != (self._generations, len(self._chunks)):
                self._build()

    def _ready(self) -> BM25Index:
        with self._lock:
            if self._index is not None and not self._stale:
                if self._writers or int(self.store.count(self.namespace)) == len(self._chunks):
                    return self._index
                logger.info("keyword index of %r: the store's chunk count changed; rebuilding", self.namespace)
            elif self._index is None and self._load():
                assert self._index is not None
                return self._index
            self._build()
            assert self._index is not None
            return self._index

    # ------------------------------------------------------------------ building, loading, saving

    def _set(self, index: BM25Index, chunks: Iterable[Chunk], generations: dict[str, int]) -> None:
        self._index = index
        self._chunks = {c.id: c for c in chunks}
        self._by_source = {}
        for chunk in self._chunks.values():
            self._by_source.setdefault(chunk.source, set()).add(chunk.id)
        self._generations = dict(generations)
        self._stale = False

    def _build(self) -> None:
        for _ in range(3):
            before = self._signature()
            chunks = [chunk for batch in self.store.iter_chunks(self.namespace, batch_size=BATCH) for chunk in batch]
            if self._signature() == before:
                break
        chunks.sort(key=lambda c: (c.source, c.document_id, c.index, c.id))
        index = BM25Index(self.config)
        index.add([c.id for c in chunks], [c.text for c in chunks])
        self._set(index, chunks, before[0])
        self.builds += 1
        self._unsaved = True
        self._save()

    def _load(self) -> bool:
        path = self.path
        if path is None or not path.exists():
            return False
        try:
            with np.load(path, allow_pickle=False) as data:
                header = _from_json_bytes(data["header"])
                if header.get("format") != FORMAT or header.get("config") != repr(self.config) or header.get("namespace") != self.namespace:
                    return False
                records = _from_json_bytes(data["records"])
                vocabulary = _from_json_bytes(data["vocabulary"])
                chunks = [_chunk(r) for r in records]
                index = BM25Index.restore(
                    self.config, [c.id for c in chunks], vocabulary, data["terms"], data["tfs"], data["offsets"], data["lengths"]
                )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            logger.warning("keyword index %s is unreadable (%s); rebuilding it", path, exc)
            return False
        generations = {str(k): int(v) for k, v in header["generations"].items()}
        if self._signature() != (generations, len(chunks)):
            logger.info("keyword index %s does not match the store's committed generations; rebuilding it", path)
            return False
        self._set(index, chunks, generations)
        self.loads += 1
        return True

    def _save(self) -> None:
        path = self.path
        if path is None or self._index is None or not self._unsaved:
            return
        keys, vocabulary, terms, tfs, offsets, lengths = self._index.export()
        header = {"format": FORMAT, "config": repr(self.config), "namespace": self.namespace, "generations": self._generations}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.name + f".{os.getpid()}.tmp")
            with open(partial, "wb") as handle:
                np.savez(
                    handle,
                    header=_json_bytes(header),
                    records=_json_bytes([_record(self._chunks[str(k)]) for k in keys]),
                    vocabulary=_json_bytes(vocabulary),
                    terms=terms.astype(np.int32),
                    tfs=tfs,
                    offsets=offsets,
                    lengths=lengths,
                )
            os.replace(partial, path)
            self._unsaved = False
        except OSError as exc:  # the index still works in memory; it is rebuilt next time
            logger.warning("cannot save the keyword index %s: %s", path, exc)

    # ------------------------------------------------------------------ keeping current

    def _apply(self, changes: Sequence[_Change]) -> None:
        with self._lock:
            if self._index is None:
                return
            for change in changes:
                old = [cid for cid in self._by_source.get(change.source, ()) if self._chunks[cid].document_id not in change.keep]
                self._index.remove(old)
                bucket = self._by_source.setdefault(change.source, set())
                for cid in old:
                    del self._chunks[cid]
                    bucket.discard(cid)
                staged = list({c.id: c for c in change.staged}.values())
                self._index.add([c.id for c in staged], [c.text for c in staged])
                for chunk in staged:
                    self._chunks[chunk.id] = chunk
                    bucket.add(chunk.id)
                if bucket:
                    self._generations[change.source] = change.generation
                else:
                    self._by_source.pop(change.source, None)
                    self._generations.pop(change.source, None)
            self._unsaved = True

    def _forget(self, filter: FilterNode | None) -> None:
        with self._lock:
            if self._index is None:
                return
            predicate = compile_predicate(filter)
            gone = [c for c in self._chunks.values() if predicate(c.metadata, c.source, c.document_id, c.tags)]
            self._index.remove([c.id for c in gone])
            for chunk in gone:
                del self._chunks[chunk.id]
                bucket = self._by_source.get(chunk.source)
                if bucket is not None:
                    bucket.discard(chunk.id)
                    if not bucket:
                        del self._by_source[chunk.source]
                        self._generations.pop(chunk.source, None)
            self._unsaved = True
            self._save()

    def _writing(self, delta: int, failed: bool = False) -> None:
        with self._lock:
            self._writers += delta
            if failed:
                self._stale = True
            if delta < 0 and not self._writers and not self._stale:
                self._save()

    # ------------------------------------------------------------------ searching

    def keyword_search(self, namespace: str, query: str, *, top_k: int, filter: FilterNode | None = None) -> list[Result]:
        """Top-k committed chunks by BM25, best first (only chunks with a query term)."""
        self._check(namespace)
        if top_k <= 0:
            return []
        with self._lock:
            index = self._ready()
            keys = None
            if filter is not None:
                predicate = compile_predicate(filter)
                keys = [cid for cid, c in self._chunks.items() if predicate(c.metadata, c.source, c.document_id, c.tags)]
            hits = index.search(query, top_k=top_k, keys=keys)
            return [chunk_result(self._chunks[str(key)], score) for key, score in hits]

    def keyword_ceiling(self, namespace: str, query: str) -> float:
        """The query's best reachable BM25 score (see :meth:`ragloom.keyword.BM25Index.ceiling`)."""
        self._check(namespace)
        with self._lock:
            return self._ready().ceiling(query)

    def __len__(self) -> int:
        with self._lock:
            return len(self._ready())

    def _check(self, namespace: str) -> None:
        if namespace != self.namespace:
            raise StoreError(f"this keyword index covers namespace {self.namespace!r}, not {namespace!r}")


# --------------------------------------------------------------------------- one index per store and namespace

_LOCK = threading.Lock()
_BY_STORE: weakref.WeakKeyDictionary[Any, dict[str, StoreKeywordIndex]] = weakref.WeakKeyDictionary()


def _indexes(store: Any, create: bool) -> dict[str, StoreKeywordIndex] | None:
    try:
        found = _BY_STORE.get(store)
        if found is None and create:
            found = _BY_STORE[store] = {}
        return found
    except TypeError:  # a store that cannot be weakly referenced keeps its indexes on itself
        if create and not hasattr(store, "_ragloom_keyword_indexes"):
            store._ragloom_keyword_indexes = {}
        return getattr(store, "_ragloom_keyword_indexes", None)


def keyword_index_for(store: Store, namespace: str) -> StoreKeywordIndex:
    """The shared keyword index of ``store``'s ``namespace`` (StoreError unless the store enumerates chunks)."""
    enumerable = chunk_store(store)
    if enumerable is None:
        raise StoreError(f"{type(store).__name__} cannot enumerate its chunks (no 'chunks' capability)")
    with _LOCK:
        indexes = _indexes(store, create=True)
        assert indexes is not None
        index = indexes.get(namespace)
        if index is None:
            index = indexes[namespace] = StoreKeywordIndex(enumerable, namespace)
        return index


def _existing(store: Store, namespace: str) -> StoreKeywordIndex | None:
    with _LOCK:
        indexes = _indexes(store, create=False)
        return None if indexes is None else indexes.get(namespace)


def open_session(store: Store, namespace: str) -> WriteSession:
    """``store.session(namespace)``, observed by the namespace's keyword index when there is one."""
    session = store.session(namespace)
    index = _existing(store, namespace)
    return session if index is None else _ObservedSession(session, index)


def forget(store: Store, namespace: str, filter: Any) -> None:
    """Tell the namespace's keyword index (if any) that the chunks matching ``filter`` were deleted."""
    index = _existing(store, namespace)
    if index is not None:
        index._forget(parse_filter(filter))


class _ObservedStage:
    """A stage that remembers what it staged, for the keyword index."""

    def __init__(self, stage: SourceStage, session: _ObservedSession):
        self._stage = stage
        self._session = session
        self._keep: set[str] = set()
        self._staged: list[Chunk] = []
        self.source = stage.source
        self.generation = stage.generation
        self.state = stage.state

    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        self._stage.write(chunks, vectors)
        self._staged.extend(c for c in chunks if c.source_type == DOCUMENT_SOURCE_TYPE)

    def keep(self, document_ids: Iterable[str]) -> None:
        ids = list(document_ids)
        self._stage.keep(ids)
        self._keep.update(ids)

    def update_metadata(self, chunks: Sequence[Chunk]) -> None:
        self._stage.update_metadata(chunks)
        self._staged.extend(chunks)

    def commit(self) -> int:
        removed = self._stage.commit()
        self._session._committed.append(_Change(self.source, self.generation, frozenset(self._keep), tuple(self._staged)))
        return removed

    def abort(self) -> None:
        self._stage.abort()


class _ObservedSession:
    """A write session whose flushed commits reach the keyword index."""

    def __init__(self, session: WriteSession, index: StoreKeywordIndex):
        self._session = session
        self._index = index
        self._committed: list[_Change] = []
        self._closed = False
        index._writing(+1)

    def stage(self, source: str, state: SourceState | None = None) -> SourceStage:
        return _ObservedStage(self._session.stage(source, state), self)

    def _publish(self) -> None:
        changes, self._committed = self._committed, []
        self._index._apply(changes)

    def flush(self) -> None:
        try:
            self._session.flush()
        except BaseException:
            self._committed = []
            self._index._stale = True
            raise
        self._publish()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        failed = False
        try:
            self._session.close()
            self._publish()
        except BaseException:
            failed = True
            raise
        finally:
            self._index._writing(-1, failed=failed)

    def __enter__(self) -> _ObservedSession:
        return self

    def __exit__(self, *exc: object) -> None:
        failed = False
        try:
            self._session.__exit__(*exc)
            self._publish()
        except BaseException:
            failed = True
            raise
        finally:
            if not self._closed:
                self._closed = True
                self._index._writing(-1, failed=failed)
