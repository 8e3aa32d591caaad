"""Two revisions of ragloom side by side: chunking, BM25, DuckDB ingest and search, in one run.

Used to check that a refactoring keeps every figure (issue #12: "within 5% in
the same run before/after"). Each revision gets a git worktree and a venv of
its own (``core`` + ``plugins/duckdb``); the measurements alternate between the
two (A B A B …) so a busy machine slows both alike, and the best of the rounds
counts. Only public API that both revisions have is used (``Pipeline.builder``,
``ingest_documents``, ``query``, a chunker's ``chunk``).

Run: ``python bench/revisions/run.py --base 1cf2ac2 --head HEAD [--rounds 5]``;
JSON goes to ``bench/results/revisions.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
RESULTS = REPO / "bench" / "results" / "revisions.json"


# --------------------------------------------------------------------------- the worker (runs inside a revision's venv)


def work(scifact: Path, workdir: Path) -> dict[str, float]:
    """Seconds per task for this interpreter's ragloom (smaller is better)."""
    from ragloom import Document, Pipeline

    records = [json.loads(line) for line in (scifact / "corpus.jsonl").open(encoding="utf-8")]
    documents = [Document.create(f"{r['title']}\n\n{r['text']}", "scifact", part=r["_id"]) for r in records]
    queries = [json.loads(line)["text"] for line in (scifact / "queries.jsonl").open(encoding="utf-8")][:300]
    timings: dict[str, float] = {}

    chunker = Pipeline.builder().chunker("recursive", size=1000, overlap=200).build().chunker
    started = time.perf_counter()
    for _ in range(3):
        for document in documents:
            chunker.chunk(document)
    timings["chunking (recursive .chunk, 3 passes)"] = time.perf_counter() - started

    memory = Pipeline.builder().chunker("recursive", size=1000, overlap=200).embedder("hash").retriever("bm25", top_k=10).build()
    started = time.perf_counter()
    memory.ingest_documents(documents)
    timings["memory ingest (hash embedder, BM25 index)"] = time.perf_counter() - started
    memory.query(queries[0])
    started = time.perf_counter()
    for query in queries:
        memory.query(query)
    timings["memory BM25 query x300"] = time.perf_counter() - started

    path = workdir / f"store-{os.getpid()}-{time.monotonic_ns()}.duckdb"
    duck = Pipeline.builder().chunker("recursive", size=1000, overlap=200).embedder("hash").store("duckdb", path=str(path)).retriever("bm25", top_k=10).build()
    started = time.perf_counter()
    duck.ingest_documents(documents)
    timings["DuckDB ingest (hash embedder)"] = time.perf_counter() - started
    duck.query(queries[0])
    started = time.perf_counter()
    for query in queries:
        duck.query(query)
    timings["DuckDB BM25 query x300"] = time.perf_counter() - started
    duck.close()
    dense = Pipeline.builder().embedder("hash").store("duckdb", path=str(path)).retriever("similarity", top_k=10).build()
    dense.query(queries[0])
    started = time.perf_counter()
    for query in queries:
        dense.query(query)
    timings["DuckDB exact vector query x300"] = time.perf_counter() - started
    dense.close()
    for leftover in workdir.glob(f"{path.name}*"):
        leftover.unlink()
    return timings


# --------------------------------------------------------------------------- the driver


def prepare(revision: str, root: Path) -> Path:
    """A worktree of ``revision`` with its own venv; returns the venv's python."""
    sha = subprocess.run(["git", "rev-parse", "--short", revision], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()
    tree = root / sha
    if not tree.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), sha], cwd=REPO, check=True, capture_output=True)
    python = tree / ".venv" / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(tree / ".venv")], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", str(tree / "core"), "-e", str(tree / "plugins" / "duckdb")], check=True)
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--base", default="1cf2ac2")
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trees", default=os.path.join(tempfile.gettempdir(), "ragloom-revisions"))
    parser.add_argument("--worker", nargs=2, metavar=("SCIFACT", "WORKDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(work(Path(args.worker[0]), Path(args.worker[1]))))
        return
    root = Path(args.trees)
    root.mkdir(parents=True, exist_ok=True)
    pythons = {name: prepare(rev, root) for name, rev in (("base", args.base), ("head", args.head))}
    best: dict[str, dict[str, float]] = {"base": {}, "head": {}}
    with tempfile.TemporaryDirectory() as workdir:
        for round_ in range(args.rounds):
            order = ("base", "head") if round_ % 2 == 0 else ("head", "base")
            for name in order:
                out = subprocess.run([str(pythons[name]), __file__, "--worker", str(SCIFACT), workdir], check=True, capture_output=True, text=True)
                for task, seconds in json.loads(out.stdout.strip().splitlines()[-1]).items():
                    best[name][task] = min(seconds, best[name].get(task, float("inf")))
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    rows = [{"task": task, "base_s": best["base"][task], "head_s": best["head"][task], "head_over_base": best["head"][task] / best["base"][task]} for task in best["base"]]
    load = os.getloadavg()
    report = {"base": args.base, "head": args.head, "rounds": args.rounds, "loadavg": load, "date": time.strftime("%Y-%m-%d %H:%M"), "rows": rows}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"{'task':48} {'base s':>9} {'head s':>9} {'head/base':>9}")
    for row in rows:
        print(f"{row['task']:48} {row['base_s']:9.3f} {row['head_s']:9.3f} {row['head_over_base']:9.3f}")
    print(f"best of {args.rounds} alternating rounds; load average {load[0]:.1f}")


if __name__ == "__main__":
    main()
