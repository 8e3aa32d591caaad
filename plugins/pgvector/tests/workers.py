"""Child processes of the multi-process tests: ingest workers and a reader (run with ``python workers.py``)."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from ragloom.pipeline import Pipeline
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

NAMESPACE = "many"
DIM = 32


def pipeline(store: PgVectorStore) -> Pipeline:
    return (
        Pipeline.builder()
        .namespace(NAMESPACE)
        .store(store)
        .embedder("hash", dim=DIM)
        .chunker("recursive", size=200, overlap=0)
        .build()
    )


def ingest(dsn: str, schema: str, root: str) -> None:
    """Ingest the folder once; print the result as JSON."""
    with PgVectorStore(PgVectorStoreConfig(schema=schema, pool_max=2), dsn=dsn) as store:
        result = pipeline(store).ingest(root)
    print(json.dumps({"chunks": result.chunks, "errors": len(result.failed)}), flush=True)


def read(dsn: str, schema: str, expected_file: str, stop_file: str) -> None:
    """Query until ``stop_file`` exists; print every snapshot that misses or doubles a source, then the count of checks.

    ``expected_file``: JSON ``{source: [chunk counts of its allowed versions]}``.
    """
    allowed = {source: set(counts) for source, counts in json.loads(Path(expected_file).read_text()).items()}
    checks = 0
    problems: list[str] = []
    query = np.ones(DIM, dtype=np.float32)
    with PgVectorStore(PgVectorStoreConfig(schema=schema, pool_max=1), dsn=dsn) as store:
        while not Path(stop_file).exists():
            results = store.search(NAMESPACE, query, top_k=100_000)
            per_source = Counter(r.source for r in results)
            ids = Counter(r.chunk_id for r in results)
            missing = set(allowed) - set(per_source)
            if missing:
                problems.append(f"missing {sorted(missing)[:3]}")
            doubled = [cid for cid, n in ids.items() if n > 1]
            if doubled:
                problems.append(f"doubled chunk ids {doubled[:3]}")
            wrong = [s for s, n in per_source.items() if n not in allowed.get(s, ())]
            if wrong:
                problems.append(f"chunk counts of no version: {[(s, per_source[s]) for s in wrong[:3]]}")
            checks += 1
            time.sleep(0.005)
    print(json.dumps({"checks": checks, "problems": problems[:20]}), flush=True)


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"ingest": ingest, "read": read}[command](*args)
