"""The driver: list sources, read their states, run the Ray Data plan, write or collect, report.

Plan: ``from_items`` (one row per file or URL, with its stored state) →
``map_batches`` tasks (load + chunk) → ``map_batches`` actor pool (embed, the
model loaded once per actor) → either ``map_batches`` writer actors (a store
with ``concurrent_writers``) or the driver writing as results stream back.
Every row is one pickled record (:mod:`ragloom_ray.work`). With a ``progress``
callback, the stages report what they finished (:mod:`ragloom_ray.progress`)
and the driver passes it on while it waits.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ragloom import Failure, IngestResult, Pipeline, PipelineConfig, Progress
from ragloom.plugin import CONCURRENT_WRITERS, IngestTarget, LoaderError, RagloomError, is_url, resolve_source
from ragloom_ray.config import RayExecutorConfig
from ragloom_ray.progress import StageReporter, StageTally, report
from ragloom_ray.work import (
    Counts,
    Parts,
    PathOutcome,
    PathWork,
    PlanItem,
    Problem,
    Writer,
    dumps,
    embed_paths,
    loads,
    prepare,
    write_paths,
)

#: Sources whose stored states one ``source_states`` call reads (as in-process).
STATE_BATCH = 512

#: Seconds between two polls of the stage counts while the driver waits for results.
POLL_SECONDS = 0.5


@attrs.define
class _Plan:
    """What the driver found before any work: files to ingest, failures, skipped files, directories."""

    items: list[PlanItem] = attrs.field(factory=list)
    events: list[tuple[int, str, Any]] = attrs.field(factory=list)  # (order, "failed" | "removed", value)
    skipped: list[str] = attrs.field(factory=list)
    directories: list[tuple[int, str, set[str]]] = attrs.field(factory=list)  # (order, folder, present)
    order: int = 0

    def next(self) -> int:
        self.order += 1
        return self.order


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# ---------------------------------------------------------------------- Ray Data stages (run on workers)

_PARTS: dict[bytes, Parts] = {}


def _parts(blob: bytes) -> Parts:
    """Components built once per worker process (tasks reuse their processes)."""
    parts = _PARTS.get(blob)
    if parts is None:
        config, model_id = loads(blob)
        parts = _PARTS[blob] = Parts(config=config, model_id=model_id)
    return parts


def _rows(works: Sequence[Any]) -> dict[str, np.ndarray]:
    payload = np.empty(len(works), dtype=object)
    payload[:] = [dumps(w) for w in works]
    return {"payload": payload}


def _to_embed(paths: Sequence[PathWork]) -> list[tuple[int, int]]:
    """(plan index, chunks needing vectors) of each path."""
    return [(p.item.index, sum(len(s.texts()) for s in p.sources)) for p in paths]


def load_and_chunk(batch: dict[str, np.ndarray], blob: bytes, tally: Any = None) -> dict[str, np.ndarray]:
    """Stage 1 (tasks): each row's path loaded, hashed against its stored state, changed documents chunked."""
    parts = _parts(blob)
    paths = [prepare(loads(row), parts) for row in batch["payload"]]
    report(tally, "chunked", _to_embed(paths))
    return _rows(paths)


class Embed:
    """Stage 2 (actor pool): the embedder is built once per actor."""

    def __init__(self, blob: bytes, tally: Any = None):
        self.parts = _parts(blob)
        self.tally = tally
        self.parts.embedder  # noqa: B018 - load the model now, not on the first batch

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        paths: list[PathWork] = [loads(row) for row in batch["payload"]]
        embed_paths(paths, self.parts.embedder)
        report(self.tally, "embedded", _to_embed(paths))  # a failed source was cut from its path
        return _rows(paths)


class Write:
    """Stage 3 (actor pool, stores taking concurrent writers): each actor holds a store and writes its batches."""

    def __init__(self, blob: bytes):
        self.parts = _parts(blob)
        self.store = self.parts.store

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        config = self.parts.config
        paths: list[PathWork] = [loads(row) for row in batch["payload"]]
        outcomes: list[PathOutcome] = []
        with self.store.session(config.namespace) as session:
            writer = Writer(self.store, session, config.namespace, commit_every=config.ingest.commit_every, batch_size=config.ingest.batch_size)
            write_paths(writer, paths, outcomes.append)
        return _rows(outcomes)


# ---------------------------------------------------------------------- the executor (driver)


