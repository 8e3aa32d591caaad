"""Crash safety: a real ingest process is killed with SIGKILL mid-way, the file is reopened.

"wrote": a stage buffered a batch; "commit" / "committed": before / after the transaction of a
session flush (here one source per flush: every source has more chunks than ``batch_size``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

from ragloom import Pipeline
from ragloom.filters import parse_filter
from ragloom_duckdb import DuckDBStore

FILES = 6
CHUNKS = {1: 5, 2: 8}  # chunks per file in each version

_CHILD = """
import sys
from ragloom import Pipeline
from ragloom_duckdb import session as sessions, store as module

path, corpus = sys.argv[1], sys.argv[2]
write, apply = sessions.DuckDBStage.write, module.DuckDBStore._apply_session

def traced_write(self, *args, **kwargs):
    write(self, *args, **kwargs)
    print("wrote", flush=True)

def traced_apply(self, *args, **kwargs):
    print("commit", flush=True)
    apply(self, *args, **kwargs)
    print("committed", flush=True)

sessions.DuckDBStage.write = traced_write
module.DuckDBStore._apply_session = traced_apply
store = module.DuckDBStore(path=path)
pipeline = (
    Pipeline.builder().store(store).embedder("hash", dim=32)
    .chunker("recursive", size=40, overlap=0).ingest_options(batch_size=3).build()
)
pipeline.ingest(corpus)
print("done", flush=True)
"""


def _write_corpus(corpus: Path, version: int) -> None:
    corpus.mkdir(exist_ok=True)
    for i in range(FILES):
        paragraphs = [f"file{i} v{version} part {p} lamp" for p in range(CHUNKS[version])]
        (corpus / f"f{i}.md").write_text("\n\n".join(paragraphs), encoding="utf-8")


def _pipeline(store: DuckDBStore) -> Pipeline:
    return (
        Pipeline.builder()
        .store(store)
        .embedder("hash", dim=32)
        .chunker("recursive", size=40, overlap=0)
        .ingest_options(batch_size=3)
        .build()
    )


def _versions(store: DuckDBStore, corpus: Path) -> dict[str, int | None]:
    """Per file: the version it holds entirely (None: absent); fails on a mixed source."""
    found: dict[str, int | None] = {}
    for i in range(FILES):
        source = str(corpus / f"f{i}.md")
        results = store.search("default", np.ones(32, dtype=np.float32), top_k=100, filter=parse_filter({"source": source}))
        versions = {int(r.text.split()[1][1:]) for r in results}
        assert len(versions) <= 1, f"{source} mixes versions {versions}"
        if not versions:
            found[source] = None
            continue
        (version,) = versions
        assert len(results) == CHUNKS[version], f"{source} holds {len(results)} chunks of v{version}"
        assert len({r.chunk_id for r in results}) == len(results)
        found[source] = version
    return found


def _run_until(path: Path, corpus: Path, event: str, occurrence: int) -> bool:
    """Run the child ingest and SIGKILL it at the n-th ``event`` line; True if it was killed."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path), str(corpus)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    seen = 0
    killed = False
    for line in child.stdout:
        if line.strip() == event:
            seen += 1
            if seen == occurrence:
                os.kill(child.pid, signal.SIGKILL)
                killed = True
                break
    child.wait(timeout=120)
    if not killed:
        raise AssertionError(f"child finished before {event} #{occurrence}: {child.stderr.read() if child.stderr else ''}")
    return killed


@pytest.fixture(scope="module")
def old_generation(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("crash")
    corpus = root / "corpus"
    _write_corpus(corpus, 1)
    path = root / "v1.duckdb"
    with DuckDBStore(path=path) as store:
        _pipeline(store).ingest(corpus)
        assert set(_versions(store, corpus).values()) == {1}
    _write_corpus(corpus, 2)
    return path, corpus


@pytest.mark.parametrize(("event", "occurrence"), [("wrote", 1), ("wrote", 5), ("commit", 2), ("committed", 3), ("commit", 6)])
def test_sigkill_during_reingest_leaves_every_source_old_or_new(
    old_generation: tuple[Path, Path], tmp_path: Path, event: str, occurrence: int
) -> None:
    template, corpus = old_generation
    path = tmp_path / "store.duckdb"
    shutil.copy(template, path)
    assert _run_until(path, corpus, event, occurrence)
    with DuckDBStore(path=path) as store:
        versions = _versions(store, corpus)
        assert None not in versions.values(), versions
        still_old = sum(1 for v in versions.values() if v == 1)
        result = _pipeline(store).ingest(corpus)
        assert result.embedded == still_old * CHUNKS[2]
        assert set(_versions(store, corpus).values()) == {2}
        assert store.count("default") == FILES * CHUNKS[2]
        assert _pipeline(store).ingest(corpus).embedded == 0
    con = duckdb.connect(str(path), read_only=True)
    try:  # the staged rows of the killed run are gone too
        assert con.execute("SELECT (SELECT count(*) FROM chunks), (SELECT count(*) FROM visible_chunks)").fetchone() == (FILES * CHUNKS[2],) * 2
    finally:
        con.close()


def test_sigkill_during_first_ingest(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    _write_corpus(corpus, 2)
    path = tmp_path / "store.duckdb"
    assert _run_until(path, corpus, "wrote", 7)
    with DuckDBStore(path=path) as store:
        versions = _versions(store, corpus)
        assert set(versions.values()) <= {None, 2}
        assert None in versions.values()
        _pipeline(store).ingest(corpus)
        assert set(_versions(store, corpus).values()) == {2}
        assert store.count("default") == FILES * CHUNKS[2]
