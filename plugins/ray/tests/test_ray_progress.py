"""Progress of a Ray ingest on the driver: each stage's files and chunks, while the job runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import RAY_OPTIONS, edit_corpus, make_corpus, pipeline
from ragloom_ray.progress import StageTally

from ragloom import IngestResult, Pipeline, Progress

pytestmark = pytest.mark.usefixtures("ray_cluster")

STAGES = ("chunked", "embedded", "written")


def _watched_ingest(remote: Pipeline, corpus: Path, **options: Any) -> tuple[IngestResult, list[tuple[Progress, int]]]:
    """The ingest, and every progress step with the store's chunk count when it arrived."""
    seen: list[tuple[Progress, int]] = []
    result = remote.ingest(corpus, progress=lambda p: seen.append((p, remote.store.count(remote.namespace))), **options)
    return result, seen


def _assert_stages_add_up(seen: list[tuple[Progress, int]], result: IngestResult, files: int) -> None:
    steps = [p for p, _ in seen]
    assert {p.stage for p in steps} == set(STAGES)
    for stage in STAGES:
        mine = [p for p in steps if p.stage == stage]
        assert all(p.total == files for p in mine)
        assert [p.done for p in mine] == sorted(p.done for p in mine) and [p.chunks for p in mine] == sorted(p.chunks for p in mine)
        last = mine[-1]
        assert (last.done, last.chunks) == (files, result.chunks), stage  # every file through every stage; the chunks of the result
    written = [p for p in steps if p.stage == "written"]
    assert [p.done for p in written] == list(range(1, files + 1)) and all(p.source for p in written)


def test_each_stage_reports_during_the_run_and_adds_up_to_the_result(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path)
    remote = pipeline({"type": "memory"}, tmp_path, ray=RAY_OPTIONS)
    result, seen = _watched_ingest(remote, corpus)
    files = 36 + 3  # the .txt/.md files, records.jsonl, empty.txt, broken.json
    _assert_stages_add_up(seen, result, files)
    assert result.chunks > 36
    # during the run: the first stage steps arrive before anything is written, and before the last file is written
    first_stage_step = next(i for i, (p, _) in enumerate(seen) if p.stage != "written")
    assert seen[first_stage_step][1] == 0 and seen[first_stage_step][0].stage == "chunked"
    assert first_stage_step < max(i for i, (p, _) in enumerate(seen) if p.stage == "written")

    # re-ingest with edits and new tags: metadata updates are not embedded, and no stage counts them
    edit_corpus(corpus)
    again, seen = _watched_ingest(remote, corpus, tags=["v2"])
    assert again.updated > 0 and 0 < again.chunks < result.chunks
    _assert_stages_add_up(seen, again, files)  # one file deleted, one added


def test_stages_add_up_when_the_workers_write(tmp_path: Path, pg_schema: str) -> None:
    corpus = make_corpus(tmp_path, files=12)
    store = {"type": "pgvector", "dsn": {"env": "RAGLOOM_TEST_RAY_PG_DSN"}, "schema": pg_schema, "index": "exact", "pool_max": 2}
    with pipeline(store, tmp_path, ray=RAY_OPTIONS) as remote:
        result, seen = _watched_ingest(remote, corpus)
        _assert_stages_add_up(seen, result, 12 + 3)


def test_a_retried_batch_counts_its_files_once() -> None:
    tally = StageTally(10)
    tally.add("chunked", [1, 2, 3], [4, 0, 6])
    tally.add("chunked", [3, 2], [6, 0])  # the same batch again after a worker died
    tally.add("embedded", [1], [4])
    assert tally.snapshot() == {"chunked": (3, 10), "embedded": (1, 4)}


def test_cli_shows_each_stage(tmp_path: Path, ray_cluster: Any) -> None:
    corpus = make_corpus(tmp_path, files=8)
    config = tmp_path / "pipeline.toml"
    config.write_text(
        '[chunker]\ntype = "recursive"\nsize = 300\noverlap = 30\n[embedder]\ntype = "hash"\ndim = 64\n'
        '[store]\ntype = "duckdb"\npath = "kb.duckdb"\n[ingest]\non_error = "skip"\n'
        "[ingest.ray]\nload_cpus = 0.25\nembedder_cpus = 0.25\nbatch_size = 4\nprogress_bars = false\n",
        encoding="utf-8",
    )
    address = ray_cluster.get_runtime_context().gcs_address
    command = [sys.executable, "-m", "ragloom.cli", "ingest", "--config", str(config), "--executor", "ray", "--address", address]
    done = subprocess.run([*command, "--progress", "always", "--allow-failures", str(corpus)], capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    chunks = int(done.stdout.split(" chunks written")[0].rsplit(" ", 1)[-1])
    lines = [line for line in done.stderr.splitlines() if line.split(" ", 1)[0] in STAGES]
    files = 8 + 3
    for stage in ("chunked", "embedded"):
        assert f"{stage} {files}/{files} ({chunks} chunks)" in lines
    assert lines[-1].startswith(f"written {files}/{files} ") and lines[-1].endswith(f" ({chunks} chunks)")
