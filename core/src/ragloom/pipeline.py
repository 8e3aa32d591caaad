"""Pipeline: ingest sources, answer queries, remove sources, report stats.

Ingestion semantics (see docs/concepts.md):

- document ids derive from the source (+ row / item / page), chunk ids from the
  document id and position;
- every chunk carries ``content_hash(document, chunker fingerprint, embedder
  model id)``; a document whose hash is already stored is not chunked or
  embedded again;
- every chunk also carries ``metadata_hash(document)`` (metadata + tags): a
  document whose text is unchanged but whose metadata or tags changed is
  updated in the store without embedding;
- one ingest call writes through one store write session; a changed source is
  staged as a new generation (a ``SourceStage``) and committed at once (its
  unchanged documents keep their vectors); a failure aborts the stage, so the
  old generation stays whole; the session is flushed every ``[ingest]
  commit_every`` sources or ``batch_size`` chunks, so a store may group many
  small sources into one transaction;
- the stored states of a directory's files are read in batches
  (``Store.source_states``), not one lookup per file;
- ingesting a directory again removes the stored sources that vanished from it;
- memory is bounded by ``[ingest] batch_size`` chunks, not by the corpus.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ragloom.config import ComponentSpec, PipelineConfig, SourceConfig, parse_component, parse_ingest
from ragloom.embedders.base import embed_in_batches
from ragloom.errors import ConfigError, DimensionMismatchError, LoaderError, RagloomError, RerankError, short_repr
from ragloom.filters import Condition, parse_filter, walk
from ragloom.loaders.base import SourceRouter, is_url, resolve_source
from ragloom.plugins import BuildContext, Registry
from ragloom.protocols import Chunker, Embedder, Executor, LLMLike, Reranker, Retriever, Store
from ragloom.rerankers.base import rerank_or_fallback, resolve_top_n
from ragloom.stores.base import SourceStage, SourceState, WriteSession
from ragloom.stores.keyword_index import forget, open_session
from ragloom.types import (
    VOLATILE_METADATA_KEYS,
    Chunk,
    Document,
    Failure,
    IngestResult,
    IngestTarget,
    Result,
    content_hash,
    metadata_hash,
    same_content,
    with_hashes,
)

logger = logging.getLogger(__name__)

#: With a reranker and a per-query ``top_k``, the pool retrieved before reranking is this many times ``top_k``.
CANDIDATES_PER_RESULT = 4


@attrs.frozen(kw_only=True)
class Progress:
    """One step of an ingest: ``done`` of ``total`` files (``total`` 0 when unknown) through ``stage``.

    In-process every file goes through all stages at once: ``stage`` is
    ``"ingest"``. An executor running the stages apart (ragloom-ray) reports
    each: ``"chunked"`` (loaded and chunked), ``"embedded"``, ``"written"``,
    with ``chunks`` done so far in that stage; ``source`` is the last file
    done, ``""`` when the stage reports counts only.
    """

    source: str
    done: int
    total: int
    stage: str = "ingest"
    chunks: int = 0


ProgressCallback = Callable[[Progress], None]


@attrs.define
class _Tally:
    """The mutable counterpart of IngestResult while an ingest runs."""

    documents: int = 0
    chunks: int = 0
    unchanged: int = 0
    updated: int = 0
    removed: int = 0
    sources: int = 0
    unchanged_sources: int = 0
    removed_sources: list[str] = attrs.field(factory=list)
    skipped: list[str] = attrs.field(factory=list)
    failed: list[Failure] = attrs.field(factory=list)

    def result(self) -> IngestResult:
        counts: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in attrs.asdict(self, recurse=False).items()}
        return IngestResult(embedded=self.chunks, **counts)  # every written chunk was embedded


def check_count(name: str, value: Any) -> None:
    """ConfigError unless ``value`` is None or an integer > 0 (``top_k``, ``top_n`` at query time)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"invalid value {short_repr(value)} @ {name}: expected an integer > 0")


