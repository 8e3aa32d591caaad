"""kill -9 of a process re-ingesting a source into a local-mode folder: the old generation stays whole.

The child opens the folder, stages version 2 of ``/big.md`` in batches and commits it; the
parent SIGKILLs it while it writes (after the third batch) or as it starts the flush. Reopening
must show one whole generation of the source (the old one when the kill came before the commit
point), no chunk twice, and no point of the interrupted stage left in the folder; a retry then
brings version 2 in whole.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore

NS = "kill"
SOURCE = "/big.md"
COUNTS = {1: 120, 2: 200}
BATCH = 20

CHILD = """
import sys
import numpy as np
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore

path, count, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
store = QdrantStore(path=path)
chunks = make_chunks("/big.md", count, texts=[f"/big.md version 2 chunk {i}" for i in range(count)], content_hash="v2")
vectors = np.random.default_rng(2).standard_normal((count, 8)).astype(np.float32)
with store.session("kill") as session:
    stage = session.stage("/big.md")
    for number, start in enumerate(range(0, count, batch), 1):
        stage.write(chunks[start : start + batch], vectors[start : start + batch])
        print(f"wrote {number}", flush=True)
    stage.commit()
    print("flushing", flush=True)
    session.flush()
    print("flushed", flush=True)
"""


def _version(store: QdrantStore, version: int) -> None:
    count = COUNTS[version]
    chunks = make_chunks(SOURCE, count, texts=[f"{SOURCE} version {version} chunk {i}" for i in range(count)], content_hash=f"v{version}")
    with store.session(NS) as session:
        stage = session.stage(SOURCE)
        stage.write(chunks, np.random.default_rng(version).standard_normal((count, 8)).astype(np.float32))
        stage.commit()


def _visible(store: QdrantStore) -> list[str]:
    return [r.text for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=10_000)]


def _check_whole(store: QdrantStore) -> int:
    """The source holds exactly one whole version, no chunk twice, nothing else in the folder; returns the version."""
    texts = _visible(store)
    assert len(texts) == len(set(texts)), "a chunk is visible twice"
    versions = {t.split()[2] for t in texts}
    assert len(versions) == 1, f"versions mixed: {versions}"
    version = int(versions.pop())
    assert sorted(texts) == sorted(f"{SOURCE} version {version} chunk {i}" for i in range(COUNTS[version]))
    assert store.count(NS) == COUNTS[version] == store.source_counts(NS)[SOURCE]
    state = store.source_states(NS, [SOURCE])[SOURCE]
    assert set(state.documents.values()) == {f"v{version}"}
    # the interrupted generation's points are deleted, not only hidden
    assert store.client.count(store.collection, exact=True).count == COUNTS[version]
    return version


@pytest.mark.parametrize("kill_at", ["wrote 3", "flushing"])
def test_kill_9_mid_ingest_leaves_the_old_generation_whole_and_a_retry_succeeds(tmp_path: Path, kill_at: str) -> None:
    path = tmp_path / "qdrant"
    store = QdrantStore(path=path)
    _version(store, 1)
    store.close()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(COUNTS[2]), str(BATCH)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    killed = False
    for line in child.stdout:
        if line.strip() == kill_at:
            os.kill(child.pid, signal.SIGKILL)
            killed = True
            break
    child.wait(timeout=120)
    assert killed, child.stderr.read() if child.stderr else "the child ended before the kill"
    assert child.returncode == -signal.SIGKILL
    store = QdrantStore(path=path)
    try:
        version = _check_whole(store)
        if kill_at == "wrote 3":  # killed before the commit point: the old generation
            assert version == 1
        _version(store, 2)  # the retry
        assert _check_whole(store) == 2
    finally:
        store.close()
    store = QdrantStore(path=path)  # and it stays so
    try:
        assert _check_whole(store) == 2
    finally:
        store.close()
