"""What opening an ``index = "hnsw"`` DuckDB store costs: normally, after a crash, without a side file.

    python bench/duckdb/bench_hnsw_open.py --size 100000
    python bench/duckdb/bench_hnsw_open.py --size 20000 --vss-src /path/to/old/plugins/duckdb/src

SciFact windows through the hash embedder (384-d), as in bench_duckdb.py. Steps, each timed:
the first HNSW search of a store with no side file (graph build + save), the first search of a
reopened store (side file read, checked, reconciled), the first search after a child process was
SIGKILLed having committed ``--crash-rows`` more rows it never saved into the side file, and
HNSW against exact query latency and recall@10. ``--vss-src`` also times the vss HNSW index of an
earlier ragloom-duckdb (the plugin's source folder of that version) on the same vectors.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_duckdb  # noqa: E402
from bench_duckdb import DIM, NS, _fill, _recall, _scifact, _scifact_window_vectors, _timed  # noqa: E402

from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig  # noqa: E402
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig  # noqa: E402

HNSW = DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0)

_CRASH = """
import os, sys, numpy as np
sys.path.insert(0, {bench!r})
from bench_duckdb import _fill
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig
vectors = np.load({vectors!r})
store = DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0), path={path!r})
store.search("bench", vectors[0], top_k=10)  # the index is loaded and kept in step from here on
_fill(store, vectors)                          # re-ingests the sources of these rows (new generations committed)
print("committed", flush=True)
import time; time.sleep(60)
"""

_VSS = """
import sys, time, json, numpy as np
sys.path.insert(0, {src!r}); sys.path.insert(0, {bench!r})
from bench_duckdb import _fill
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig
vectors, queries = np.load({vectors!r}), np.load({queries!r})
store = DuckDBStore(DuckDBStoreConfig(), path={path!r}); _fill(store, vectors); store.close()
start = time.perf_counter()
store = DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0), path={path!r})
build = time.perf_counter() - start
store.search("bench", queries[0], top_k=10)
times = []
for _ in range(5):
    t = time.perf_counter(); [store.search("bench", q, top_k=10) for q in queries[:10]]; times.append((time.perf_counter() - t) / 10)
ids = [[r.chunk_id for r in store.search("bench", q, top_k=10)] for q in queries]
store.close()
start = time.perf_counter()
store = DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0), path={path!r})
store.search("bench", queries[0], top_k=10)
reopen = time.perf_counter() - start
store.close()
print(json.dumps({{"build": build, "query": sorted(times)[2], "ids": ids, "reopen": reopen}}))
"""


def _first_search(path: Path, query: np.ndarray) -> tuple[float, dict]:
    start = time.perf_counter()
    store = DuckDBStore(HNSW, path=path)
    store.search(NS, query, top_k=10)
    seconds = time.perf_counter() - start
    opened = dict(store._db.hnsw.opened)
    store.close()
    return seconds, opened


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--crash-rows", type=int, default=5_000)
    parser.add_argument("--vss-src", help="plugins/duckdb/src of an earlier ragloom-duckdb (vss HNSW) to time beside")
    parser.add_argument("--scifact", type=Path, default=bench_duckdb.DATA, help="folder of the SciFact BEIR files")
    args = parser.parse_args()
    bench_duckdb.DATA = args.scifact
    corpus, query_texts, _ = _scifact()
    vectors = _scifact_window_vectors(corpus, args.size)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = HashEmbedder(HashEmbedderConfig(dim=DIM)).embed_documents(list(query_texts.values())[:50])
    rows = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        work = Path(tmp)
        path = work / "open.duckdb"
        store = DuckDBStore(DuckDBStoreConfig(), path=path)
        _fill(store, vectors)
        store.search(NS, queries[0], top_k=10)
        exact_time = _timed(lambda: [store.search(NS, q, top_k=10) for q in queries[:10]], 5) / 10
        exact_ids = [[r.chunk_id for r in store.search(NS, q, top_k=10)] for q in queries]
        store.close()
        label = f"{args.size // 1000:,}k x {DIM}"
        mirror_start = time.perf_counter()
        with DuckDBStore(DuckDBStoreConfig(), path=path) as store:
            store.search(NS, queries[0], top_k=10)
        mirror = time.perf_counter() - mirror_start
        rows.append(f"| {label} | exact store: open + first search (read cache loaded from the file) | {mirror:.1f} | |")
        print(rows[-1], flush=True)

        built, opened = _first_search(path, queries[0])
        side = os.path.getsize(f"{path}.hnsw")
        rows.append(f"| {label} | HNSW, no side file: open + first search (graph built and saved) | {built:.1f} | "
                    f"{opened['added']:,} rows added; side file {side / 1e6:.0f} MB |")
        print(rows[-1], flush=True)
        again, opened = _first_search(path, queries[0])
        rows.append(f"| {label} | HNSW after a clean close: open + first search (side file read, checked, reconciled) | {again:.1f} | "
                    f"{opened['source']}, {opened['added']} rows added |")
        print(rows[-1], flush=True)

        with DuckDBStore(HNSW, path=path) as store:
            store.search(NS, queries[0], top_k=10)
            hnsw_time = _timed(lambda: [store.search(NS, q, top_k=10) for q in queries[:10]], 5) / 10  # noqa: B023
            hnsw_ids = [[r.chunk_id for r in store.search(NS, q, top_k=10)] for q in queries]
        rows.append(f"| {label} | HNSW query (top-10, ef_search=256) | {hnsw_time * 1e3:.2f} ms | "
                    f"recall@10 {_recall(hnsw_ids, exact_ids):.3f}; exact {exact_time * 1e3:.2f} ms (ratio {hnsw_time / exact_time:.2f}) |")
        print(rows[-1], flush=True)

        # a crash: a child with the index loaded commits crash-rows more rows and is killed before saving the side file
        np.save(work / "crash.npy", vectors[: args.crash_rows])
        code = _CRASH.format(bench=str(Path(__file__).resolve().parent), vectors=str(work / "crash.npy"), path=str(path))
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "committed"
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        crashed, opened = _first_search(path, queries[0])
        rows.append(f"| {label} | HNSW after a SIGKILL that lost {args.crash_rows:,} committed rows' index updates: open + first search | "
                    f"{crashed:.1f} | {opened['source']}: {opened['added']:,} rows added, {opened['removed']} removed |")
        print(rows[-1], flush=True)

        if args.vss_src:
            np.save(work / "vectors.npy", vectors)
            np.save(work / "queries.npy", queries)
            code = _VSS.format(src=args.vss_src, bench=str(Path(__file__).resolve().parent), vectors=str(work / "vectors.npy"),
                               queries=str(work / "queries.npy"), path=str(work / "vss.duckdb"))
            env = {**os.environ, "PYTHONPATH": args.vss_src}
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
            import json

            vss = json.loads(out.strip().splitlines()[-1])
            rows.append(f"| {label} | earlier vss HNSW in the file: open (index build) | {vss['build']:.1f} | reopen + first search {vss['reopen']:.1f} s |")
            rows.append(f"| {label} | earlier vss HNSW query (top-10, ef_search=256) | {vss['query'] * 1e3:.2f} ms | "
                        f"recall@10 {_recall(vss['ids'], exact_ids):.3f} |")
            print("\n".join(rows[-2:]), flush=True)
    print("\n| vectors | step | seconds | notes |\n| --- | --- | ---: | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