class Pipeline:
    """A built pipeline. Make one with :meth:`from_toml`, :meth:`from_config` or :meth:`builder`."""

    def __init__(
        self,
        *,
        config: PipelineConfig,
        registry: Registry,
        loaders: SourceRouter,
        chunker: Chunker,
        embedder: Embedder,
        store: Store,
        retriever: Retriever,
        reranker: Reranker | None = None,
        llm: LLMLike | None = None,
    ):
        self.config = config
        self.registry = registry
        self.loaders = loaders
        self.chunker = chunker
        self.embedder = embedder
        self.store = store
        self.retriever = retriever
        self.reranker = reranker
        self.llm = llm
        self.namespace = config.namespace
        self._lock = threading.Lock()
        self._counters = {"documents_ingested": 0, "chunks_written": 0, "queries": 0, "rerank_failures": 0}
        spec = config.reranker
        self._reranker_name = repr(spec.type) if spec is not None and not spec.type.startswith("<") else type(reranker).__name__
        # strict: [reranker] strict = true (any reranker), or a strict option of the reranker's own config
        self._rerank_strict = bool((spec is not None and spec.strict) or getattr(getattr(reranker, "config", None), "strict", False))
        store_dim = store.dimension()
        if store_dim is not None and store_dim != embedder.dim:
            raise DimensionMismatchError(store_dim=store_dim, embedder_dim=embedder.dim)

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str], *, registry: Registry | None = None) -> Pipeline:
        """Build the pipeline a TOML file declares."""
        registry = registry or Registry()
        return cls.from_config(PipelineConfig.from_toml(path, registry=registry), registry=registry)

    @classmethod
    def from_config(cls, config: PipelineConfig, *, registry: Registry | None = None, instances: dict[str, Any] | None = None) -> Pipeline:
        """Build components from a validated config (``instances`` replace named stages)."""
        return _assemble(config, registry or Registry(), dict(instances or {}))

    @classmethod
    def builder(cls, *, registry: Registry | None = None) -> PipelineBuilder:
        """A fluent builder backed by the same config classes as TOML."""
        return PipelineBuilder(registry=registry)

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    # ------------------------------------------------------------------ ingest

    def ingest(
        self,
        source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
        *,
        loader: str | None = None,
        tags: Iterable[str] = (),
        progress: ProgressCallback | None = None,
        chunker: Any = None,
    ) -> IngestResult:
        """Ingest a path, URL or list of them; ``None`` ingests the configured ``[[sources]]``.

        ``chunker`` overrides the configured chunker for this call (:meth:`chunker_for`).
        """
        if source is None:
            extra = tuple(tags)  # --tag applies to the configured sources too
            targets = [(t, s.loader, tuple(dict.fromkeys((*s.tags, *extra)))) for s in self.config.sources for t in s.targets()]
            if not targets:
                raise ConfigError("nothing to ingest: give a source or declare [[sources]] in the config")
        elif isinstance(source, (str, os.PathLike)):
            targets = [(os.fspath(source), loader, tuple(tags))]
        else:
            targets = [(os.fspath(s), loader, tuple(tags)) for s in source]
        if loader is not None:
            self.registry.get("loader", loader)
        if self.config.executor is not None:  # e.g. ragloom-ray: same semantics, run elsewhere
            if chunker is not None:
                raise ConfigError(f"a per-call chunker is not supported with the {self.config.executor.type!r} executor: set [chunker] in the config")
            context = BuildContext(registry=self.registry, base_dir=self.config.base_dir, namespace=self.namespace, embedder=self.embedder, store=self.store)
            executor: Executor = self.registry.create("executor", self.config.executor, context, path="$.ingest")
            return executor.ingest(self, [IngestTarget(source=t, loader=n, tags=g) for t, n, g in targets], progress=progress)
        chunker_now = self.chunker_for(chunker)
        tally = _Tally()
        with open_session(self.store, self.namespace) as session, _IngestRun(self, session, tally, chunker_now) as run:
            for target, target_loader, target_tags in targets:
                self._ingest_target(target, target_loader, target_tags, run, progress)
        return tally.result()

    def _ingest_target(self, target: str, loader_name: str | None, tags: tuple[str, ...], run: _IngestRun, progress: ProgressCallback | None) -> None:
        tally = run.tally
        try:
            resolved = resolve_source(target, self.config.base_dir)
        except LoaderError as exc:
            self._fail(exc, tally)
            return
        url = is_url(resolved)
        if not url and not os.path.exists(resolved):
            self._fail(LoaderError("no such file or directory", source=resolved), tally)
            return
        is_dir = not url and os.path.isdir(resolved)
        if loader_name is not None and not is_dir:
            files, skipped = [resolved], list[str]()
        else:
            files, skipped = self.loaders.expand(resolved)
            if not url and not is_dir and not files:
                self._fail(LoaderError(f"no loader for {Path(resolved).suffix or 'files without a suffix'} files", source=resolved), tally)
                return
        tally.skipped.extend(skipped)
        for done, path in enumerate(files, start=1):
            if not url and (done - 1) % _STATE_BATCH == 0:
                run.prefetch([f for f in files[done - 1 : done - 1 + _STATE_BATCH] if _utf8(f)])  # bad names fail below
            name = loader_name or self.loaders.name_for(path)
            if not url and not _utf8(path):
                printable = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                self._fail(LoaderError("file name is not valid Unicode (not UTF-8); rename the file", source=printable), tally)
                continue
            if name is None:
                self._fail(LoaderError("no loader handles this URL scheme", source=path), tally)
                continue
            try:
                loaded = self._ingest_documents(self.loaders.get(name).load(path), tags, run)
                if not url and path not in loaded:
                    run.flush()
                    self._remove_if_stored(path, tally)
            except RagloomError as exc:
                self._fail(exc, tally, source=path)
            if progress is not None:
                progress(Progress(source=path, done=done, total=len(files)))
        if is_dir and self.config.ingest.remove_missing:
            run.flush()
            prefix = resolved.rstrip(os.sep) + os.sep
            present = set(files) | set(skipped)
            for stored in self.store.sources(self.namespace):
                if stored.startswith(prefix) and stored not in present:
                    self._remove_if_stored(stored, tally)

    def ingest_documents(self, documents: Iterable[Document], *, tags: Iterable[str] = (), chunker: Any = None) -> IngestResult:
        """Ingest already loaded documents (grouped by source), e.g. a BEIR corpus or an app's records.

        ``chunker`` overrides the configured chunker for this call (:meth:`chunker_for`).
        """
        chunker_now = self.chunker_for(chunker)
        tally = _Tally()
        with open_session(self.store, self.namespace) as session, _IngestRun(self, session, tally, chunker_now) as run:
            self._ingest_documents(documents, tuple(tags), run)
        return tally.result()

    def chunker_for(self, override: Any = None) -> Chunker:
        """The chunker of one ingest call: the configured one, or ``override``.

        ``override``: a table like ``[chunker]`` in TOML (``{"type": "sentence", "size": 500}``:
        that chunker with those options, defaults for the rest), a table without ``type``
        (the configured chunker's options with these changed), a registered name, or a
        Chunker instance. Options are validated like TOML (a bad one is a ConfigError
        naming the key). The override's fingerprint goes into the content hash, so a later
        ingest with the configured chunker chunks those documents again.
        """
        if override is None:
            return self.chunker
        if isinstance(override, str):
            override = {"type": override}
        if not isinstance(override, Mapping):
            if not callable(getattr(override, "chunk", None)) or not isinstance(getattr(override, "fingerprint", None), str):
                raise ConfigError(f"invalid value {short_repr(override)} @ chunker: expected a table of chunker options, a chunker name or a Chunker")
            return override  # type: ignore[no-any-return]
        options = dict(override)
        configured = self.config.chunker
        if "type" not in options and not configured.type.startswith("<"):
            from ragloom.structuring import converter

            base = converter.unstructure(configured.config) if configured.config is not None else {}
            options = {**base, **options, "type": configured.type}
        elif "type" not in options:
            raise ConfigError("chunker options need a 'type' @ chunker: the configured chunker is an instance, not a registered name")
        spec = parse_component("chunker", options, self.registry, path="chunker")
        context = BuildContext(
            registry=self.registry, base_dir=self.config.base_dir, namespace=self.namespace, loader_options=dict(self.config.loaders),
            llm=self.llm, embedder=self.embedder, store=self.store,
        )
        return self.registry.create("chunker", spec, context, path="chunker")  # type: ignore[no-any-return]

    def _fail(self, exc: RagloomError, tally: _Tally, *, source: str | None = None) -> None:
        where = getattr(exc, "source", None) or source or ""
        if self.config.ingest.on_error == "fail":
            if isinstance(exc, LoaderError) or not source:
                raise exc
            raise LoaderError(f"{type(exc).__name__}: {exc}", source=source) from exc
        reason = getattr(exc, "reason", None) or str(exc)
        tally.failed.append(Failure(source=where, reason=reason, error=type(exc).__name__))

    def _remove_if_stored(self, source: str, tally: _Tally) -> None:
        removed = self.remove_source(source)
        if removed:
            tally.removed += removed
            tally.removed_sources.append(source)

    def _ingest_documents(self, documents: Iterable[Document], tags: tuple[str, ...], run: _IngestRun) -> set[str]:
        """Ingest a stream of documents grouped by source; return the sources seen."""
        seen: set[str] = set()
        writer: _SourceWriter | None = None
        iterator = iter(documents)
        try:
            while True:
                try:
                    document = next(iterator)
                except StopIteration:
                    break
                except LoaderError as exc:
                    if writer is not None and exc.source != writer.source:
                        writer.finish()  # the error is about another source: this one arrived whole
                        writer = None
                    raise
                if tags:
                    document = attrs.evolve(document, tags=tuple(dict.fromkeys((*document.tags, *tags))))
                meta = checked_metadata_hash(document)
                if writer is None or document.source != writer.source:
                    if writer is not None:
                        writer.finish()
                        writer = None  # finished (perhaps held to embed with the next sources): never aborted below
                    if document.source in seen:
                        raise LoaderError("documents of one source must come together", source=document.source)
                    seen.add(document.source)
                    writer = _SourceWriter(run, document.source)
                writer.add(document, meta)
            if writer is not None:
                writer.finish()
                writer = None
        finally:
            if writer is not None:
                writer.abort()
        return seen

    # ------------------------------------------------------------------ query and maintenance

    def query(
        self,
        text: str,
        *,
        top_k: int | None = None,
        threshold: float | None = None,
        filter: Any = None,
        top_n: int | None = None,
        candidates: int | None = None,
        options: Mapping[str, Any] | None = None,
        **retriever_options: Any,
    ) -> list[Result]:
        """Retrieve (and rerank, when a reranker is configured) chunks for ``text``.

        ``top_k``: the results returned (after reranking, when there is a reranker;
        ``top_n`` is its older spelling, and with both given ``top_k`` is the pool, as
        before). ``candidates``: the pool retrieved before reranking (default
        ``top_k * 4``; without ``top_k`` the retriever's configured ``top_k``). Other keywords (``lambda_mult``, ``weights`` ...), and ``options``
        for names that collide with these, change the retriever's config for this
        query only (:mod:`ragloom.retrievers.options`); an option it does not know is
        a ConfigError naming it. A failing reranker never fails the query
        (:meth:`_rerank`).
        """
        if not isinstance(text, str) or not text.strip():
            raise ConfigError("a query must be a non-empty string")
        check_count("top_k", top_k)
        check_count("top_n", top_n)
        check_count("candidates", candidates)
        parsed = parse_filter(filter)
        retriever = self._retriever_for({**(options or {}), **retriever_options})
        if self.reranker is None:
            if candidates is not None:
                raise ConfigError("query option 'candidates' is the pool fetched before reranking, and this pipeline has no reranker")
            results = retriever.retrieve(text, top_k=top_k, threshold=threshold, filter=parsed)
        else:
            keep = top_n if top_n is not None else top_k
            if candidates is not None:
                pool: int | None = candidates
            elif top_n is not None and top_k is not None:
                pool = top_k  # the older spelling: top_k the candidates, top_n the results
            else:
                pool = keep * CANDIDATES_PER_RESULT if keep is not None else None
            if pool is not None and keep is not None and pool < keep:
                raise ConfigError(f"query option 'candidates' ({pool}) must be at least top_k ({keep}): reranking only reorders the pool")
            results = retriever.retrieve(text, top_k=pool, threshold=threshold, filter=parsed)
            if results:
                results = self._rerank(text, results, keep)
        with self._lock:
            self._counters["queries"] += 1
        if not results and parsed is not None:
            for key in self.missing_filter_keys(parsed):
                warnings.warn(f"no stored chunk has the metadata key {short_repr(key)} (filter {short_repr(filter)})", UserWarning, stacklevel=2)
        return results

    def _retriever_for(self, options: Mapping[str, Any]) -> Retriever:
        """The configured retriever, or a copy answering with per-query ``options``."""
        if not options:
            return self.retriever
        from ragloom.retrievers.options import retriever_with_options

        return retriever_with_options(self.retriever, options, name=repr(self.config.retriever.type))

    def _rerank(self, text: str, results: list[Result], top_n: int | None) -> list[Result]:
        """Rerank through the shared fallback policy (:func:`ragloom.rerankers.base.rerank_or_fallback`).

        Whatever the reranker is (built-in or a plugin), an exception or an unusable
        answer keeps the retrieval order (``metadata["rerank_fallback"] = True``), is
        logged and counted in :meth:`stats` (``rerank_failures``, also when the
        reranker fell back by itself); ``strict = true`` raises instead.
        """
        reranker = self.reranker
        assert reranker is not None
        keep = resolve_top_n(int(getattr(reranker, "top_n", len(results))), top_n)
        errors: list[RerankError] = []
        out = rerank_or_fallback(
            lambda: reranker.rerank(text, results, top_n),
            results,
            keep,
            strict=self._rerank_strict,
            on_error=errors.append,
            logger=logger,
            what=f"reranker {self._reranker_name}",
        )
        if errors or any(r.metadata.get("rerank_fallback") for r in out):
            self._count("rerank_failures", 1)
        return out

    def missing_filter_keys(self, filter: Any) -> list[str]:
        """Metadata keys a filter names that no stored chunk of the namespace has."""
        dim = self.store.dimension()
        if dim is None:
            return []
        probe = np.ones(dim, dtype=np.float32)
        keys = dict.fromkeys(node.key for node in walk(parse_filter(filter)) if isinstance(node, Condition) and not node.reserved)
        return [key for key in keys if not self.store.search(self.namespace, probe, top_k=1, filter=Condition(key, "$exists", True))]

    def explain_empty(self, text: str, *, threshold: float | None = None, filter: Any = None) -> str:
        """Why a query found nothing: an empty store, a filter key no chunk has, the filter or the threshold."""
        if self.store.count(self.namespace) == 0:
            hint = f"the store holds nothing in namespace {self.namespace!r}"
            if self.config.store.type == "memory":
                return hint + " (the memory store forgets everything when its process exits: configure a persistent [store] such as duckdb)"
            return hint + " (run `ragloom ingest`)"
        if filter is not None:
            missing = self.missing_filter_keys(filter)
            if missing:
                names = ", ".join(repr(k) for k in missing)
                return f"no stored chunk has the metadata key {names} (JSON/JSONL loaders keep only the fields listed in metadata_fields)"
            if not self.query(text, filter=filter, top_k=1):
                return "the filter excluded every stored chunk"
        if threshold is not None:
            best = self.query(text, filter=filter, top_k=1)
            if best:
                return f"no result scored at least the threshold {threshold} (the best scored {best[0].score:.3f})"
        return "the retriever found no matching chunk"

    def remove_source(self, source: str | os.PathLike[str]) -> int:
        """Delete every chunk of a source, or of every source under a directory; return the count.

        ``source`` is matched as stored first (a URL, an app's id such as
        ``ticket:42``, an absolute path), then as a path resolved like at ingest.
        """
        return sum(self.remove_sources(self.match_sources(source)).values())

    def remove_sources(self, sources: Iterable[str]) -> dict[str, int]:
        """Delete the chunks of these stored sources (exact keys); return ``{source: chunks}``."""
        removed = {key: self.store.delete(self.namespace, parse_filter({"source": key})) for key in sources}
        for key in removed:
            forget(self.store, self.namespace, {"source": key})
        return removed

    def match_sources(self, source: str | os.PathLike[str]) -> list[str]:
        """Stored sources a path, URL, id or directory refers to (empty when nothing is stored for it)."""
        text = os.fspath(source)
        if not isinstance(text, str) or not text.strip():
            raise ConfigError("a source to remove must be a non-empty path, URL or id (use clear() to empty the namespace)")
        stored = self.store.sources(self.namespace)
        if text in stored:
            return [text]
        if is_url(text):
            return []
        resolved = resolve_source(text, self.config.base_dir)
        if resolved in stored:
            return [resolved]
        prefix = resolved.rstrip(os.sep) + os.sep
        return [key for key in stored if key.startswith(prefix)]

    def clear(self) -> int:
        """Delete everything stored in this pipeline's namespace; return the number of chunks removed."""
        removed = int(self.store.delete(self.namespace, None))
        forget(self.store, self.namespace, None)
        return removed

    def sources(self) -> list[str]:
        """Sources stored in this pipeline's namespace."""
        return self.store.sources(self.namespace)

    def source_counts(self) -> dict[str, int | None]:
        """``{source: chunks}`` of this namespace (counts None when the store cannot count per source)."""
        counter = getattr(self.store, "source_counts", None)
        if counter is None:
            return dict.fromkeys(self.store.sources(self.namespace))
        return dict(counter(self.namespace))

    def stats(self) -> dict[str, Any]:
        """Counts for this pipeline: what the store holds and what this process did."""
        store_stats = dict(self.store.stats(self.namespace))
        with self._lock:
            counters = dict(self._counters)
        return {
            "namespace": self.namespace,
            "documents": store_stats.get("documents"),
            "chunks": store_stats.get("chunks", 0),
            "sources": store_stats.get("sources", 0),
            "documents_ingested": counters["documents_ingested"],
            "chunks_written": counters["chunks_written"],
            "queries": counters["queries"],
            "rerank_failures": counters["rerank_failures"],
            "embedder": self.embedder.model_id,
            "chunker": self.chunker.fingerprint,
            "store": store_stats,
        }

    # ------------------------------------------------------------------ async (see ragloom.aio)

    async def aingest(self, source: Any = None, **options: Any) -> IngestResult:
        """:meth:`ingest` without blocking the event loop."""
        from ragloom import aio

        return await aio.aingest(self, source, **options)

    async def aquery(self, text: str, **options: Any) -> list[Result]:
        """:meth:`query` without blocking the event loop."""
        from ragloom import aio

        return await aio.aquery(self, text, **options)

    async def aremove_source(self, source: str | os.PathLike[str]) -> int:
        """:meth:`remove_source` without blocking the event loop."""
        from ragloom import aio

        return await aio.aremove_source(self, source)

    async def astats(self) -> dict[str, Any]:
        """:meth:`stats` without blocking the event loop."""
        from ragloom import aio

        return await aio.astats(self)

    async def aclose(self) -> None:
        """Close the async HTTP clients and the store."""
        from ragloom import aio

        await aio.aclose(self)

    def _count(self, key: str, amount: int) -> None:
        with self._lock:
            self._counters[key] += amount


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


