"""Per-stage progress of a Ray ingest, reported to the driver while the job runs.

The load-and-chunk tasks and the embedder actors tell a small actor
(:class:`StageTally`, no CPU reserved) which plan items they finished and how
many chunks each had; the driver polls it while it waits for results and turns
changed totals into :class:`ragloom.Progress` steps (``"chunked"``,
``"embedded"``). The ``"written"`` stage is counted on the driver from the
outcomes it receives. A batch Ray retries (a killed worker) reports the same
items again: they count once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ragloom import Progress

#: The stages the workers report, in plan order.
STAGES = ("chunked", "embedded")


class StageTally:
    """Chunks done per plan item and stage (-1: not yet), with running totals."""

    def __init__(self, size: int):
        self.chunks = {stage: np.full(size, -1, dtype=np.int64) for stage in STAGES}
        self.totals = {stage: [0, 0] for stage in STAGES}  # [items done, chunks done]

    def add(self, stage: str, indexes: list[int], chunks: list[int]) -> None:
        """Record items done; an item reported again (a retried batch) replaces its earlier count."""
        column = self.chunks[stage]
        where = np.asarray(indexes, dtype=np.int64)
        before = column[where]
        fresh = before < 0
        total = self.totals[stage]
        total[0] += int(fresh.sum())
        total[1] += int(np.asarray(chunks, dtype=np.int64).sum() - before[~fresh].sum())
        column[where] = chunks

    def snapshot(self) -> dict[str, tuple[int, int]]:
        """``{stage: (items done, chunks done)}``."""
        return {stage: (done, chunks) for stage, (done, chunks) in self.totals.items()}


def report(tally: Any, stage: str, done: Iterable[tuple[int, int]]) -> None:
    """On a worker: tell the tally (a Ray actor handle, or None when nobody watches) which items finished a stage.

    Waits for the tally, so the counts are in before the batch moves on; a
    tally that is gone only costs the progress display, never the ingest.
    """
    if tally is None:
        return
    import ray

    pairs = list(done)
    if not pairs:
        return
    try:
        ray.get(tally.add.remote(stage, [i for i, _ in pairs], [c for _, c in pairs]))
    except ray.exceptions.RayError:
        pass


class StageReporter:
    """On the driver: polls the tally and calls ``progress`` for each stage whose totals moved."""

    def __init__(self, tally: Any, total: int, progress: Callable[[Progress], Any]):
        self.tally = tally
        self.total = total
        self.progress = progress
        self.seen: dict[str, tuple[int, int]] = {}

    def poll(self) -> None:
        import ray

        try:
            current = ray.get(self.tally.snapshot.remote(), timeout=30)
        except (ray.exceptions.RayError, TimeoutError):
            return
        for stage in STAGES:
            done, chunks = current[stage]
            if done and current[stage] != self.seen.get(stage):
                self.seen[stage] = (done, chunks)
                self.progress(Progress(source="", done=done, total=self.total, stage=stage, chunks=chunks))
