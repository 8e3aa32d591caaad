"""Hybrid fusion on BEIR SciFact from cached score matrices: members, fixed fusions, ``auto``, oracle, abstention.

    python bench/models/score_cache.py --out /tmp/scifact_scores.npz      # once (MiniLM needs torch)
    python bench/models/fusion_analysis.py /tmp/scifact_scores.npz

Every fusion here calls :mod:`ragloom.retrievers.fusion` on the same 100
candidates per member that the ``hybrid`` retriever sees (one chunk per
document); its nDCG@10 matches ``ragloom eval``'s up to tie order (BM25 +
hash, test: 0.6862 both ways; train: 0.6991 here, 0.6983 through eval). Choices are made on ``train``; ``test``
is reported. The abstention table sweeps ``threshold`` over the SciFact test
queries and the out-of-domain questions of bench/data.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ragloom.evaluation import _read_jsonl, load_qrels, ndcg_at_k, randomization_test
from ragloom.keyword import BM25Index
from ragloom.retrievers import fusion

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[2].parent / "shared" / "data" / "scifact"
CANDIDATES = 100


def ceilings(data: Path, texts: list[str]) -> dict[str, np.ndarray]:
    """The BM25 ceiling of every query text, for the full-text and the titles-only index."""
    docs = [item for _, item in _read_jsonl(data / "corpus.jsonl")]
    ids = [str(d["_id"]) for d in docs]
    full = [f"{d['title']}\n{d['text']}" if d.get("title") else str(d["text"]) for d in docs]
    out = {}
    for name, corpus in (("bm25", full), ("bm25_title", [str(d.get("title") or "") for d in docs])):
        index = BM25Index()
        index.add(ids, corpus)
        out[name] = np.array([index.ceiling(t) for t in texts])
    return out


def top(row: np.ndarray, keyword: bool) -> tuple[np.ndarray, np.ndarray]:
    """The member's candidates (index, score), best first, as the store returns them."""
    pool = np.flatnonzero(row > 0) if keyword else np.arange(len(row))
    if len(pool) == 0:
        return pool, np.zeros(0)
    k = min(CANDIDATES, len(pool))
    best = pool[np.argpartition(-row[pool], k - 1)[:k]]
    best = best[np.lexsort((best, -row[best]))]
    return best, row[best].astype(np.float64)


def auto(kw: tuple, vec: tuple, ceiling: float, prior: tuple[float, float], sharpness: float) -> tuple[list[int], list[float]]:
    (ki, ks), (vi, vs) = kw, vec
    a, b = fusion.keyword_values(ks, ceiling), fusion.vector_values(vs)
    fa, fb = fusion.floor_value(a, complete=len(a) < CANDIDATES), fusion.floor_value(b, complete=False)
    weights = fusion.query_weights(a, fa, b, fb, prior=prior, sharpness=sharpness)
    fused = fusion.fuse_values(ki.tolist(), a, fa, vi.tolist(), b, fb, weights)
    order = sorted(fused, key=lambda i: -fused[i])
    return order, [fused[i] for i in order]


def minmax_convex(kw: tuple, vec: tuple) -> list[int]:
    fused: dict[int, float] = {}
    for ids, scores in (kw, vec):
        if len(scores):
            span = scores.max() - scores.min()
            norm = (scores - scores.min()) / span if span > 0 else np.ones_like(scores)
            for i, v in zip(ids.tolist(), norm, strict=True):
                fused[i] = fused.get(i, 0.0) + 0.5 * v
    return sorted(fused, key=lambda i: -fused[i])