#: The encoder of ``check_document``'s metadata check, built once rather than per document.
_METADATA_JSON = json.JSONEncoder(ensure_ascii=False, default=str)


def check_document(document: Document) -> None:
    """LoaderError when a document carries text UTF-8 cannot encode (a lone surrogate, a file name that is not UTF-8)."""
    checked_metadata_hash(document)


def checked_metadata_hash(document: Document) -> str:
    """:func:`metadata_hash` of a document :func:`check_document` accepts (one JSON encoding serves both), else LoaderError."""
    for what, value in (("file name", document.source), ("text", document.text), ("id", document.id)):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            source = document.source.encode("utf-8", "backslashreplace").decode("utf-8")
            raise LoaderError(f"{what} is not valid Unicode (a lone surrogate or undecodable byte at index {exc.start})", source=source) from None
    try:
        if not VOLATILE_METADATA_KEYS.isdisjoint(document.metadata):  # stored, though left out of the hash: checked too
            _METADATA_JSON.encode([document.metadata, document.tags]).encode("utf-8")
        return metadata_hash(document)  # keys sorted: keys of several types that do not compare are refused here
    except UnicodeEncodeError as exc:
        source = document.source.encode("utf-8", "backslashreplace").decode("utf-8")
        raise LoaderError(f"metadata is not valid Unicode (a lone surrogate at index {exc.start} of its JSON)", source=source) from None
    except (ValueError, TypeError, RecursionError) as exc:
        raise LoaderError(f"metadata cannot be stored as JSON ({type(exc).__name__}: {exc})", source=document.source) from None


