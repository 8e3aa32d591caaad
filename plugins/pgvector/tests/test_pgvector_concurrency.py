"""Many processes writing the same sources at once end with exactly one generation of each."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.stores.memory import MemoryStore
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import workers  # noqa: E402

FILES = 200
WRITERS = 4


def _write_corpus(root: Path, version: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(FILES):
        edited = version > 1 and i % 3 == 0
        paragraphs = 2 + (i % 3) + (1 if edited and i % 2 == 0 else 0)
        text = "\n\n".join(
            f"File {i} paragraph {p} {'edited in version ' + str(version) if edited else 'as first written'}: "
            f"the quick brown fox {i * 7 + p} jumps over the lazy dog and keeps running far away from here."
            for p in range(paragraphs)
        )
        (root / f"doc{i:03d}.md").write_text(text, encoding="utf-8")


def _expected(root: Path) -> dict[str, list[Any]]:
    """What one clean ingest of ``root`` stores: ``{source: sorted (chunk_id, text)}``, from the memory store."""
    store = MemoryStore()
    workers.pipeline(store).ingest(str(root))
    results = store.search(workers.NAMESPACE, np.ones(workers.DIM, dtype=np.float32), top_k=100_000)
    by_source: dict[str, list[Any]] = {}
    for r in results:
        by_source.setdefault(r.source, []).append((r.chunk_id, r.text))
    return {s: sorted(v) for s, v in by_source.items()}


def _ingest_concurrently(pg: Any, schema: str, root: Path) -> list[dict[str, Any]]:
    children = [
        subprocess.Popen(
            [sys.executable, str(HERE / "workers.py"), "ingest", pg.dsn, schema, str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(WRITERS)
    ]
    outputs = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err[-3000:]
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    return outputs


def _stored(store: PgVectorStore) -> dict[str, list[Any]]:
    results = store.search(workers.NAMESPACE, np.ones(workers.DIM, dtype=np.float32), top_k=100_000)
    ids = Counter(r.chunk_id for r in results)
    assert max(ids.values()) == 1, [cid for cid, n in ids.items() if n > 1][:5]
    by_source: dict[str, list[Any]] = {}
    for r in results:
        by_source.setdefault(r.source, []).append((r.chunk_id, r.text))
    return {s: sorted(v) for s, v in by_source.items()}


def test_four_writers_twice_with_edits_exact_and_readers_never_see_a_source_missing(
    pg: Any, pg_schema: str, tmp_path: Path
) -> None:
    root = tmp_path / "corpus"
    _write_corpus(root, 1)
    first = _expected(root)
    store = PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn)
    try:
        outputs = _ingest_concurrently(pg, pg_schema, root)
        assert all(o["errors"] == 0 for o in outputs)
        stored = _stored(store)
        assert stored == first
        assert store.count(workers.NAMESPACE) == sum(len(v) for v in first.values())
        assert len(store.sources(workers.NAMESPACE)) == FILES

        # round 2: a third of the files edited (some grow a paragraph), a reader querying throughout
        _write_corpus(root, 2)
        second = _expected(root)
        assert second != first
        allowed = {s: sorted({len(first[s]), len(second[s])}) for s in second}
        expected_file, stop_file = tmp_path / "expected.json", tmp_path / "stop"
        expected_file.write_text(json.dumps(allowed))
        reader = subprocess.Popen(
            [sys.executable, str(HERE / "workers.py"), "read", pg.dsn, pg_schema, str(expected_file), str(stop_file)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            outputs = _ingest_concurrently(pg, pg_schema, root)
        finally:
            stop_file.write_text("stop")
            out, err = reader.communicate(timeout=60)
        assert reader.returncode == 0, err[-3000:]
        report = json.loads(out.strip().splitlines()[-1])
        assert report["problems"] == []
        assert report["checks"] > 0
        assert all(o["errors"] == 0 for o in outputs)
        assert _stored(store) == second
        assert store.count(workers.NAMESPACE) == sum(len(v) for v in second.values())
        keyword_hits = store.keyword_search(workers.NAMESPACE, "edited version", top_k=1000)
        edited_chunks = sum(1 for chunks in second.values() for _, text in chunks if "edited in version 2" in text)
        assert len(keyword_hits) == edited_chunks
    finally:
        store.close()
