"""The fusion's own cost per query, today's code against an earlier tree's, in one process on the same candidates.

    git archive <commit> core/src | tar -x -C /tmp/before
    python bench/retrieval/fusion_cost.py --before /tmp/before/core/src [--store memory|duckdb] [--json out.json]

Both members' candidates are fetched once per query (``hybrid_candidates``,
``hash`` embedder, one chunk per SciFact abstract, 100 candidates); then the
two ``HybridRetriever._fuse`` implementations run on them alternately, query
by query, ``--repeat`` rounds. Reported: CPU time of the calling thread
(``time.thread_time``: what the fusion itself computes, much less sensitive
to other processes than the wall clock on a shared machine) and wall time,
mean per query of the best round, with a check that both return the same
results (ids, scores, metadata). The lexical rule (``hash`` gets no weight)
is switched off in today's retriever so that both compute the same fusion.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
import types
from pathlib import Path

from ragloom import Pipeline, Registry
from ragloom.evaluation import load_beir
from ragloom.plugins import BuildContext
from ragloom.retrievers.base import embed_query

DEFAULT_DATA = next((p / "shared" / "data" / "scifact" for p in Path(__file__).resolve().parents if (p / "shared" / "data" / "scifact").is_dir()), Path("shared/data/scifact"))


def load_before(src: Path) -> type:
    """The earlier tree's ``HybridRetriever``, with the earlier ``fusion`` module beside it (the rest is today's)."""
    spec = importlib.util.spec_from_file_location("before_fusion", src / "ragloom" / "retrievers" / "fusion.py")
    assert spec and spec.loader
    old_fusion = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old_fusion)
    module = types.ModuleType("before_hybrid")
    module.fusion = old_fusion  # type: ignore[attr-defined]
    source = (src / "ragloom" / "retrievers" / "hybrid.py").read_text(encoding="utf-8").replace("from ragloom.retrievers import fusion\n", "")
    sys.modules["before_hybrid"] = module
    exec(compile(source, "before_hybrid.py", "exec"), module.__dict__)  # noqa: S102 - the benchmark's own reference code
    return module.HybridRetriever  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="core/src of the earlier tree")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--store", choices=["memory", "duckdb"], default="memory")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    dataset = load_beir(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        store = ("duckdb", {"path": str(Path(tmp) / "bench.duckdb")}) if args.store == "duckdb" else ("memory", {})
        pipeline = Pipeline.builder(registry=Registry()).namespace("cost").chunker("recursive", size=100_000).store(store[0], **store[1]).build()
        pipeline.ingest_documents(dataset.documents())
        context = BuildContext(registry=pipeline.registry, namespace=pipeline.namespace, embedder=pipeline.embedder, store=pipeline.store)
        after = context.build("retriever", "hybrid", {})
        after._vector_informative = True  # like for like: the earlier code had no lexical rule, so both fuse the hash member
        before = load_before(args.before)(after.config, store=pipeline.store, embedder=pipeline.embedder, namespace="cost")
        queries = list(dataset.queries.values())
        found = [pipeline.store.hybrid_candidates("cost", embed_query(after.embedder, pipeline.store, q), q, top_k=100) for q in queries]
        complete = [len(f.keyword.keys) < 100 for f in found]
        same = all(
            [(r.chunk_id, r.score, r.metadata) for r in a] == [(r.chunk_id, r.score, r.metadata) for r in b]
            for a, b in (
                (before._fuse(f, limit=10, complete_keyword=c), after._fuse(f, limit=10, complete_keyword=c)) for f, c in zip(found, complete, strict=True)
            )
        )
        load = os.getloadavg()[0]
        best = {name: [float("inf"), float("inf")] for name in ("before", "after")}
        for _ in range(args.repeat):
            spent = {name: [0.0, 0.0] for name in best}
            for i, (f, c) in enumerate(zip(found, complete, strict=True)):
                pair = [("before", before), ("after", after)]
                for name, retriever in pair if i % 2 else pair[::-1]:
                    cpu, wall = time.thread_time(), time.perf_counter()
                    retriever._fuse(f, limit=10, complete_keyword=c)
                    spent[name][0] += time.thread_time() - cpu
                    spent[name][1] += time.perf_counter() - wall
            for name, (cpu, wall) in spent.items():
                best[name] = [min(best[name][0], cpu / len(queries)), min(best[name][1], wall / len(queries))]
        pipeline.close()
    print(f"SciFact test, {len(queries)} queries, store {args.store}, hash embedder; same results: {same}; load average {load:.1f}")
    for name, (cpu, wall) in best.items():
        print(f"{name}: {cpu * 1000:.3f} ms CPU, {wall * 1000:.3f} ms wall per query")
    if args.json:
        result = {"queries": len(queries), "store": args.store, "repeat": args.repeat, "same_results": same, "load_average": load,
                  "rows": [{"name": name, "cpu_ms": cpu * 1000, "wall_ms": wall * 1000} for name, (cpu, wall) in best.items()]}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