#: Sources whose stored states one ``source_states`` call reads ahead while a directory is ingested.
_STATE_BATCH = 2048


class _IngestRun:
    """One ingest call: its write session and tally, source states read ahead, flush pacing."""

    def __init__(self, pipeline: Pipeline, session: WriteSession, tally: _Tally, chunker: Chunker | None = None):
        self.pipeline = pipeline
        self.session = session
        self.tally = tally
        self.chunker = chunker or pipeline.chunker
        self.states: dict[str, SourceState] = {}
        self.touched: set[str] = set()
        self.sources_since_flush = 0
        self.chunks_since_flush = 0
        self.deferred: list[_SourceWriter] = []
        self.deferred_chunks = 0

    def prefetch(self, sources: list[str]) -> None:
        """Read the stored states of upcoming sources in one call."""
        wanted = [s for s in dict.fromkeys(sources) if s not in self.states and s not in self.touched]
        if wanted:
            self.states.update(self.pipeline.store.source_states(self.pipeline.namespace, wanted))

    def state(self, source: str) -> SourceState:
        """The stored state of a source: read ahead, or looked up now (after a flush if this run changed it)."""
        state = self.states.pop(source, None)
        if state is not None:
            return state
        if source in self.touched:
            self.flush()
        return self.pipeline.store.source_states(self.pipeline.namespace, [source])[source]

    def stage(self, source: str, state: SourceState) -> SourceStage:
        """Open the new generation of a source."""
        self.touched.add(source)
        self.states.pop(source, None)
        return self.session.stage(source, state)

    def wrote(self, chunks: int) -> None:
        """Count chunks written or updated since the last flush."""
        self.chunks_since_flush += chunks

    def committed(self) -> None:
        """A source was committed: flush every ``commit_every`` sources or ``batch_size`` chunks."""
        self.sources_since_flush += 1
        ingest = self.pipeline.config.ingest
        if self.sources_since_flush >= ingest.commit_every or self.chunks_since_flush >= ingest.batch_size:
            self.flush()

    def defer(self, writer: _SourceWriter) -> None:
        """Hold a finished source whose new chunks are not embedded yet, to embed them with the next sources'.

        A corpus of many small files then reaches the embedder in full batches
        (a model embeds a batch of 256 chunks sorted by length much faster than
        128 calls of two); :meth:`drain` writes and commits the held sources in order.
        """
        self.deferred.append(writer)
        self.touched.add(writer.source)  # a later state() of it waits for the commit
        self.deferred_chunks += len(writer.pending)
        if self.deferred_chunks >= self.pipeline.config.ingest.batch_size:
            self.drain()

    def drain(self) -> None:
        """Embed the held sources' chunks in one stream of batches, then write and commit each source.

        When the embedder fails on the whole, each source is embedded alone, so
        the failure lands on its own source and the others commit.
        """
        writers, self.deferred, self.deferred_chunks = self.deferred, [], 0
        if not writers:
            return
        try:
            vectors: np.ndarray | None = embed_in_batches(self.pipeline.embedder, [c.text for w in writers for c in w.pending])
        except RagloomError:
            vectors = None
        start = 0
        for writer in writers:
            count = len(writer.pending)
            try:
                if vectors is None:
                    writer.flush()
                else:
                    writer.write(vectors[start : start + count])
                writer.commit()
            except RagloomError as exc:
                writer.abort()
                self.pipeline._fail(exc, self.tally, source=writer.source)
            start += count

    def __enter__(self) -> _IngestRun:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        """Commit the sources still held, also when a RagloomError stops the ingest (that error is the one reported)."""
        if exc_type is None:
            self.drain()
        elif issubclass(exc_type, RagloomError):
            with contextlib.suppress(RagloomError):
                self.drain()

    def flush(self) -> None:
        """Make every committed source durable and visible (held sources first)."""
        self.drain()
        if self.sources_since_flush or self.chunks_since_flush:
            self.session.flush()
        self.sources_since_flush = self.chunks_since_flush = 0


