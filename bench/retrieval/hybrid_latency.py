"""Per-query latency of bm25, similarity and hybrid (each fusion mode) on SciFact, in one run.

    python bench/retrieval/hybrid_latency.py [--store memory|duckdb] [--repeat 3] [--json bench/retrieval/results/latency.json]

One chunk per document, the default ``hash`` embedder. The retrievers are
timed in turn over the 300 test queries, ``--repeat`` rounds interleaved; the
best round's mean per query is reported, and hybrid's ratio to the slower of
its two members.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from ragloom import Pipeline, Registry
from ragloom.evaluation import load_beir
from ragloom.plugins import BuildContext

DEFAULT_DATA = next((p / "shared" / "data" / "scifact" for p in Path(__file__).resolve().parents if (p / "shared" / "data" / "scifact").is_dir()), Path("shared/data/scifact"))
RETRIEVERS = [
    ("bm25", "bm25", {}),
    ("similarity", "similarity", {}),
    ("hybrid auto (default)", "hybrid", {}),
    ("hybrid auto, 50 candidates", "hybrid", {"candidates": 50}),
    ("hybrid convex", "hybrid", {"mode": "convex"}),
    ("hybrid rrf", "hybrid", {"mode": "rrf"}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--store", choices=["memory", "duckdb"], default="memory")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    dataset = load_beir(args.data)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        store = ("duckdb", {"path": str(Path(tmp) / "bench.duckdb")}) if args.store == "duckdb" else ("memory", {})
        pipeline = Pipeline.builder(registry=Registry()).namespace("lat").chunker("recursive", size=100_000).store(store[0], **store[1]).build()
        pipeline.ingest_documents(dataset.documents())
        context = BuildContext(registry=pipeline.registry, namespace=pipeline.namespace, embedder=pipeline.embedder, store=pipeline.store)
        retrievers = [(label, context.build("retriever", name, options)) for label, name, options in RETRIEVERS]
        queries = list(dataset.queries.values())
        for _, retriever in retrievers:  # warm-up: indexes built, caches filled
            retriever.retrieve(queries[0], top_k=args.top_k)
        best = {label: float("inf") for label, _ in retrievers}
        for _ in range(args.repeat):
            for label, retriever in retrievers:
                started = time.perf_counter()
                for query in queries:
                    retriever.retrieve(query, top_k=args.top_k)
                best[label] = min(best[label], (time.perf_counter() - started) / len(queries))
        pipeline.close()
    slower = max(best["bm25"], best["similarity"])
    print(f"SciFact test, {len(queries)} queries, store {args.store}, hash embedder, top_k {args.top_k}, best of {args.repeat}")
    print("| retriever | ms / query | × slower member |")
    print("| --- | ---: | ---: |")
    for label, seconds in best.items():
        print(f"| {label} | {seconds * 1000:.2f} | {seconds / slower:.2f} |")
    if args.json:
        rows = [{"name": label, "ms": seconds * 1000, "ratio": seconds / slower} for label, seconds in best.items()]
        result = {"queries": len(queries), "store": args.store, "embedder": "hash", "top_k": args.top_k, "repeat": args.repeat,
                  "load_average": load, "cpus": os.cpu_count(), "rows": rows}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
