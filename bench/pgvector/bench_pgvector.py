"""Benchmarks of the ragloom-pgvector store beside ragloom-duckdb, in one run; prints Markdown tables.

    python bench/pgvector/bench_pgvector.py                  # a private pgserver (PostgreSQL 16, pgvector 0.6)
    RAGLOOM_BENCH_PG_DSN=postgresql://... python bench/pgvector/bench_pgvector.py

1. exact and HNSW top-10 latency and recall@10 at N x 384 on the vectors the
   DuckDB bench uses (hash-embedder vectors of SciFact windows), pgvector beside
   DuckDB; HNSW build time;
2. ingest with precomputed vectors through write sessions: 1 and 4 writer
   processes (pgvector), 1 writer (DuckDB admits one process);
3. keyword search on SciFact: nDCG@10 on the test qrels and queries/s, beside bm25s.

The private server runs with durable commits (fsync on), shared_buffers 512MB,
maintenance_work_mem 1GB. Numbers depend on the machine: compare ratios of one run.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.evaluation import ndcg_at_k
from ragloom.types import Chunk
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

_spec = importlib.util.spec_from_file_location("bench_duckdb", Path(__file__).resolve().parents[1] / "duckdb" / "bench_duckdb.py")
bench_duckdb = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(bench_duckdb)  # type: ignore[union-attr]

NS = "bench"
DIM = 384


def _find_scifact() -> Path:
    """``shared/data/scifact`` beside the checkout (a worktree may sit a level deeper than the main clone)."""
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "data" / "scifact"
        if (candidate / "corpus.jsonl").exists():
            return candidate
    return bench_duckdb.DATA


bench_duckdb.DATA = _find_scifact()


def _chunks(count: int, start: int = 0, source_size: int = 1000, prefix: str = "", texts: list[str] | None = None) -> list[Chunk]:
    """``count`` one-chunk documents of one source (named after the first chunk's block); the text ``chunk <i>``
    (two terms: the write path without the keyword index's work) or, with ``texts``, ``texts[i % len(texts)]``."""
    source = f"/bench/{prefix}s{start // source_size}.txt"
    return [
        Chunk(
            id=f"{prefix}d{i}:0",
            document_id=f"{prefix}d{i}",
            index=0,
            text=texts[i % len(texts)] if texts else f"chunk {i}",
            start=0,
            end=8,
            source=source,
            content_hash="h",
        )
        for i in range(start, start + count)
    ]


def _fill(
    store: Any,
    vectors: np.ndarray,
    *,
    start: int = 0,
    source_size: int = 1000,
    prefix: str = "",
    namespace: str = NS,
    texts: list[str] | None = None,
) -> float:
    """Stage, write and commit one source per ``source_size`` chunks in one session; seconds."""
    began = time.perf_counter()
    total = len(vectors)
    with store.session(namespace) as session:
        for first in range(0, total, source_size):
            count = min(source_size, total - first)
            chunks = _chunks(count, start + first, source_size, prefix, texts)
            stage = session.stage(chunks[0].source)
            stage.write(chunks, vectors[first : first + count])
            stage.commit()
            session.flush()
    return time.perf_counter() - began


def _timed_queries(search: Any, queries: np.ndarray) -> tuple[float, float, str]:
    """(p50, p95) milliseconds of ``search(q)`` over the queries (after one warm-up), and the CPU per query."""
    search(queries[0])
    times = []
    before = _cpu()
    for q in queries:
        began = time.perf_counter()
        search(q)
        times.append((time.perf_counter() - began) * 1e3)
    return float(np.percentile(times, 50)), float(np.percentile(times, 95)), _cpu_note(before, len(queries), "query")


_POSTMASTER: list[int] = []  # the private server's postmaster pid (none for RAGLOOM_BENCH_PG_DSN)


def _server_cpu() -> float:
    """CPU seconds used so far by the private server: its postmaster, its live children and the exited ones (0 for an external one).

    Beside wall-clock figures on a shared, busy machine, CPU per query or per
    chunk says what the work costs whatever the load. A backend that exited
    (a writer process closed its pool) is in the postmaster's ``cutime``/``cstime``.
    """
    if not _POSTMASTER:
        return 0.0
    ticks = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(pid) == _POSTMASTER[0]:
            ticks += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
        elif int(fields[1]) == _POSTMASTER[0]:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _cpu() -> tuple[float, float]:
    """(this process's CPU seconds, the server's CPU seconds)."""
    return time.process_time(), _server_cpu()


def _cpu_note(before: tuple[float, float], count: int, unit: str) -> str:
    client, server = (after - then for after, then in zip(_cpu(), before, strict=True))
    return f"CPU/{unit}: client {client / count * 1e3:.2f} ms, server {server / count * 1e3:.2f} ms"


def _recall(approximate: list[list[str]], exact: list[list[str]]) -> float:
    hits = sum(len(set(a) & set(e)) for a, e in zip(approximate, exact, strict=True))
    return hits / sum(len(e) for e in exact)


def bench_vectors(
    dsn: str,
    workdir: Path,
    size: int,
    rows: list[str],
    sweep: tuple[int, ...],
    duckdb: bool = True,
    builds: tuple[int, ...] = (64,),
    embedder: str = "hash",
) -> None:
    """Exact and HNSW top-10; one HNSW build per ``ef_construction`` in ``builds``, each swept over ``ef_search``.

    ``embedder``: the vectors of the windows and the queries, ``hash`` or ``minilm`` (all-MiniLM-L6-v2, cached)."""
    corpus, query_texts, _ = bench_duckdb._scifact()
    vectors = bench_duckdb._scifact_window_vectors(corpus, size, embedder)
    if embedder == "hash":
        queries = HashEmbedder(HashEmbedderConfig(dim=DIM)).embed_documents(list(query_texts.values())[:50])
    else:
        queries = bench_duckdb._embedder(embedder)[0].embed_documents(list(query_texts.values())[:50])
    label = f"{size // 1000:,}k x {DIM}, {embedder}"

    exact_ids: list[list[str]] | None = None
    if duckdb:
        path = workdir / "vectors.duckdb"
        duck = DuckDBStore(DuckDBStoreConfig(), path=path)
        _fill(duck, vectors)
        duck.close()
        duck = DuckDBStore(DuckDBStoreConfig(), path=path)
        exact_ids = [[r.chunk_id for r in duck.search(NS, q, top_k=10)] for q in queries]
        p50, p95, cpu = _timed_queries(lambda q: duck.search(NS, q, top_k=10), queries)
        rows.append(f"| {label} | ragloom-duckdb exact (numpy read cache) | {p50:.2f} | {p95:.2f} | 1.000 | {cpu} |")
        duck.close()
        began = time.perf_counter()
        duck = DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0), path=path)
        build = time.perf_counter() - began
        ids = [[r.chunk_id for r in duck.search(NS, q, top_k=10)] for q in queries]
        p50, p95, cpu = _timed_queries(lambda q: duck.search(NS, q, top_k=10), queries)
        rows.append(
            f"| {label} | ragloom-duckdb HNSW (m=16, ef_construction=128, ef_search=256) | {p50:.2f} | {p95:.2f} | {_recall(ids, exact_ids):.3f} | build {build:.0f} s; {cpu} |"
        )
        duck.close()
        print("\n".join(rows[-2:]), flush=True)

    schema = "bench_vectors"
    _drop(dsn, schema)
    store = PgVectorStore(PgVectorStoreConfig(schema=schema, index="exact"), dsn=dsn)
    seconds = _fill(store, vectors)
    stats = store.stats(NS)
    pg_exact = [[r.chunk_id for r in store.search(NS, q, top_k=10)] for q in queries]
    p50, p95, cpu = _timed_queries(lambda q: store.search(NS, q, top_k=10), queries[:20])
    if exact_ids is None:
        exact_ids = pg_exact
    agree = _recall(pg_exact, exact_ids)
    rows.append(
        f"| {label} | ragloom-pgvector exact (SQL scan) | {p50:.2f} | {p95:.2f} | {agree:.3f} | ingest {size / seconds:,.0f} chunks/s; "
        f"chunks table {stats['table_bytes'] / 2**20:,.0f} MiB; {cpu} |"
    )
    store.close()
    print(rows[-1], flush=True)
    defaults = PgVectorStoreConfig()
    for ef_construction in builds:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP INDEX IF EXISTS {schema}.chunks_hnsw")
        store = PgVectorStore(PgVectorStoreConfig(schema=schema, hnsw_min_chunks=10**12, ef_construction=ef_construction), dsn=dsn)
        began = time.perf_counter()
        store.build_index()
        build = time.perf_counter() - began
        index_bytes = _index_bytes(dsn, schema)
        store.close()
        for ef in dict.fromkeys((defaults.ef_search, *sweep)):
            config = PgVectorStoreConfig(schema=schema, ef_search=ef, hnsw_min_chunks=1000, ef_construction=ef_construction)
            store = PgVectorStore(config, dsn=dsn)
            assert store.plan(NS) == "hnsw"
            ids = [[r.chunk_id for r in store.search(NS, q, top_k=10)] for q in queries]
            p50, p95, cpu = _timed_queries(lambda q: store.search(NS, q, top_k=10), queries)  # noqa: B023
            first = ef == defaults.ef_search
            note = f"build {build:.0f} s, index {index_bytes / 2**20:,.0f} MiB; " if first else ""
            is_default = first and ef_construction == defaults.ef_construction
            what = f"m={defaults.m}, ef_construction={ef_construction}, ef_search={ef}" + (" (default)" if is_default else "")
            rows.append(
                f"| {label} | ragloom-pgvector HNSW ({what}) | {p50:.2f} | {p95:.2f} | {_recall(ids, exact_ids):.3f} | {note}{cpu} |"
            )
            store.close()
            print(rows[-1], flush=True)
    _drop(dsn, schema)