def rrf(kw: tuple, vec: tuple, k: int = 60) -> list[int]:
    fused: dict[int, float] = {}
    for ids, _ in (kw, vec):
        for rank, i in enumerate(ids.tolist(), start=1):
            fused[i] = fused.get(i, 0.0) + 0.5 / (k + rank)
    return sorted(fused, key=lambda i: -fused[i])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scores", type=Path)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    cache = np.load(args.scores)
    arrays = {name: cache[name] for name in cache.files}
    qids, splits, doc_ids = arrays["qids"].tolist(), arrays["qsplit"].tolist(), arrays["doc_ids"].tolist()
    texts = {str(q["_id"]): str(q["text"]) for _, q in _read_jsonl(args.data / "queries.jsonl")}
    ood = [line.strip() for line in (HERE.parent / "data" / "out_of_domain_questions.txt").read_text().splitlines() if line.strip() and not line.startswith("#")]
    ceil = ceilings(args.data, [*texts.values(), *ood])
    qrels = {**load_qrels(args.data / "qrels" / "train.tsv"), **load_qrels(args.data / "qrels" / "test.tsv")}
    dense_members = [name for name in ("hash", "minilm") if name in arrays]

    def ndcg(order: list[int], qid: str) -> float:
        return ndcg_at_k([doc_ids[i] for i in order[:10]], qrels[qid], 10)

    print("## nDCG@10 (train: choose; test: report)\n")
    print("| keyword | dense | split | BM25 | dense | convex 0.5/0.5 | RRF | auto s=0 | auto s=0.5 | **auto s=1** | auto s=2 | oracle | auto − best member (p) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for keyword in ("bm25", "bm25_title"):
        for dense in dense_members:
            for split in ("train", "test"):
                rows = [q for q, s in enumerate(splits) if s == split]
                per: dict[str, list[float]] = {name: [] for name in ("kw", "vec", "cvx", "rrf", "s0", "s0.5", "s1", "s2")}
                for q in rows:
                    kw, vec, qid = top(arrays[keyword][q], True), top(arrays[dense][q], False), qids[q]
                    per["kw"].append(ndcg(kw[0].tolist(), qid))
                    per["vec"].append(ndcg(vec[0].tolist(), qid))
                    per["cvx"].append(ndcg(minmax_convex(kw, vec), qid))
                    per["rrf"].append(ndcg(rrf(kw, vec), qid))
                    for s in (0, 0.5, 1, 2):
                        per[f"s{s:g}"].append(ndcg(auto(kw, vec, ceil[keyword][q], (0.5, 0.5), s)[0], qid))
                oracle = np.maximum(per["kw"], per["vec"]).mean()
                best = "kw" if np.mean(per["kw"]) >= np.mean(per["vec"]) else "vec"
                gain = np.mean(per["s1"]) - np.mean(per[best])
                p = randomization_test(per["s1"], per[best])
                cells = " | ".join(f"{np.mean(per[k]):.4f}" for k in ("kw", "vec", "cvx", "rrf", "s0", "s0.5", "s1", "s2"))
                print(f"| {keyword} | {dense} | {split} | {cells} | {oracle:.4f} | {gain:+.4f} (p = {p:.3f}) |", flush=True)

    print("\n## Abstention: share of out-of-domain questions with no result, and SciFact test nDCG@10 change\n")
    print("| dense | threshold | hybrid: OOD empty | hybrid: nDCG@10 change | similarity: OOD empty | similarity: nDCG@10 change |")
    print("|---|---:|---:|---:|---:|---:|")
    test_rows = [q for q, s in enumerate(splits) if s == "test"]
    ood_rows = [q for q, s in enumerate(splits) if s == "ood"]
    for dense in dense_members:
        fused = {q: auto(top(arrays["bm25"][q], True), top(arrays[dense][q], False), ceil["bm25"][q], (0.5, 0.5), 1.0) for q in test_rows + ood_rows}
        vec = {q: top(arrays[dense][q], False) for q in test_rows + ood_rows}
        base_h = np.mean([ndcg(fused[q][0], qids[q]) for q in test_rows])
        base_s = np.mean([ndcg(vec[q][0].tolist(), qids[q]) for q in test_rows])
        for t in (0.2, 0.25, 0.3, 0.35, 0.4):
            h = np.mean([ndcg([i for i, v in zip(*fused[q], strict=True) if v >= t], qids[q]) for q in test_rows])
            s = np.mean([ndcg([i for i, v in zip(vec[q][0].tolist(), vec[q][1], strict=True) if v >= t], qids[q]) for q in test_rows])
            empty_h = np.mean([not fused[q][1] or fused[q][1][0] < t for q in ood_rows])
            empty_s = np.mean([vec[q][1][0] < t for q in ood_rows])
            print(f"| {dense} | {t:.2f} | {empty_h:.0%} | {h - base_h:+.4f} | {empty_s:.0%} | {s - base_s:+.4f} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
