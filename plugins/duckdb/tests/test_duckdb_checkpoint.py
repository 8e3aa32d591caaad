"""A checkpoint cut short never costs the store: the copy taken before it is put back when the file is damaged.

DuckDB rewrites a metadata block in place during a checkpoint when a free slot of
it is reused while its other slots are still in use. A process killed during that
write leaves the block half old, half new (Linux stops a ``pwrite`` at a page
boundary when SIGKILL arrives). The tests below build that file: the store's state
before a checkpoint, with every block the checkpoint rewrote torn half-way (new
first half, old second half) and the old headers (the checkpoint never reached
them), beside the WAL it had not yet emptied.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

from ragloom import Pipeline
from ragloom.errors import StoreError
from ragloom.filters import parse_filter
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig, checkpoint

FILES = 6
CHUNKS = {1: 5, 2: 8}  # chunks per file in each version
HEADERS = 3 * 4096  # DuckDB's main header and its two database headers
BLOCK = 256 * 1024

_CHILD = """
import os, sys
from ragloom import Pipeline
from ragloom_duckdb import DuckDBStore

store = DuckDBStore(path=sys.argv[1])
pipeline = Pipeline.builder().store(store).embedder("hash", dim=32).chunker("recursive", size=40, overlap=0).build()
pipeline.ingest([os.path.join(sys.argv[2], name) for name in sorted(os.listdir(sys.argv[2]))[:3]])
os._exit(0)  # killed before closing: the commits are in the WAL, not yet checkpointed
"""


def _write_corpus(corpus: Path, version: int) -> None:
    corpus.mkdir(exist_ok=True)
    for i in range(FILES):
        paragraphs = [f"file{i} v{version} part {p} lamp" for p in range(CHUNKS[version])]
        (corpus / f"f{i}.md").write_text("\n\n".join(paragraphs), encoding="utf-8")


def _versions(path: Path, corpus: Path, *, read_only: bool = False) -> list[int]:
    """The version each file holds wholly (fails on a mixed or partial source)."""
    found = []
    with DuckDBStore(DuckDBStoreConfig(read_only=read_only), path=path) as store:
        for i in range(FILES):
            results = store.search("default", np.ones(32, dtype=np.float32), top_k=50, filter=parse_filter({"source": str(corpus / f"f{i}.md")}))
            versions = {int(r.text.split()[1][1:]) for r in results}
            assert len(versions) == 1, versions
            (version,) = versions
            assert len(results) == CHUNKS[version]
            found.append(version)
    return found


def _torn(before: bytes, after: bytes) -> bytes:
    """``before`` with every block the checkpoint rewrote cut half-way through its write."""
    torn = bytearray(before[:HEADERS])
    for offset in range(HEADERS, len(after), BLOCK):
        old, new = before[offset : offset + BLOCK], after[offset : offset + BLOCK]
        if len(old) < BLOCK:
            torn += new  # a block the checkpoint added at the end of the file
        elif old != new:
            torn += new[: BLOCK // 2] + old[BLOCK // 2 :]
        else:
            torn += old
    return bytes(torn)


@pytest.fixture
def interrupted(tmp_path: Path) -> tuple[Path, Path, bytes, bytes]:
    """A store holding v1 whose WAL holds the re-ingest of three files at v2: (path, corpus, file, torn file)."""
    corpus = tmp_path / "corpus"
    _write_corpus(corpus, 1)
    path = tmp_path / "store.duckdb"
    with DuckDBStore(path=path) as store:
        Pipeline.builder().store(store).embedder("hash", dim=32).chunker("recursive", size=40, overlap=0).build().ingest(corpus)
    assert not Path(f"{path}.wal").exists() and not Path(checkpoint.backup_path(str(path))).exists()
    _write_corpus(corpus, 2)
    subprocess.run([sys.executable, "-c", _CHILD, str(path), str(corpus)], check=True)
    wal = Path(f"{path}.wal").read_bytes()
    assert wal
    before = path.read_bytes()
    # DuckDB's own checkpoint of that WAL (what the store's checkpoint runs behind its copy)
    scratch = tmp_path / "scratch.duckdb"
    scratch.write_bytes(before)
    Path(f"{scratch}.wal").write_bytes(wal)
    con = duckdb.connect(str(scratch))
    con.execute("CHECKPOINT")
    con.close()
    after = scratch.read_bytes()
    assert after[HEADERS:] != before[HEADERS:]
    return path, corpus, before, _torn(before, after)


def _place(path: Path, content: bytes, wal: bytes, *, backup: bytes | None) -> None:
    path.write_bytes(content)
    Path(f"{path}.wal").write_bytes(wal)
    if backup is not None:
        Path(checkpoint.backup_path(str(path))).write_bytes(backup)


def test_a_torn_checkpoint_is_undone_from_the_copy_and_the_wal_replayed(interrupted: tuple[Path, Path, bytes, bytes]) -> None:
    path, corpus, before, torn = interrupted
    wal = Path(f"{path}.wal").read_bytes()
    # without the copy the torn file cannot be opened: the tear hit a block the old headers point to
    _place(path, torn, wal, backup=None)
    with pytest.raises(StoreError, match="is damaged") as caught:
        DuckDBStore(path=path)
    assert "another process" not in str(caught.value)
    # with it (what the store leaves when killed mid-checkpoint) nothing is lost: v2 of the first three files
    _place(path, torn, wal, backup=before)
    assert _versions(path, corpus) == [2, 2, 2, 1, 1, 1]
    assert not Path(checkpoint.backup_path(str(path))).exists()
    assert not Path(f"{path}.wal").exists()  # closing checkpointed
    assert _versions(path, corpus) == [2, 2, 2, 1, 1, 1]


def test_a_read_only_open_of_a_torn_file_names_the_way_out_and_changes_nothing(interrupted: tuple[Path, Path, bytes, bytes]) -> None:
    path, corpus, before, torn = interrupted
    wal = Path(f"{path}.wal").read_bytes()
    _place(path, torn, wal, backup=before)
    with pytest.raises(StoreError, match="without read_only"):
        DuckDBStore(DuckDBStoreConfig(read_only=True), path=path)
    assert path.read_bytes() == torn and Path(checkpoint.backup_path(str(path))).read_bytes() == before
    assert _versions(path, corpus) == [2, 2, 2, 1, 1, 1]  # the first writer repairs it


def test_a_copy_left_beside_an_intact_file_is_dropped_and_nothing_changes(interrupted: tuple[Path, Path, bytes, bytes]) -> None:
    """Killed after the copy, before DuckDB wrote anything: the file is whole, the WAL replays."""
    path, corpus, before, _ = interrupted
    wal = Path(f"{path}.wal").read_bytes()
    _place(path, before, wal, backup=before)
    Path(checkpoint.backup_path(str(path)) + ".tmp").write_bytes(before[:5000])  # a copy cut short too
    with DuckDBStore(path=path) as store:
        assert not Path(checkpoint.backup_path(str(path))).exists()
        assert not Path(checkpoint.backup_path(str(path)) + ".tmp").exists()
        assert store.count("default") == 3 * CHUNKS[2] + 3 * CHUNKS[1]
    assert _versions(path, corpus) == [2, 2, 2, 1, 1, 1]


def test_duckdb_never_checkpoints_on_its_own_and_the_store_does_behind_a_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "store.duckdb"
    copies: list[tuple[bool, bool]] = []
    copy = checkpoint._copy_durably

    def watched(source: str, target: str) -> None:
        copy(source, target)
        copies.append((Path(target).exists(), Path(f"{source}.wal").stat().st_size > 0))

    monkeypatch.setattr(checkpoint, "_copy_durably", watched)
    corpus = tmp_path / "corpus"
    _write_corpus(corpus, 1)
    with DuckDBStore(path=path) as store:
        pipeline = Pipeline.builder().store(store).embedder("hash", dim=32).chunker("recursive", size=40, overlap=0).build()
        pipeline.ingest(corpus)
        size = path.stat().st_size
        assert Path(f"{path}.wal").stat().st_size > 0 and not copies  # commits wait in the WAL
        store.checkpoint()
        assert copies == [(True, True)]  # the copy was whole before DuckDB started
        assert not Path(f"{path}.wal").exists() or Path(f"{path}.wal").stat().st_size == 0
        assert not Path(checkpoint.backup_path(str(path))).exists()
        store.checkpoint()  # nothing to write: no copy
        assert len(copies) == 1
    assert len(copies) == 1  # closing after a checkpoint: nothing left to write
    assert path.stat().st_size >= size
    with DuckDBStore(path=path) as store:
        assert store.count("default") == FILES * CHUNKS[1]
    assert len(copies) == 1  # a store only read is closed without a checkpoint


def test_a_wal_past_the_threshold_is_checkpointed_after_the_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint, "WAL_CHECKPOINT_BYTES", 1)
    path = tmp_path / "store.duckdb"
    corpus = tmp_path / "corpus"
    _write_corpus(corpus, 1)
    with DuckDBStore(path=path) as store:
        Pipeline.builder().store(store).embedder("hash", dim=32).chunker("recursive", size=40, overlap=0).build().ingest(corpus)
        assert not Path(f"{path}.wal").exists() or Path(f"{path}.wal").stat().st_size == 0


def test_a_copy_that_cannot_be_written_skips_the_checkpoint_and_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint, "WAL_CHECKPOINT_BYTES", 1)  # every write is followed by a checkpoint
    path = tmp_path / "store.duckdb"
    corpus = tmp_path / "corpus"
    _write_corpus(corpus, 1)
    store = DuckDBStore(path=path)
    pipeline = Pipeline.builder().store(store).embedder("hash", dim=32).chunker("recursive", size=40, overlap=0).build()
    Path(checkpoint.backup_path(str(path)) + ".tmp").mkdir()  # the fault: the copy cannot be created
    with pytest.warns(UserWarning, match="free disk space"):
        result = pipeline.ingest(corpus)
    assert not result.failed  # committed: the checkpoint after it is what failed
    with pytest.raises(StoreError, match="free disk space"):
        store.checkpoint()
    assert Path(f"{path}.wal").stat().st_size > 0 and not Path(checkpoint.backup_path(str(path))).exists()
    with pytest.warns(UserWarning, match="checkpoint at close failed"):
        store.close()
    Path(checkpoint.backup_path(str(path)) + ".tmp").rmdir()
    assert _versions(path, corpus) == [1] * FILES  # replayed from the WAL
    assert not Path(f"{path}.wal").exists()