def _drop(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _index_bytes(dsn: str, schema: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = 'chunks_hnsw'",
            [schema],
        ).fetchone()
    return int(row[0]) if row else 0


def _writer(args: tuple[str, str, int, int, int, bool, bool]) -> tuple[float, float, float]:
    """Fill ``per_writer`` chunks: the CPU seconds this writer process spent doing it, and when it began and ended
    (wall clock, so the spawn and imports of a writer process are not counted as ingest)."""
    dsn, schema, writer, per_writer, source_size, keyword, real_texts = args
    vectors = np.random.default_rng(writer).standard_normal((per_writer, DIM)).astype(np.float32)
    texts = bench_duckdb._windows(bench_duckdb._scifact()[0], 20_000) if real_texts else None
    store = PgVectorStore(PgVectorStoreConfig(schema=schema, index="exact", keyword=keyword), dsn=dsn)
    began, wall = time.process_time(), time.time()
    try:
        _fill(store, vectors, start=writer * per_writer, source_size=source_size, prefix=f"w{writer}", texts=texts)
        return time.process_time() - began, wall, time.time()
    finally:
        store.close()


def bench_ingest(dsn: str, workdir: Path, total: int, rows: list[str]) -> None:
    vectors = np.random.default_rng(1).standard_normal((total, DIM)).astype(np.float32)
    scifact_texts = bench_duckdb._windows(bench_duckdb._scifact()[0], 20_000)
    for texts, what in ((None, "text `chunk <i>`"), (scifact_texts, "SciFact text (400-character windows: 58 words, 42 terms)")):
        path = workdir / "ingest.duckdb"
        duck = DuckDBStore(DuckDBStoreConfig(), path=path)
        began = time.process_time()
        seconds = _fill(duck, vectors, texts=texts)
        cpu = time.process_time() - began
        duck.close()
        bench_duckdb._remove(path)
        rows.append(
            f"| {total:,} x {DIM} | ragloom-duckdb, 1 writer (one process per file), BM25 on, {what} | {seconds:.1f} | {total / seconds:,.0f} | "
            f"writer (DuckDB in process) {cpu / total * 1e6:.0f} µs |"
        )
        print(rows[-1], flush=True)
    for writers, keyword, real_texts in ((1, True, False), (4, True, False), (1, False, False), (1, True, True), (4, True, True)):
        schema = f"bench_ingest_{writers}_{int(keyword)}_{int(real_texts)}"
        _drop(dsn, schema)
        PgVectorStore(PgVectorStoreConfig(schema=schema, index="exact"), dsn=dsn).close()
        per_writer = total // writers
        _writer((dsn, schema, 99, 10, 10, keyword, False))  # creates the vector column; not timed
        server = _server_cpu()
        with multiprocessing.get_context("spawn").Pool(writers) as pool:
            timings = pool.map(_writer, [(dsn, schema, w, per_writer, 1000, keyword, real_texts) for w in range(writers)])
        server = _server_cpu() - server
        writer_cpu = [cpu for cpu, _, _ in timings]
        seconds = max(end for _, _, end in timings) - min(start for _, start, _ in timings)
        with PgVectorStore(PgVectorStoreConfig(schema=schema, index="exact"), dsn=dsn) as store:
            stored = store.count(NS)
        assert stored == per_writer * writers + 10, stored
        what = "BM25 postings on" if keyword else "keyword = false"
        what += ", SciFact text (400-character windows: 58 words, 42 terms)" if real_texts else ", text `chunk <i>`"
        rows.append(
            f"| {per_writer * writers:,} x {DIM} | ragloom-pgvector, {writers} writer process(es), {what} | {seconds:.1f} | {per_writer * writers / seconds:,.0f} | "
            f"writers {sum(writer_cpu) / (per_writer * writers) * 1e6:.0f} µs, server {server / (per_writer * writers) * 1e6:.0f} µs |"
        )
        print(rows[-1], flush=True)
        _drop(dsn, schema)


def bench_writer_steps(total: int, rows: list[str]) -> None:
    """A pgvector writer's own CPU per chunk, step by step, on SciFact windows (no server involved): what bounds
    one writer process whatever the server does, since a session's statements run one after the other."""
    from ragloom.analysis import Analyzer
    from ragloom_pgvector.keyword import TermKeys, postings
    from ragloom_pgvector.store import _chunk_rows

    texts = bench_duckdb._windows(bench_duckdb._scifact()[0], 20_000)
    vectors = np.random.default_rng(1).standard_normal((total, DIM)).astype(np.float32)
    analyzer, keys = Analyzer(), TermKeys()
    analyzer.tokens_many(texts)  # a warm word table and term-key cache, as in a long ingest
    postings(analyzer, keys, NS, texts, np.arange(len(texts), dtype=np.int64))
    steps = {"Chunk objects (the bench's own, as in the ingest rows)": 0.0, "analysis (ragloom's Analyzer: regex, stop words, stems)": 0.0,
             "postings arrays (term keys, tf, dl)": 0.0, "postings binary COPY layout": 0.0, "chunk rows binary COPY layout (vectors included)": 0.0}
    names = list(steps)
    count = 0
    for first in range(0, total, 1000):
        clock = time.process_time()
        chunks = _chunks(min(1000, total - first), first, 1000, "", texts)
        row_ids = np.arange(first, first + len(chunks), dtype=np.int64)
        batch = [c.text for c in chunks]
        t1 = time.process_time()
        analyzer.tokens_many(batch)
        t2 = time.process_time()
        found, lengths = postings(analyzer, keys, NS, batch, row_ids)  # analyses again: its arrays are the rest
        t3 = time.process_time()
        found.copy_data()
        t4 = time.process_time()
        _chunk_rows(chunks, NS, 1, row_ids, lengths, vectors[first : first + len(chunks)])
        t5 = time.process_time()
        for name, seconds in zip(names, (t1 - clock, t2 - t1, (t3 - t2) - (t2 - t1), t4 - t3, t5 - t4), strict=True):
            steps[name] += seconds
        count += len(chunks)
    for name, seconds in steps.items():
        rows.append(f"| {name} | {seconds / count * 1e6:.1f} |")
        print(rows[-1], flush=True)
    rows.append(f"| **all of the above** | **{sum(steps.values()) / count * 1e6:.1f}** |")
    print(rows[-1], flush=True)


def bench_keyword(dsn: str, rows: list[str]) -> None:
    corpus, queries, qrels = bench_duckdb._scifact()
    chunks = [
        Chunk(
            id=f"{d['_id']}:0",
            document_id=d["_id"],
            index=0,
            text=f"{d['title']} {d['text']}",
            start=0,
            end=0,
            source="scifact",
            content_hash="h",
        )
        for d in corpus
    ]
    vectors = np.zeros((len(chunks), 8), dtype=np.float32)
    vectors[:, 0] = 1
    schema = "bench_keyword"
    _drop(dsn, schema)
    store = PgVectorStore(PgVectorStoreConfig(schema=schema), dsn=dsn)
    began = time.perf_counter()
    with store.session(NS) as session:
        stage = session.stage("scifact")
        stage.write(chunks, vectors)
        stage.commit()
    build = time.perf_counter() - began
    test_queries = [(qid, queries[qid]) for qid in qrels]
    scores = [
        ndcg_at_k([r.document_id for r in store.keyword_search(NS, text, top_k=10)], qrels[qid], 10) for qid, text in test_queries
    ]
    texts = list(queries.values())
    store.keyword_search(NS, texts[0], top_k=10)
    began, before = time.perf_counter(), _cpu()
    for text in texts:
        store.keyword_search(NS, text, top_k=10)
    qps = len(texts) / (time.perf_counter() - began)
    cpu = _cpu_note(before, len(texts), "query")
    concurrent = []
    for threads in (2, 4):  # clients side by side (one pooled connection each): throughput as a server sees it
        began, before = time.perf_counter(), _cpu()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda text: store.keyword_search(NS, text, top_k=10), texts))
        concurrent.append(f"{threads} clients {len(texts) / (time.perf_counter() - began):,.0f} q/s")
    latencies = []
    for text in texts[:200]:
        t = time.perf_counter()
        store.keyword_search(NS, text, top_k=10)
        latencies.append((time.perf_counter() - t) * 1e3)
    store.close()
    _drop(dsn, schema)
    rows.append(
        f"| ragloom-pgvector `keyword_search` (BM25 postings, numpy scoring) | {statistics.mean(scores):.4f} | {qps:,.0f} (1 client); {'; '.join(concurrent)} "
        f"| p95 {np.percentile(latencies, 95):.1f} ms; {cpu} | {build:.1f} |"
    )
    print(rows[-1], flush=True)
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    tokens = bm25s.tokenize([c.text for c in chunks], stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    ids = [c.document_id for c in chunks]

    def bm25s_top(text: str) -> list[str]:
        q = bm25s.tokenize([text], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, _ = retriever.retrieve(q, k=10, show_progress=False)
        return [ids[i] for i in docs[0]]

    scores = [ndcg_at_k(bm25s_top(text), qrels[qid], 10) for qid, text in test_queries]
    began = time.perf_counter()
    for text in texts:
        bm25s_top(text)
    qps = len(texts) / (time.perf_counter() - began)
    rows.append(f"| bm25s (same run, in process, one query per call) | {statistics.mean(scores):.4f} | {qps:,.0f} | | |")
    print(rows[-1], flush=True)


def _server(workdir: Path) -> tuple[str, Any]:
    dsn = os.environ.get("RAGLOOM_BENCH_PG_DSN")
    if dsn:
        return dsn, None
    import pgserver
    from pgserver._commands import pg_ctl

    server = pgserver.get_server(workdir / "pgdata", cleanup_mode="delete")
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET shared_buffers = '512MB'")
        conn.execute("ALTER SYSTEM SET maintenance_work_mem = '1GB'")
    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=server.pgdata, user=server.system_user, timeout=120)
    _POSTMASTER[:] = [int((Path(server.pgdata) / "postmaster.pid").read_text().split()[0])]
    return server.get_uri(), server


@contextlib.contextmanager
def private_server() -> Iterator[str]:
    """The DSN of a private pgserver in a temporary folder (or ``RAGLOOM_BENCH_PG_DSN``), removed afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        dsn, server = _server(Path(tmp))
        try:
            yield dsn
        finally:
            if server is not None:
                server.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--ingest", type=int, default=100_000)
    parser.add_argument("--ef-sweep", type=int, nargs="*", default=[40, 100, 200, 400])
    parser.add_argument("--ef-construction", type=int, nargs="+", default=[64], help="one HNSW build per value (default: 64)")
    parser.add_argument("--no-duckdb", action="store_true", help="pgvector rows only (DuckDB's HNSW build is the slowest step)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["vectors", "ingest", "keyword"])
    parser.add_argument(
        "--embedder", choices=["hash", "minilm"], default="hash",
        help="vectors of the search rows (minilm: all-MiniLM-L6-v2 through ragloom-sentence-transformers, cached in bench/.cache)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, private_server() as dsn:
        workdir = Path(tmp)
        print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        try:
            rows: list[str] = []
            if "vectors" not in args.skip:
                print(f"\n## Top-10 vector search (50 SciFact queries, {args.embedder} embedder)\n")
                print(
                    "| vectors | method | p50 ms | p95 ms | recall@10 vs exact | notes |\n| --- | --- | ---: | ---: | ---: | --- |",
                    flush=True,
                )
                bench_vectors(
                    dsn, workdir, args.size, rows, tuple(args.ef_sweep), duckdb=not args.no_duckdb, builds=tuple(args.ef_construction),
                    embedder=args.embedder,
                )
            if "keyword" not in args.skip:
                rows = []
                print("\n## Keyword search on SciFact (300 test queries for nDCG, all 1,109 for speed)\n")
                print("| method | nDCG@10 | queries / s | latency | index s |\n| --- | ---: | ---: | ---: | ---: |", flush=True)
                bench_keyword(dsn, rows)
            if "ingest" not in args.skip:
                rows = []
                print("\n## Ingest with precomputed vectors (sessions of 1,000-chunk sources, flushed per source)\n")
                print("| chunks | writer | seconds | chunks / s | CPU per chunk |\n| --- | --- | ---: | ---: | --- |", flush=True)
                bench_ingest(dsn, workdir, args.ingest, rows)
                rows = []
                print("\n## A writer's own CPU per chunk, by step (SciFact windows, no server)\n")
                print("| step | µs per chunk |\n| --- | ---: |", flush=True)
                bench_writer_steps(min(args.ingest, 20_000), rows)
        finally:
            print(f"\nload average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