class _SourceWriter:
    """Writes one source's new generation in batches, then commits or aborts it."""

    def __init__(self, run: _IngestRun, source: str):
        self.run = run
        self.pipeline = run.pipeline
        self.source = source
        self.tally = run.tally
        self.state = run.state(source)
        self.stage: SourceStage | None = None
        self.keep: set[str] = set()
        self.written_documents: set[str] = set()
        self.updated_documents: set[str] = set()
        self.pending: list[Chunk] = []
        self.chunker = run.chunker
        self.fingerprint = self.chunker.fingerprint
        self.model_id = self.pipeline.embedder.model_id
        self.batch_size = self.pipeline.config.ingest.batch_size

    def _staged(self) -> SourceStage:
        if self.stage is None:
            self.run.drain()  # held sources commit first: one stage open at a time, sources in order
            self.stage = self.run.stage(self.source, self.state)
        return self.stage

    def add(self, document: Document, meta: str) -> None:
        """Stage ``document`` (its :func:`metadata_hash` is ``meta``) unless the store holds it unchanged."""
        if document.id in self.keep or document.id in self.written_documents or document.id in self.updated_documents:
            raise LoaderError(f"two documents share the id {document.id!r}", source=self.source)
        self.tally.documents += 1
        digest = content_hash(document, self.fingerprint, self.model_id)
        if same_content(self.state.documents.get(document.id), document, self.fingerprint, self.model_id, digest):
            if self.state.metadata.get(document.id) == meta:
                self.keep.add(document.id)
                self.tally.unchanged += 1
                return
            # same text, new metadata or tags: chunk again (cheap), keep the stored vectors
            chunks = [attrs.evolve(c, content_hash=digest, metadata_hash=meta) for c in self.chunker.chunk(document)]
            self._staged().update_metadata(chunks)
            self.updated_documents.add(document.id)
            self.tally.updated += 1
            self.run.wrote(len(chunks))
            return
        self.written_documents.add(document.id)
        for chunk in self.chunker.chunk(document):
            self.pending.append(with_hashes(chunk, digest, meta))
            if len(self.pending) >= self.batch_size:
                self.flush()

    def flush(self) -> None:
        if self.pending:
            self._staged()  # the held sources are written and committed before this one's chunks are embedded
            self.write(embed_in_batches(self.pipeline.embedder, [c.text for c in self.pending]))

    def write(self, vectors: np.ndarray) -> None:
        """Stage the pending chunks with their ``vectors``."""
        chunks, self.pending = self.pending, []
        self._staged().write(chunks, vectors)
        self.tally.chunks += len(chunks)
        self.run.wrote(len(chunks))
        self.pipeline._count("chunks_written", len(chunks))

    def finish(self) -> None:
        self.tally.sources += 1
        changed = self.written_documents or self.updated_documents or self.keep != set(self.state.documents)
        if not changed and self.state.exists:
            self.tally.unchanged_sources += 1
            return
        if self.stage is None and self.pending:
            self.run.defer(self)  # embedded with the next sources' chunks, then committed
            return
        self.flush()
        self.commit()

    def commit(self) -> None:
        stage = self._staged()
        stage.keep(self.keep)
        self.tally.removed += stage.commit()
        self.pipeline._count("documents_ingested", len(self.written_documents))
        self.run.committed()

    def abort(self) -> None:
        self.pending = []
        if self.stage is not None:
            self.stage.abort()


