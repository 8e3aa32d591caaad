"""Crash safety of an HNSW store: real SIGKILLs at random moments of a re-ingest, then reopen.

The child process re-ingests a corpus (version 1 → version 2) into an ``index = "hnsw"``
store in rounds, each opening the store, querying it (so the HNSW index is loaded from
its side file and reconciled), ingesting a few files (writes, commits, index updates) and
closing it (the side file is rewritten). It is SIGKILLed at a random moment; the parent
reopens the file and checks that every source is wholly old or wholly new and that HNSW
answers agree with exact search on what was recovered.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from ragloom import Pipeline
from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.filters import parse_filter
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig

FILES = 8
CHUNKS = {1: 5, 2: 8}  # chunks per file in each version
DIM = 32
KILLS = 20
NS = "default"
HNSW = DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=30)
WORDS = (
    "lamp light warm cold amber blue battery charge cable dimmer timer schedule sleep wake app phone "
    "bulb socket switch colour red green night day sensor motion brightness mode reading party sunset"
).split()


def _write_corpus(corpus: Path, version: int) -> None:
    rng = np.random.default_rng(version)
    corpus.mkdir(exist_ok=True)
    for i in range(FILES):
        paragraphs = [f"file{i} v{version} part{p} " + " ".join(rng.choice(WORDS, size=3)) for p in range(CHUNKS[version])]
        (corpus / f"f{i:02d}.md").write_text("\n\n".join(paragraphs), encoding="utf-8")


def _pipeline(store: DuckDBStore) -> Pipeline:
    return (
        Pipeline.builder()
        .store(store)
        .embedder("hash", dim=DIM)
        .chunker("recursive", size=50, overlap=0)
        .ingest_options(batch_size=3)
        .build()
    )


def _child(path: str, corpus: str) -> None:  # pragma: no cover - runs in the killed process
    try:
        files = sorted(str(p) for p in Path(corpus).iterdir())
        for first in range(0, len(files), 2):
            with DuckDBStore(HNSW, path=path) as store:
                pipeline = _pipeline(store)
                pipeline.query("lamp battery")
                pipeline.ingest(files[first : first + 2])
                pipeline.query("warm light")
    finally:
        os._exit(0)


def _run(path: Path, corpus: Path, kill_after: float | None) -> tuple[bool, float]:
    """Run the child re-ingest; SIGKILL it ``kill_after`` seconds in. ``(killed, seconds)``."""
    process = multiprocessing.get_context("fork").Process(target=_child, args=(str(path), str(corpus)))
    start = time.perf_counter()
    process.start()
    process.join(kill_after)
    killed = process.is_alive()
    if killed:
        os.kill(process.pid, signal.SIGKILL)
    process.join(60)
    if killed and process.exitcode == 0:
        killed = False  # the child finished between the liveness check and the signal: a completed run
    assert process.exitcode == (-signal.SIGKILL if killed else 0), process.exitcode
    return killed, time.perf_counter() - start


def _versions(store: DuckDBStore, corpus: Path) -> dict[str, int]:
    """Per file: the version it holds entirely; fails on a mixed or missing source."""
    found: dict[str, int] = {}
    for i in range(FILES):
        source = str(corpus / f"f{i:02d}.md")
        results = store.search(NS, np.ones(DIM, dtype=np.float32), top_k=100, filter=parse_filter({"source": source}))
        versions = {int(r.text.split()[1][1:]) for r in results}
        assert len(versions) == 1, f"{source} holds versions {versions}"
        (version,) = versions
        assert len(results) == CHUNKS[version], f"{source} holds {len(results)} chunks of v{version}"
        found[source] = version
    return found


def _check_recovered(path: Path, corpus: Path) -> dict[str, int]:
    embedder = HashEmbedder(HashEmbedderConfig(dim=DIM))
    with DuckDBStore(HNSW, path=path) as store:
        versions = _versions(store, corpus)
        assert store.plan(NS) == "hnsw"
        exact = DuckDBStore(path=path)  # the same open file, searched exactly
        try:
            texts = [r.text for r in exact.search(NS, np.ones(DIM, dtype=np.float32), top_k=1000)]
            assert len(texts) == sum(CHUNKS[v] for v in versions.values())
            # the visible chunks are in the index: a chunk's own text finds it first
            probes = texts[::3]
            found = sum(store.search(NS, embedder.embed_query(text), top_k=1)[0].text == text for text in probes)
            assert found >= 0.95 * len(probes), (found, len(probes))
            overlap = total = 0
            for query in embedder.embed_documents([" ".join(WORDS[i : i + 4]) for i in range(0, 24, 2)]):
                truth = {r.chunk_id for r in exact.search(NS, query, top_k=10)}
                found = store.search(NS, query, top_k=10)
                assert len(found) == 10 and len({r.chunk_id for r in found}) == 10
                overlap += len(truth & {r.chunk_id for r in found})
                total += len(truth)
            assert overlap / total >= 0.9, overlap / total
        finally:
            exact.close()
    assert not list(path.parent.glob(f"{path.name}.hnsw.*.tmp"))  # a save cut short leaves nothing behind
    return versions


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A version-1 HNSW store whose index side file was saved, and the corpus at version 2."""
    root = tmp_path_factory.mktemp("hnsw-crash")
    corpus = root / "corpus"
    _write_corpus(corpus, 1)
    path = root / "v1.duckdb"
    with DuckDBStore(HNSW, path=path) as store:
        _pipeline(store).ingest(corpus)
        assert store.search(NS, np.ones(DIM, dtype=np.float32), top_k=1)  # builds the index
    assert Path(f"{path}.hnsw").exists() and not Path(f"{path}.wal").exists()
    _write_corpus(corpus, 2)
    return path, corpus


def _copy(template: Path, path: Path) -> None:
    shutil.copy(template, path)
    shutil.copy(f"{template}.hnsw", f"{path}.hnsw")


def test_twenty_random_sigkills_during_hnsw_reingest(template: tuple[Path, Path], tmp_path: Path) -> None:
    source, corpus = template
    calibration = tmp_path / "whole.duckdb"
    _copy(source, calibration)
    killed, whole = _run(calibration, corpus, None)
    assert not killed
    assert set(_check_recovered(calibration, corpus).values()) == {2}

    rng = np.random.default_rng(18)
    kills = 0
    mixes: list[int] = []
    for attempt in range(2 * KILLS):
        if kills == KILLS:
            break
        path = tmp_path / f"kill{attempt}.duckdb"
        _copy(source, path)
        killed, _ = _run(path, corpus, float(rng.uniform(0.02, 0.95)) * whole)
        kills += killed
        versions = _check_recovered(path, corpus)
        mixes.append(sum(v == 2 for v in versions.values()))
        if attempt % 10 == 0:  # the recovered store takes the rest of the re-ingest and ends wholly new
            with DuckDBStore(HNSW, path=path) as store:
                _pipeline(store).ingest(corpus)
            assert set(_check_recovered(path, corpus).values()) == {2}
        for leftover in (path, Path(f"{path}.wal"), Path(f"{path}.hnsw")):
            leftover.unlink(missing_ok=True)
    assert kills == KILLS
    # the kills landed at different points of the re-ingest (some sources already new, some not)
    assert len(set(mixes)) >= 4, mixes
