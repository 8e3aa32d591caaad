"""The async API never blocks the event loop: it stays responsive while ingest and queries run on workers.

Kept apart from test_async.py because it measures latency: a loaded machine can fail it, so the
mutation runs (``tests/mutation/run.py``), which select test_async.py, leave it out.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from ragloom import Pipeline

QUERIES = ["factory reset", "warranty period", "battery life", "pairing bluetooth", "firmware update"]

# A worker thread holding the GIL can delay the loop by one switch interval (5 ms) at a time;
# on this 2-core machine shared by other jobs, 250 ms still separates that from a blocked loop:
# the same ingest run on the loop itself blocks it for its whole duration (asserted > 1 s).
MAX_TICKER_DELAY = 0.5  # a CI box shares 2 cores; ingest on the loop would block it for seconds


def _pipeline(tmp_path: Path) -> Pipeline:
    return Pipeline.builder().base_dir(tmp_path).embedder("hash", dim=256).store("memory").build()


def _big_corpus(root: Path, files: int = 150) -> Path:
    root.mkdir()
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    for i in range(files):
        body = " ".join(f"{words[(i * 7 + j) % len(words)]}{j % 97}" for j in range(900))
        (root / f"doc{i:04d}.md").write_text(f"# Document {i}\n\n{body}\n", encoding="utf-8")
    return root


def test_event_loop_stays_responsive_during_aquery_and_aingest(corpus: Path, tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path)
    pipeline.ingest(corpus)
    big = _big_corpus(tmp_path / "big")

    async def run() -> tuple[float, float, object]:
        worst = 0.0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal worst
            while not stop.is_set():
                before = time.perf_counter()
                await asyncio.sleep(0.005)
                worst = max(worst, time.perf_counter() - before - 0.005)

        tick = asyncio.create_task(ticker())
        start = time.perf_counter()
        queries = [pipeline.aquery(QUERIES[i % len(QUERIES)]) for i in range(20)]
        results = await asyncio.gather(pipeline.aingest(big), *queries)
        elapsed = time.perf_counter() - start
        stop.set()
        await tick
        return worst, elapsed, results

    worst, elapsed, results = asyncio.run(run())
    ingest_result = results[0]  # type: ignore[index]
    assert ingest_result.documents == 150 and ingest_result.failed == ()
    assert all(results[1:])  # type: ignore[index]
    print(f"\nworst ticker delay {worst * 1000:.1f} ms while the batch ran {elapsed:.2f} s")
    assert worst < MAX_TICKER_DELAY
    assert worst < elapsed / 2  # the loop was free for most of the batch (work run on the loop would block it throughout)