# ---------------------------------------------------------------------- assembly


def _build(stage: str, spec: ComponentSpec, registry: Registry, context: BuildContext) -> Any:
    return registry.create(stage, spec, context)


def _assemble(config: PipelineConfig, registry: Registry, instances: dict[str, Any]) -> Pipeline:
    """Every part from the registry (or a given instance), each factory seeing the parts built before it."""
    context = BuildContext(registry=registry, base_dir=config.base_dir, namespace=config.namespace, loader_options=dict(config.loaders))
    llm = instances.get("llm")
    if llm is None and config.llm is not None:
        llm = _build("llm", config.llm, registry, context)
    context = attrs.evolve(context, llm=llm)
    embedder = instances.get("embedder") or _build("embedder", config.embedder, registry, context)
    context = attrs.evolve(context, embedder=embedder)
    store = instances.get("store") or _build("store", config.store, registry, context)
    context = attrs.evolve(context, store=store)
    chunker = instances.get("chunker") or _build("chunker", config.chunker, registry, context)
    retriever = instances.get("retriever") or _build("retriever", config.retriever, registry, context)
    reranker = instances.get("reranker")
    if reranker is None and config.reranker is not None:
        reranker = _build("reranker", config.reranker, registry, context)
    router = _build("loader", ComponentSpec(type="auto", config=config.loaders.get("auto")), registry, context)
    if not isinstance(router, SourceRouter):
        raise ConfigError(f"the 'auto' loader ({type(router).__name__}) must route sources: expand(), name_for() and get()")
    return Pipeline(
        config=config,
        registry=registry,
        loaders=router,
        chunker=chunker,
        embedder=embedder,
        store=store,
        retriever=retriever,
        reranker=reranker,
        llm=llm,
    )


