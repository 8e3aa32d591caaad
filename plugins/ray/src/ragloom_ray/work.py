"""What travels between the stages, and the three steps: prepare (load + chunk), embed, write.

Nothing here imports ray: each step is a plain function of picklable records, so
the semantics are those of ``Pipeline.ingest`` whichever process runs them.

- :func:`prepare` loads one path, checks and hashes each document against the
  stored state the driver read (``hint``) and chunks only what changed;
- :func:`embed_paths` embeds the chunks of changed documents, a batch of paths
  at once;
- :func:`write_path` stages, writes, keeps and commits each source of a path
  against its committed state, counting like the in-process ingest.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from ragloom import ComponentSpec, PipelineConfig, Registry, content_hash, metadata_hash
from ragloom.plugin import (
    BuildContext,
    Chunk,
    Chunker,
    ConfigError,
    Document,
    Embedder,
    LoaderError,
    RagloomError,
    SourceRouter,
    SourceStage,
    SourceState,
    Store,
    StoreError,
    WriteSession,
    check_document,
    embed_in_batches,
)


@attrs.frozen(kw_only=True)
class Problem:
    """A failure as the in-process ingest reports it: where, why, the error class."""

    source: str
    reason: str
    error: str
    loader_error: bool  # raise a LoaderError as it is when ``on_error = "fail"``
    position: Any = None
    message: str = ""

    @classmethod
    def of(cls, exc: RagloomError, path: str) -> Problem:
        where = getattr(exc, "source", None) or path
        reason = getattr(exc, "reason", None) or str(exc)
        loader = isinstance(exc, LoaderError)
        return cls(source=where, reason=reason, error=type(exc).__name__, loader_error=loader, position=getattr(exc, "position", None), message=str(exc))

    def exception(self, path: str) -> LoaderError:
        """The error ``on_error = "fail"`` raises, as in-process."""
        if self.loader_error:
            return LoaderError(self.reason, source=self.source, position=self.position)
        return LoaderError(f"{self.error}: {self.message}", source=path)


@attrs.frozen(kw_only=True)
class DocumentWork:
    """One document, hashed; ``chunks`` None when the hint says it is unchanged; ``embed``: its chunks need vectors."""

    id: str
    digest: str
    meta: str
    chunks: tuple[Chunk, ...] | None
    embed: bool


@attrs.define(kw_only=True)
class SourceWork:
    """One source's documents, in order; ``vectors`` rows belong to the chunks of documents with ``embed``."""

    source: str
    hint: SourceState | None
    documents: list[DocumentWork] = attrs.field(factory=list)
    vectors: np.ndarray | None = None

    def texts(self) -> list[str]:
        return [c.text for d in self.documents if d.embed and d.chunks for c in d.chunks]


@attrs.frozen(kw_only=True)
class PlanItem:
    """One file or URL to ingest, from the driver: its position, loader, tags and the stored state read ahead."""

    index: int
    path: str
    loader: str
    tags: tuple[str, ...]
    url: bool
    hint: SourceState | None


@attrs.define(kw_only=True)
class PathWork:
    """A path after loading: its sources (whole), the failure that ended it, counts of a failed source's documents."""

    item: PlanItem
    sources: list[SourceWork] = attrs.field(factory=list)
    problem: Problem | None = None
    partial: dict[str, int] = attrs.field(factory=dict)

    @property
    def loaded_itself(self) -> bool:
        return any(s.source == self.item.path for s in self.sources)


@attrs.define(kw_only=True)
class Counts:
    """The counters of an ingest, added up across paths and workers."""

    documents: int = 0
    chunks: int = 0
    unchanged: int = 0
    updated: int = 0
    removed: int = 0
    sources: int = 0
    unchanged_sources: int = 0

    def add(self, other: Counts | dict[str, int]) -> None:
        values = attrs.asdict(other) if isinstance(other, Counts) else other
        for key, value in values.items():
            setattr(self, key, getattr(self, key) + value)


@attrs.define(kw_only=True)
class PathOutcome:
    """What writing a path did: counts, the failure, whether the path itself was among its sources."""

    index: int
    path: str
    url: bool
    counts: Counts
    problem: Problem | None
    loaded_itself: bool
    touched: bool


