"""The ceiling of one writer with BM25 of real text, for the cheapest postings layout measured.

    python bench/pgvector/ingest_ceiling.py            # 50,000 SciFact windows, sources of 1,000 chunks
    python bench/pgvector/ingest_ceiling.py --chunks 20000

Not the store: a best case for a design it does not have. The chunk rows are the store's own
(its table, ``_chunk_rows``, ragloom's analyzer and term keys); the postings go in as one row per
(term, source) with packed arrays (``postings_layouts.py``'s cheapest layout for large sources),
into an empty store, with none of the store's bookkeeping (per-source locks, the ``sources``
counts, deleting an old generation). Two runs:

- one after the other: the writer prepares a source, then waits while the server stores it;
- overlapped: a sender thread runs source k's two COPYs (psycopg waits without the GIL) while
  the writer prepares source k + 1, two sources in flight at most.

Printed: chunks/s, the writer process's CPU (both threads) and the server's, per chunk.
"""

from __future__ import annotations

import argparse
import queue
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_pgvector as bench  # noqa: E402

from ragloom.analysis import Analyzer  # noqa: E402
from ragloom.plugin import normalize_rows  # noqa: E402
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig, binary  # noqa: E402
from ragloom_pgvector.keyword import Postings, TermKeys, postings  # noqa: E402
from ragloom_pgvector.store import _COPY_COLUMNS, _chunk_rows  # noqa: E402

SCHEMA = "ceiling"


def packed_blocks(found: Postings, generation: int) -> bytes:
    """Binary COPY data of one row per term: ``(term_key, generation, row_ids, tfs, dls)``, the arrays packed."""
    order = np.argsort(found.terms, kind="stable")
    terms = found.terms[order]
    starts = np.flatnonzero(np.concatenate([[True], terms[1:] != terms[:-1]])) if len(terms) else np.zeros(0, np.int64)
    counts = np.diff(np.concatenate([starts, [len(terms)]]))
    return binary.copy_data(
        [
            binary.fixed(terms[starts], ">i8"),
            binary.same(generation.to_bytes(8, "big"), len(starts)),
            (found.rows[order].astype("<i8").view(np.uint8), counts * 8),
            (found.tfs[order].astype("<f4").view(np.uint8), counts * 4),
            (found.lengths[order].astype("<f4").view(np.uint8), counts * 4),
        ]
    )


def _store(conn: Any, chunk_data: bytes, block_data: bytes) -> None:
    """One source in one transaction: its chunk rows, then its postings rows."""
    with conn.transaction():
        with conn.cursor().copy(f"COPY {SCHEMA}.chunks ({_COPY_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(chunk_data)
        with conn.cursor().copy(f"COPY {SCHEMA}.blocks FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(block_data)


def _prepared(texts: list[str], vectors: np.ndarray, source_size: int) -> Iterator[tuple[bytes, bytes]]:
    """Each source's COPY data (chunk rows, postings rows), prepared when asked for: the writer's work."""
    analyzer, keys = Analyzer(), TermKeys()
    for generation, first in enumerate(range(0, len(vectors), source_size), start=100):
        count = min(source_size, len(vectors) - first)
        chunks = bench._chunks(count, first, source_size, "", texts)
        row_ids = np.arange(first, first + count, dtype=np.int64) + 1_000_000
        found, lengths = postings(analyzer, keys, bench.NS, [c.text for c in chunks], row_ids)
        yield _chunk_rows(chunks, bench.NS, generation, row_ids, lengths, normalize_rows(vectors[first : first + count])), packed_blocks(found, generation)


def _write(conn: Any, sources: Iterator[tuple[bytes, bytes]], *, overlapped: bool) -> None:
    """Store every source: one after the other, or by a sender thread while the next source is prepared."""
    if not overlapped:
        for item in sources:
            _store(conn, *item)
        return
    work: queue.Queue[tuple[bytes, bytes] | None] = queue.Queue(maxsize=2)

    def send() -> None:
        while (item := work.get()) is not None:
            _store(conn, *item)

    sender = threading.Thread(target=send)
    sender.start()
    for item in sources:
        work.put(item)
    work.put(None)
    sender.join()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--source-size", type=int, default=1000)
    args = parser.parse_args(argv)
    import psycopg

    texts = bench.bench_duckdb._windows(bench.bench_duckdb._scifact()[0], 20_000)
    vectors = np.random.default_rng(1).standard_normal((args.chunks, bench.DIM)).astype(np.float32)
    with bench.private_server() as dsn:
        with PgVectorStore(PgVectorStoreConfig(schema=SCHEMA, index="exact"), dsn=dsn) as store:  # the store's schema
            bench._fill(store, vectors[:10], prefix="setup", texts=texts)  # gives chunks its vector column
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"CREATE TABLE {SCHEMA}.blocks (term_key bigint NOT NULL, generation bigint NOT NULL, "
                         "row_ids bytea NOT NULL, tfs bytea NOT NULL, dls bytea NOT NULL)")
            conn.execute(f"CREATE INDEX ON {SCHEMA}.blocks (term_key)")
            conn.execute(f"CREATE INDEX ON {SCHEMA}.blocks (generation)")
            print(f"{args.chunks:,} SciFact windows × {bench.DIM}, sources of {args.source_size:,} chunks, one writer\n")
            print("| writes | chunks / s | writer CPU per chunk | server CPU per chunk |\n| --- | ---: | ---: | ---: |")
            for overlapped in (False, True):
                conn.execute(f"DELETE FROM {SCHEMA}.chunks WHERE namespace = 'bench'")
                conn.execute(f"TRUNCATE {SCHEMA}.blocks")
                conn.execute(f"VACUUM {SCHEMA}.chunks")
                cpu, server_cpu, began = time.process_time(), bench._server_cpu(), time.perf_counter()
                _write(conn, _prepared(texts, vectors, args.source_size), overlapped=overlapped)
                wall = time.perf_counter() - began
                cpu, server_cpu = time.process_time() - cpu, bench._server_cpu() - server_cpu
                stored = conn.execute(f"SELECT count(*) FROM {SCHEMA}.chunks WHERE namespace = 'bench'").fetchone()[0]
                assert stored == args.chunks, stored
                what = "overlapped (a sender thread)" if overlapped else "one after the other"
                print(f"| {what} | {args.chunks / wall:,.0f} | {cpu / args.chunks * 1e6:.0f} µs | {server_cpu / args.chunks * 1e6:.0f} µs |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