class PipelineBuilder:
    """Fluent construction: each stage by registered name + options, or by instance.

    Options go through the component's config class, exactly as in TOML::

        pipeline = (
            Pipeline.builder()
            .namespace("handbook")
            .chunker("recursive", size=500, overlap=50)
            .embedder("hash", dim=256)
            .store("memory")
            .retriever("similarity", top_k=3)
            .build()
        )
    """

    def __init__(self, *, registry: Registry | None = None):
        self.registry = registry or Registry()
        self._fields: dict[str, Any] = {}
        self._instances: dict[str, Any] = {}
        self._sources: list[SourceConfig] = []
        self._loaders: dict[str, Any] = {}

    def namespace(self, name: str) -> PipelineBuilder:
        """Scope every write and query to ``name``."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"invalid value {name!r} @ $.namespace: expected a non-empty string")
        self._fields["namespace"] = name
        return self

    def base_dir(self, path: str | os.PathLike[str]) -> PipelineBuilder:
        """Folder that relative paths are resolved against (default: the working directory)."""
        self._fields["base_dir"] = Path(path)
        return self

    def source(self, path: str | None = None, *, url: str | None = None, loader: str | None = None, tags: Iterable[str] = ()) -> PipelineBuilder:
        """Add a default source for ``ingest()`` without arguments."""
        self._sources.append(SourceConfig(path=path, url=url, loader=loader, tags=tuple(tags)))
        return self

    def loader(self, name: str, **options: Any) -> PipelineBuilder:
        """Options of one loader (``[loaders.<name>]``)."""
        self._loaders[name] = self.registry.configure("loader", name, options, path=f"$.loaders.{name}", name_path=f"$.loaders.{name}").config
        return self

    def ingest_options(self, **options: Any) -> PipelineBuilder:
        """``[ingest]`` options: ``batch_size``, ``commit_every``, ``on_error``, ``remove_missing``,
        ``executor`` (and its options as a table under its name, e.g. ``ray={"address": "auto"}``)."""
        self._fields["ingest"], self._fields["executor"], self._fields["executors"] = parse_ingest(options, self.registry)
        return self

    def llm(self, client: LLMLike | str | None = None, **options: Any) -> PipelineBuilder:
        """An LLM client instance (anything with ``generate(prompt) -> str``), or a registered name
        (default ``openai``) with ``[llm]`` options."""
        if client is not None and not isinstance(client, str):
            self._instances["llm"] = client
        else:
            self._fields["llm"] = self.registry.configure("llm", client or "openai", options, path="$.llm")
        return self

    def _stage(self, stage: str, component: Any, options: dict[str, Any]) -> PipelineBuilder:
        if isinstance(component, str):
            self._fields[stage] = self.registry.configure(stage, component, options, path=f"$.{stage}")
            self._instances.pop(stage, None)
        else:
            if options:
                raise ConfigError(f"options are given with a component name, not with an instance ({stage})")
            self._instances[stage] = component
            self._fields[stage] = ComponentSpec(type=f"<{type(component).__name__}>")
        return self

    def chunker(self, component: str | Chunker, /, **options: Any) -> PipelineBuilder:
        """The chunker: a registered name with options, or an instance."""
        return self._stage("chunker", component, options)

    def embedder(self, component: str | Embedder, /, **options: Any) -> PipelineBuilder:
        """The embedder: a registered name with options, or an instance."""
        return self._stage("embedder", component, options)

    def store(self, component: str | Store, /, **options: Any) -> PipelineBuilder:
        """The store: a registered name with options, or an instance."""
        return self._stage("store", component, options)

    def retriever(self, component: str | Retriever, /, **options: Any) -> PipelineBuilder:
        """The retriever: a registered name with options, or an instance."""
        return self._stage("retriever", component, options)

    def reranker(self, component: str | Reranker, /, **options: Any) -> PipelineBuilder:
        """The reranker: a registered name with options, or an instance."""
        return self._stage("reranker", component, options)

    def config(self) -> PipelineConfig:
        """The PipelineConfig this builder describes."""
        return PipelineConfig(sources=tuple(self._sources), loaders=dict(self._loaders), **self._fields)

    def build(self) -> Pipeline:
        """Build the pipeline."""
        return _assemble(self.config(), self.registry, dict(self._instances))


def iter_results_as_dicts(results: Iterable[Result]) -> Iterator[dict[str, Any]]:
    """JSON-ready dicts of results (for the CLI and agent tools)."""
    for rank, result in enumerate(results, start=1):
        yield {
            "rank": rank,
            "score": result.score,
            "source": result.source,
            "span": list(result.span),
            "citation": result.citation(),
            "chunk_id": result.chunk_id,
            "document_id": result.document_id,
            "text": result.text,
            "metadata": result.metadata,
            "tags": list(result.tags),
        }