def dumps(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def loads(blob: bytes) -> Any:
    return pickle.loads(blob)  # noqa: S301 - records this ingest's own stages wrote


# ---------------------------------------------------------------------- parts built on a worker


@attrs.define
class Parts:
    """The components a worker needs, built from the pipeline config through the plugin registry."""

    config: PipelineConfig
    model_id: str
    registry: Registry = attrs.field(factory=Registry)
    _embedder: Embedder | None = None
    _chunker: Chunker | None = None
    _router: SourceRouter | None = None
    _store: Store | None = None

    def context(self, *, embedder: Embedder | None = None) -> BuildContext:
        c = self.config
        return BuildContext(registry=self.registry, base_dir=c.base_dir, namespace=c.namespace, loader_options=dict(c.loaders), embedder=embedder)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self.registry.create("embedder", self.config.embedder, self.context())
        return self._embedder

    @property
    def chunker(self) -> Chunker:
        if self._chunker is None:
            try:
                self._chunker = self.registry.create("chunker", self.config.chunker, self.context())
            except ConfigError:  # a chunker that needs the embedder (e.g. semantic): build both
                self._chunker = self.registry.create("chunker", self.config.chunker, self.context(embedder=self.embedder))
        return self._chunker

    @property
    def router(self) -> SourceRouter:
        if self._router is None:
            spec = ComponentSpec(type="auto", config=self.config.loaders.get("auto"))
            self._router = self.registry.create("loader", spec, self.context())
        return self._router

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = self.registry.create("store", self.config.store, self.context())
        return self._store


# ---------------------------------------------------------------------- prepare: load + chunk


class _SourceBuilder:
    """Hashes and chunks one source's documents against its stored state (the in-process ``_SourceWriter.add``)."""

    def __init__(self, source: str, hint: SourceState | None, parts: Parts):
        self.work = SourceWork(source=source, hint=hint)
        self.parts = parts
        self.ids: set[str] = set()
        self.counts = {"documents": 0, "unchanged": 0, "updated": 0}

    def add(self, document: Document) -> None:
        if document.id in self.ids:
            raise LoaderError(f"two documents share the id {document.id!r}", source=self.work.source)
        self.ids.add(document.id)
        self.counts["documents"] += 1
        digest = content_hash(document, self.parts.chunker.fingerprint, self.parts.model_id)
        meta = metadata_hash(document)
        hint = self.work.hint
        if hint is not None and hint.documents.get(document.id) == digest:
            if hint.metadata.get(document.id) == meta:
                self.work.documents.append(DocumentWork(id=document.id, digest=digest, meta=meta, chunks=None, embed=False))
                self.counts["unchanged"] += 1
                return
            self.counts["updated"] += 1
            embed = False
        else:
            embed = True
        chunks = tuple(attrs.evolve(c, content_hash=digest, metadata_hash=meta) for c in self.parts.chunker.chunk(document))
        self.work.documents.append(DocumentWork(id=document.id, digest=digest, meta=meta, chunks=chunks, embed=embed))


def prepare(item: PlanItem, parts: Parts) -> PathWork:
    """Load one path and chunk what changed; a failure ends the path as in-process (earlier sources stay whole)."""
    out = PathWork(item=item)
    seen: set[str] = set()
    builder: _SourceBuilder | None = None

    def hint_for(source: str) -> SourceState | None:
        return item.hint if source == item.path else None  # another source's state is read when written

    try:
        iterator = iter(parts.router.get(item.loader).load(item.path))
        while True:
            try:
                document = next(iterator)
            except StopIteration:
                break
            except LoaderError as exc:
                if builder is not None and exc.source != builder.work.source:
                    out.sources.append(builder.work)  # the error is about another source: this one arrived whole
                    builder = None
                raise
            if item.tags:
                document = attrs.evolve(document, tags=tuple(dict.fromkeys((*document.tags, *item.tags))))
            check_document(document)
            if builder is None or document.source != builder.work.source:
                if builder is not None:
                    out.sources.append(builder.work)
                if document.source in seen:
                    builder = None
                    raise LoaderError("documents of one source must come together", source=document.source)
                seen.add(document.source)
                builder = _SourceBuilder(document.source, hint_for(document.source), parts)
            builder.add(document)
        if builder is not None:
            out.sources.append(builder.work)
            builder = None
    except RagloomError as exc:
        out.problem = Problem.of(exc, item.path)
        if builder is not None:
            out.partial = builder.counts
    return out


# ---------------------------------------------------------------------- embed


def _embed_source(embedder: Embedder, source: SourceWork) -> None:
    texts = source.texts()
    source.vectors = embed_in_batches(embedder, texts) if texts else None


def embed_paths(paths: Sequence[PathWork], embedder: Embedder) -> None:
    """Embed every changed chunk of a batch of paths in one stream of embedder batches.

    When the batch fails, each source is embedded alone, so the failure lands on
    its source: the path keeps the sources before it, as in-process.
    """
    sources = [s for p in paths for s in p.sources]
    texts = [t for s in sources for t in s.texts()]
    if not texts:
        return
    try:
        vectors = embed_in_batches(embedder, texts)
    except RagloomError:
        for path in paths:
            for position, source in enumerate(path.sources):
                try:
                    _embed_source(embedder, source)
                except RagloomError as exc:
                    path.problem = Problem.of(exc, path.item.path)
                    path.partial = _counts_of(source)
                    del path.sources[position:]
                    break
        return
    start = 0
    for source in sources:
        count = len(source.texts())
        source.vectors = vectors[start : start + count] if count else None
        start += count


def _counts_of(source: SourceWork) -> dict[str, int]:
    hint = source.hint
    unchanged = sum(1 for d in source.documents if d.chunks is None)
    updated = sum(1 for d in source.documents if d.chunks is not None and not d.embed and hint is not None)
    return {"documents": len(source.documents), "unchanged": unchanged, "updated": updated}


# ---------------------------------------------------------------------- write


class Writer:
    """Writes paths through one store session, flushing every ``commit_every`` sources or ``batch_size`` chunks."""

    def __init__(self, store: Store, session: WriteSession, namespace: str, *, commit_every: int, batch_size: int):
        self.store = store
        self.session = session
        self.namespace = namespace
        self.commit_every = commit_every
        self.batch_size = batch_size
        self.touched: set[str] = set()
        self.sources_since_flush = 0
        self.chunks_since_flush = 0

    def flush(self) -> None:
        if self.sources_since_flush or self.chunks_since_flush:
            self.session.flush()
        self.sources_since_flush = self.chunks_since_flush = 0

    def states(self, paths: Sequence[PathWork]) -> dict[str, SourceState]:
        """Stored states of sources the driver did not read (a loader's other sources, sources written twice), in one call."""
        wanted = [s.source for p in paths for s in p.sources if s.hint is None or s.source in self.touched]
        if not wanted:
            return {}
        if any(w in self.touched for w in wanted):
            self.flush()
        return self.store.source_states(self.namespace, list(dict.fromkeys(wanted)))

    def write_path(self, path: PathWork, states: dict[str, SourceState]) -> PathOutcome:
        counts = Counts()
        counts.add(path.partial)
        problem = path.problem
        written_sources: list[str] = []
        for source in path.sources:
            state = states.get(source.source) if source.hint is None or source.source in self.touched else source.hint
            if state is None:
                self.flush()
                state = self.store.source_states(self.namespace, [source.source])[source.source]
            try:
                self._write_source(source, state, counts)
            except RagloomError as exc:
                problem = Problem.of(exc, path.item.path)
                break
            written_sources.append(source.source)
        return PathOutcome(
            index=path.item.index,
            path=path.item.path,
            url=path.item.url,
            counts=counts,
            problem=problem,
            loaded_itself=path.loaded_itself,
            touched=bool(written_sources),
        )

    def _write_source(self, work: SourceWork, state: SourceState, counts: Counts) -> None:
        stage: SourceStage | None = None
        keep: set[str] = set()
        changed = False
        vectors = work.vectors if work.vectors is not None else np.zeros((0, 0), dtype=np.float32)
        row = 0

        def staged() -> SourceStage:
            nonlocal stage
            if stage is None:
                self.touched.add(work.source)
                stage = self.session.stage(work.source, state)
            return stage

        try:
            for document in work.documents:
                counts.documents += 1
                rows = len(document.chunks) if document.embed and document.chunks else 0
                if state.documents.get(document.id) == document.digest:
                    row += rows  # embedded against an older state: the stored vectors stand
                    if state.metadata.get(document.id) == document.meta:
                        keep.add(document.id)
                        counts.unchanged += 1
                        continue
                    if document.chunks is None:
                        raise StoreError(f"{work.source}: document {document.id!r} changed in the store during this ingest; ingest again")
                    staged().update_metadata(list(document.chunks))
                    counts.updated += 1
                    changed = True
                    self.chunks_since_flush += len(document.chunks)
                    continue
                if not document.embed or document.chunks is None:
                    raise StoreError(f"{work.source}: document {document.id!r} changed in the store during this ingest; ingest again")
                changed = True
                chunks = list(document.chunks)
                if chunks:
                    block = vectors[row : row + rows]
                    row += rows
                    staged().write(chunks, block)
                    counts.chunks += len(chunks)
                    self.chunks_since_flush += len(chunks)
            counts.sources += 1
            if not changed and keep == set(state.documents) and state.exists:
                counts.unchanged_sources += 1
                return
            current = staged()
            current.keep(keep)
            counts.removed += current.commit()
        except BaseException:
            if stage is not None:
                stage.abort()
            raise
        self.sources_since_flush += 1
        if self.sources_since_flush >= self.commit_every or self.chunks_since_flush >= self.batch_size:
            self.flush()


def write_paths(writer: Writer, paths: Sequence[PathWork], emit: Callable[[PathOutcome], None]) -> None:
    """Write a batch of paths (their other sources' states read in one call), emitting each outcome."""
    states = writer.states(paths)
    for path in paths:
        emit(writer.write_path(path, states))