class RayExecutor:
    """``[ingest] executor = "ray"``: the semantics and result of ``Pipeline.ingest``, the work on a Ray cluster."""

    def __init__(self, config: RayExecutorConfig):
        self.config = config

    def ingest(self, pipeline: Pipeline, targets: Sequence[IngestTarget], *, progress: Callable[[Progress], Any] | None = None) -> IngestResult:
        plan = self._plan(pipeline, targets)
        counts = Counts()
        outcomes: list[PathOutcome] = []
        on_error = pipeline.config.ingest.on_error
        if plan.items:
            for done, outcome in enumerate(self._run(pipeline, plan, progress), start=1):
                counts.add(outcome.counts)
                outcomes.append(outcome)
                if outcome.problem is not None:
                    if on_error == "fail":
                        raise outcome.problem.exception(outcome.path)
                    plan.events.append((outcome.index, "failed", outcome.problem))
                if progress is not None:
                    progress(Progress(source=outcome.path, done=done, total=len(plan.items), stage="written", chunks=counts.chunks))
        for outcome in outcomes:  # a file that yielded no document of its own: drop what it held
            if outcome.problem is None and not outcome.url and not outcome.loaded_itself:
                self._remove(pipeline, outcome.path, outcome.index, plan, counts)
        if pipeline.config.ingest.remove_missing:
            stored = pipeline.store.sources(pipeline.namespace) if plan.directories else []
            for order, folder, present in plan.directories:
                prefix = folder.rstrip(os.sep) + os.sep
                for source in stored:
                    if source.startswith(prefix) and source not in present:
                        self._remove(pipeline, source, order, plan, counts)
        return self._result(counts, plan)

    # -- planning: the in-process listing, on the driver

    def _plan(self, pipeline: Pipeline, targets: Sequence[IngestTarget]) -> _Plan:
        plan = _Plan()
        for target in targets:
            self._plan_target(pipeline, target, plan)
        for start in range(0, len(plan.items), STATE_BATCH):
            chunk = plan.items[start : start + STATE_BATCH]
            states = pipeline.store.source_states(pipeline.namespace, [i.path for i in chunk])
            plan.items[start : start + STATE_BATCH] = [attrs.evolve(i, hint=states.get(i.path)) for i in chunk]
        return plan

    def _fail(self, pipeline: Pipeline, exc: RagloomError, plan: _Plan) -> None:
        if pipeline.config.ingest.on_error == "fail":
            raise exc
        plan.events.append((plan.next(), "failed", Problem.of(exc, "")))

    def _plan_target(self, pipeline: Pipeline, target: IngestTarget, plan: _Plan) -> None:
        try:
            resolved = resolve_source(target.source, pipeline.config.base_dir)
        except LoaderError as exc:
            self._fail(pipeline, exc, plan)
            return
        url = is_url(resolved)
        if not url and not os.path.exists(resolved):
            self._fail(pipeline, LoaderError("no such file or directory", source=resolved), plan)
            return
        is_dir = not url and os.path.isdir(resolved)
        if target.loader is not None and not is_dir:
            files, skipped = [resolved], list[str]()
        else:
            files, skipped = pipeline.loaders.expand(resolved)
            if not url and not is_dir and not files:
                self._fail(pipeline, LoaderError(f"no loader for {Path(resolved).suffix or 'files without a suffix'} files", source=resolved), plan)
                return
        plan.skipped.extend(skipped)
        for path in files:
            name = target.loader or pipeline.loaders.name_for(path)
            if not url and not _utf8(path):
                printable = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                self._fail(pipeline, LoaderError("file name is not valid Unicode (not UTF-8); rename the file", source=printable), plan)
                continue
            if name is None:
                self._fail(pipeline, LoaderError("no loader handles this URL scheme", source=path), plan)
                continue
            plan.items.append(PlanItem(index=plan.next(), path=path, loader=name, tags=tuple(target.tags), url=url, hint=None))
        if is_dir:
            plan.directories.append((plan.next(), resolved, set(files) | set(skipped)))

    # -- running the Ray Data plan

    def _run(self, pipeline: Pipeline, plan: _Plan, progress: Callable[[Progress], Any] | None) -> Iterator[PathOutcome]:
        import ray

        self._connect(ray)
        items = plan.items
        tally: Any = None
        reporter: StageReporter | None = None
        if progress is not None:
            tally = ray.remote(num_cpus=0)(StageTally).remote(plan.order + 1)
            reporter = StageReporter(tally, len(items), progress)
        try:
            yield from self._stream_outcomes(ray, pipeline, items, tally, reporter)
        finally:
            if tally is not None:
                ray.kill(tally)

    def _stream_outcomes(self, ray: Any, pipeline: Pipeline, items: list[PlanItem], tally: Any, reporter: StageReporter | None) -> Iterator[PathOutcome]:
        from ray.data import DataContext

        context = DataContext.get_current()
        context.enable_progress_bars = self.config.progress_bars
        context.verbose_progress = False
        blob = dumps((_portable(pipeline.config), pipeline.embedder.model_id))
        cfg = self.config
        size = cfg.batch_size
        rows = [{"payload": dumps(item)} for item in items]
        blocks = max(1, min(len(rows), max(cfg.load_tasks, cfg.embedders) * 4, (len(rows) + size - 1) // size))
        dataset: Any = ray.data.from_items(rows, override_num_blocks=blocks)
        dataset = dataset.map_batches(
            load_and_chunk,
            fn_kwargs={"blob": blob, "tally": tally},
            batch_size=size,
            batch_format="numpy",
            compute=ray.data.TaskPoolStrategy(size=cfg.load_tasks),
            num_cpus=cfg.load_cpus,
        )
        gpus = cfg.embedder_gpus
        if gpus is None:
            gpus = 1.0 if ray.cluster_resources().get("GPU", 0) >= 1 else 0.0
        dataset = dataset.map_batches(
            Embed,
            fn_constructor_kwargs={"blob": blob, "tally": tally},
            batch_size=size,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=cfg.embedders),
            num_cpus=cfg.embedder_cpus,
            num_gpus=gpus,
        )
        if cfg.write == "auto" and CONCURRENT_WRITERS in pipeline.store.capabilities:
            dataset = dataset.map_batches(
                Write,
                fn_constructor_kwargs={"blob": blob},
                batch_size=size,
                batch_format="numpy",
                compute=ray.data.ActorPoolStrategy(size=cfg.writers),
                num_cpus=cfg.writer_cpus,
            )
            for payload in _results(dataset, reporter):
                yield from (loads(row) for row in payload)
            return
        config = pipeline.config
        store = pipeline.store
        with store.session(pipeline.namespace) as session:
            writer = Writer(store, session, pipeline.namespace, commit_every=config.ingest.commit_every, batch_size=config.ingest.batch_size)
            for payload in _results(dataset, reporter):
                outcomes: list[PathOutcome] = []
                write_paths(writer, [loads(row) for row in payload], outcomes.append)
                yield from outcomes

    def _connect(self, ray: Any) -> None:
        if ray.is_initialized():
            return
        cfg = self.config
        env = {name: os.environ[name] for name in cfg.env if name in os.environ}
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True, "logging_level": "WARNING"}
        if env:
            options["runtime_env"] = {"env_vars": env}
        if cfg.address:
            ray.init(address=cfg.address, **options)
        else:
            ray.init(num_cpus=cfg.local_cpus, **options)

    # -- results

    def _remove(self, pipeline: Pipeline, source: str, order: int, plan: _Plan, counts: Counts) -> None:
        removed = pipeline.remove_source(source)
        if removed:
            counts.removed += removed
            plan.events.append((order, "removed", source))

    @staticmethod
    def _result(counts: Counts, plan: _Plan) -> IngestResult:
        events = sorted(plan.events, key=lambda e: e[0])  # the in-process order: targets, then files, as listed
        failed = tuple(Failure(source=p.source, reason=p.reason, error=p.error) for _, kind, p in events if kind == "failed")
        removed_sources = tuple(s for _, kind, s in events if kind == "removed")
        values = attrs.asdict(counts)
        return IngestResult(embedded=counts.chunks, removed_sources=removed_sources, skipped=tuple(plan.skipped), failed=failed, **values)


