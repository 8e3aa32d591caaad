"""What PostgreSQL's side of writing BM25 postings costs, layout by layout (raw SQL, a private pgserver).

    python bench/pgvector/postings_layouts.py            # 20,000 SciFact windows in sources of 1,000 chunks
    python bench/pgvector/postings_layouts.py --source-size 1

The postings are the store's own (ragloom's analyzer and term keys, ``ragloom_pgvector.keyword.postings``),
written with COPY, one statement per source, one transaction per 1,000 chunks (as a write session flushes). Printed per chunk: the server's CPU (its processes, from
``/proc``) and the wall time. Layouts:

1. one row per (term, chunk) with the store's two btrees (``postings`` today);
2. the same rows with one btree ``(term_key, row_id) INCLUDE (tf, dl)``;
3. the same rows without an index (the heap and WAL alone: what the btrees cost is the difference);
4. one row per (term, source) holding the source's postings of that term as packed arrays, btrees on
   ``term_key`` and ``generation`` (fewer rows only when a source has many chunks);
5. one row per chunk with its term keys in an array under a GIN index (``fastupdate``, the default).

Only the write is measured here: the query side of layouts 4 and 5 is not built.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_pgvector as bench  # noqa: E402
from ingest_ceiling import packed_blocks  # noqa: E402

from ragloom.analysis import Analyzer  # noqa: E402
from ragloom_pgvector.keyword import Postings, TermKeys, postings  # noqa: E402

_ROWS = "CREATE TABLE x.postings (term_key bigint NOT NULL, row_id bigint NOT NULL, tf real NOT NULL, dl real NOT NULL)"


def _write_rows(conn: Any, generation: int, found: Postings) -> None:
    if not len(found):
        return
    with conn.cursor().copy("COPY x.postings (term_key, row_id, tf, dl) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(found.copy_data())


def _groups(keys: np.ndarray) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of equal values in sorted ``keys``."""
    cut = np.flatnonzero(np.diff(keys)) + 1
    return list(zip(np.concatenate([[0], cut]).tolist(), np.concatenate([cut, [len(keys)]]).tolist(), strict=True))


def _write_blocks(conn: Any, generation: int, found: Postings) -> None:
    with conn.cursor().copy("COPY x.blocks (term_key, generation, row_ids, tfs, dls) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(packed_blocks(found, generation))


def _write_gin(conn: Any, generation: int, found: Postings) -> None:
    order = np.argsort(found.rows, kind="stable")
    rows, terms, tfs = found.rows[order], found.terms[order], found.tfs[order]
    with conn.cursor().copy("COPY x.chunk_terms (row_id, terms, tfs) FROM STDIN") as copy:
        for start, end in _groups(rows):
            copy.write_row((int(rows[start]), terms[start:end].tolist(), tfs[start:end].tolist()))


LAYOUTS = [
    ("rows, two btrees (the store's layout)", [_ROWS, "CREATE INDEX ON x.postings (term_key) INCLUDE (row_id, tf, dl)", "CREATE INDEX ON x.postings (row_id)"], _write_rows),
    ("rows, one btree (term_key, row_id) INCLUDE (tf, dl)", [_ROWS, "CREATE INDEX ON x.postings (term_key, row_id) INCLUDE (tf, dl)"], _write_rows),
    ("rows, no index (heap and WAL only)", [_ROWS], _write_rows),
    (
        "one row per (term, source), packed arrays, btrees on term_key and generation",
        ["CREATE TABLE x.blocks (term_key bigint NOT NULL, generation bigint NOT NULL, row_ids bytea, tfs bytea, dls bytea)",
         "CREATE INDEX ON x.blocks (term_key)", "CREATE INDEX ON x.blocks (generation)"],
        _write_blocks,
    ),
    ("one row per chunk, term keys in an array under GIN", ["CREATE TABLE x.chunk_terms (row_id bigint, terms bigint[], tfs real[])", "CREATE INDEX ON x.chunk_terms USING gin (terms)"], _write_gin),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--source-size", type=int, default=1000)
    args = parser.parse_args(argv)
    import psycopg

    texts = bench.bench_duckdb._windows(bench.bench_duckdb._scifact()[0], 20_000)
    analyzer, keys = Analyzer(), TermKeys()
    parts = []
    for first in range(0, args.chunks, args.source_size):
        window = [texts[i % len(texts)] for i in range(first, min(first + args.source_size, args.chunks))]
        parts.append(postings(analyzer, keys, "bench", window, np.arange(first, first + len(window), dtype=np.int64))[0])
    per_chunk = sum(len(p) for p in parts) / args.chunks
    blocks = sum(len(np.unique(p.terms)) for p in parts) / args.chunks
    with bench.private_server() as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        print(f"{args.chunks:,} SciFact windows, sources of {args.source_size:,} chunks: {per_chunk:.1f} postings "
              f"and {blocks:.1f} (term, source) rows per chunk\n")
        print("| layout | server CPU µs per chunk | wall µs per chunk |\n| --- | ---: | ---: |")
        for name, statements, write in LAYOUTS:
            conn.execute("DROP SCHEMA IF EXISTS x CASCADE")
            conn.execute("CREATE SCHEMA x")
            for statement in statements:
                conn.execute(statement)
            cpu, began = bench._server_cpu(), time.perf_counter()
            per_transaction = max(1, 1000 // args.source_size)
            for first in range(0, len(parts), per_transaction):
                with conn.transaction():
                    for generation in range(first, min(first + per_transaction, len(parts))):
                        write(conn, generation, parts[generation])
            cpu, wall = bench._server_cpu() - cpu, time.perf_counter() - began
            print(f"| {name} | {cpu / args.chunks * 1e6:.0f} | {wall / args.chunks * 1e6:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
