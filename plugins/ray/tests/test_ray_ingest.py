"""Ingest on a local Ray cluster gives the store and the result of the in-process ingest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import RAY_OPTIONS, assert_same_store, comparable, edit_corpus, make_corpus, pipeline, snapshot
from ragloom_ray import RayExecutorConfig

from ragloom import ConfigError, LoaderError, Progress, Registry

pytestmark = pytest.mark.usefixtures("ray_cluster")


def _pg_store(schema: str) -> dict[str, Any]:
    return {"type": "pgvector", "dsn": {"env": "RAGLOOM_TEST_RAY_PG_DSN"}, "schema": schema, "index": "exact", "pool_max": 2}


def test_the_plugin_registers_the_ray_executor() -> None:
    info = Registry().get("executor", "ray")
    assert info.distribution == "ragloom-ray"
    assert info.config is RayExecutorConfig


def test_memory_store_same_as_in_process_then_edits(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path)
    local = pipeline({"type": "memory"}, tmp_path)
    remote = pipeline({"type": "memory"}, tmp_path, ray=RAY_OPTIONS)
    seen: list[Progress] = []
    expected = local.ingest(corpus)
    got = remote.ingest(corpus, progress=seen.append)
    assert comparable(got) == comparable(expected)
    assert got.sources == 36 + 2 and got.chunks > 36 and [f.source for f in got.failed] == [str(corpus / "broken.json")]
    assert got.skipped == (str(corpus / "image.xyz"),)
    assert_same_store(remote, local)
    written = [p for p in seen if p.stage == "written"]
    assert [p.done for p in written] == list(range(1, len(written) + 1)) and written[-1].total == len(written) == 36 + 3

    # edits: a changed file, a new one, a deleted one (removed from the store), a JSONL record changed and one gone
    edit_corpus(corpus)
    expected = local.ingest(corpus, tags=["v2"])
    got = remote.ingest(corpus, tags=["v2"])
    assert comparable(got) == comparable(expected)
    assert got.removed_sources and got.removed > 0 and got.updated > 0 and got.chunks > 0  # new tags: metadata updates, no re-embedding
    assert_same_store(remote, local)


def test_duckdb_store_written_by_the_driver(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path, files=20)
    (corpus / "a" / "doc001.txt").write_bytes(b"\xff\xfe\x00 not UTF-8 \x00\x81")  # decoded with replacements, as in-process
    local = pipeline({"type": "duckdb", "path": str(tmp_path / "local.duckdb")}, tmp_path)
    remote = pipeline({"type": "duckdb", "path": str(tmp_path / "ray.duckdb")}, tmp_path, ray=RAY_OPTIONS)
    with local, remote:
        expected = local.ingest(corpus)
        assert comparable(remote.ingest(corpus)) == comparable(expected)
        assert len(expected.failed) == 1
        assert_same_store(remote, local)


def test_pgvector_written_by_the_workers(tmp_path: Path, pg_schema: str) -> None:
    corpus = make_corpus(tmp_path)
    local = pipeline(_pg_store(pg_schema + "_local"), tmp_path)
    remote = pipeline(_pg_store(pg_schema), tmp_path, ray=RAY_OPTIONS)
    with local, remote:
        assert "concurrent_writers" in remote.store.capabilities
        assert comparable(remote.ingest(corpus)) == comparable(local.ingest(corpus))
        assert_same_store(remote, local)
        edit_corpus(corpus)
        assert comparable(remote.ingest(corpus)) == comparable(local.ingest(corpus))
        assert_same_store(remote, local)
        local.store.delete(local.namespace, None)  # type: ignore[arg-type]


def _ray_processes(name: str) -> list[int]:
    """Pids of Ray worker processes whose title names ``name`` (Ray titles them ``ray::<actor or task>``)."""
    import psutil

    pids = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if cmdline.startswith("ray::") and name in cmdline:
            pids.append(process.info["pid"])
    return pids


def test_a_worker_killed_mid_ingest_is_retried_and_every_source_ends_whole(tmp_path: Path, pg_schema: str) -> None:
    corpus = make_corpus(tmp_path, files=30)
    local = pipeline({"type": "memory"}, tmp_path)
    remote = pipeline(_pg_store(pg_schema), tmp_path, ray={**RAY_OPTIONS, "batch_size": 2})
    killed: list[int] = []

    def kill_a_writer(progress: Progress) -> None:
        if not killed and progress.stage == "written" and progress.done >= 3:
            for pid in _ray_processes("Write")[:1] + _ray_processes("Embed")[:1]:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    with remote:
        result = remote.ingest(corpus, progress=kill_a_writer)
        expected = local.ingest(corpus)
        assert len(killed) == 2, "no worker process was found to kill"
        # every source whole, none doubled: exactly the in-process store
        assert_same_store(remote, local)
        assert result.sources == expected.sources and result.failed == expected.failed
        # and a re-ingest finds everything stored and unchanged
        again = remote.ingest(corpus)
        assert comparable(again) == comparable(local.ingest(corpus)) and again.chunks == 0 and again.unchanged_sources == again.sources - 1  # the empty file


def test_on_error_fail_raises_like_in_process(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path, files=6)
    local = pipeline({"type": "memory"}, tmp_path, on_error="fail")
    remote = pipeline({"type": "memory"}, tmp_path, ray=RAY_OPTIONS, on_error="fail")
    with pytest.raises(LoaderError) as expected:
        local.ingest(corpus / "broken.json")
    with pytest.raises(LoaderError) as got:
        remote.ingest(corpus / "broken.json")
    assert str(got.value) == str(expected.value)
    with pytest.raises(LoaderError, match="no such file"):
        remote.ingest(corpus / "missing.txt")
    assert snapshot(remote)["count"] == 0


def test_ray_options_are_checked_like_every_component(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="did you mean 'embedders'"):
        pipeline({"type": "memory"}, tmp_path, ray={"embedder": 2})
    with pytest.raises(ConfigError, match=r"\$\.ingest\.ray"):
        pipeline({"type": "memory"}, tmp_path, ray={"batch_size": 0})


def test_cli_ingest_on_the_test_cluster_prints_the_in_process_json(tmp_path: Path, ray_cluster: Any) -> None:
    corpus = make_corpus(tmp_path, files=8)
    config = tmp_path / "pipeline.toml"
    config.write_text(
        '[chunker]\ntype = "recursive"\nsize = 300\noverlap = 30\n[embedder]\ntype = "hash"\ndim = 64\n'
        '[store]\ntype = "duckdb"\npath = "kb.duckdb"\n[ingest]\non_error = "skip"\n'
        "[ingest.ray]\nload_cpus = 0.25\nembedder_cpus = 0.25\nprogress_bars = false\n",
        encoding="utf-8",
    )
    local_config = tmp_path / "local.toml"
    local_config.write_text(config.read_text(encoding="utf-8").replace("kb.duckdb", "local.duckdb").split("[ingest.ray]")[0], encoding="utf-8")
    address = ray_cluster.get_runtime_context().gcs_address

    def run(*args: str) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "ragloom.cli", *args, "--json"], capture_output=True, text=True, timeout=240, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout)

    got = run("ingest", "--config", str(config), "--executor", "ray", "--address", address, "--allow-failures", str(corpus))
    expected = run("ingest", "--config", str(local_config), "--allow-failures", str(corpus))
    assert got == expected and got["chunks"] > 8
    listed = run("sources", "--config", str(config))
    assert listed == run("sources", "--config", str(local_config))