def _results(dataset: Any, reporter: StageReporter | None) -> Iterator[np.ndarray]:
    """The payload column of each result batch, on the caller's thread.

    With a reporter, a thread waits on Ray for the batches and the caller polls
    the stage counts every :data:`POLL_SECONDS` meanwhile, so progress (and the
    writes) stay on the thread that called ``ingest``.
    """
    if reporter is None:
        for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
            yield batch["payload"]
        return
    handoff: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=4)
    stop = threading.Event()

    def put(kind: str, value: Any) -> None:
        while not stop.is_set():
            try:
                handoff.put((kind, value), timeout=POLL_SECONDS)
                return
            except queue.Full:
                continue

    def fetch() -> None:
        batches = dataset.iter_batches(batch_size=None, batch_format="numpy")
        try:
            for batch in batches:
                put("batch", batch["payload"])
                if stop.is_set():
                    return
            put("end", None)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, raised there
            put("error", exc)
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=fetch, name="ragloom-ray-results", daemon=True)
    thread.start()
    try:
        while True:
            try:
                kind, value = handoff.get(timeout=POLL_SECONDS)
            except queue.Empty:
                reporter.poll()
                continue
            reporter.poll()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()


def _portable(config: PipelineConfig) -> PipelineConfig:
    """The config the workers build from: in-process executor (no recursion), everything else as is."""
    return attrs.evolve(config, executor=None, ingest=attrs.evolve(config.ingest, executor="local"))
