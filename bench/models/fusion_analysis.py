"""Hybrid fusion on BEIR SciFact from cached score matrices: members, fixed fusions, ``auto``, oracle, abstention.

    python bench/models/score_cache.py --out /tmp/scifact_scores.npz      # once (MiniLM needs torch)
    python bench/models/fusion_analysis.py /tmp/scifact_scores.npz --json bench/models/results/fusion.json
    python bench/models/render_docs.py                                     # the docs' tables from the JSON

Every fusion here calls :mod:`ragloom.retrievers.fusion` on the same 100
candidates per member that the ``hybrid`` retriever sees (one chunk per
document); its nDCG@10 matches ``ragloom eval``'s up to tie order. Choices are
made on ``train``; ``test`` is reported. The abstention sweep uses the SciFact
queries and two sets of out-of-domain questions: ``ood`` (the fitting set,
bench/data/out_of_domain_questions.txt) and ``ood_heldout`` (the report set,
out_of_domain_questions_heldout.txt, never used to choose anything).
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.evaluation import _read_jsonl, load_qrels, ndcg_at_k, randomization_test
from ragloom.keyword import BM25Index
from ragloom.retrievers import fusion
from ragloom.retrievers.hybrid import RELEVANCE_THRESHOLD, TAIL_RATIO

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = next((p / "shared" / "data" / "scifact" for p in Path(__file__).resolve().parents if (p / "shared" / "data" / "scifact").is_dir()), Path("shared/data/scifact"))
CANDIDATES = 100
THRESHOLDS = (0.2, 0.225, 0.25, 0.275, 0.3, 0.325, 0.35, 0.375, 0.4, 0.45)
Member = tuple[np.ndarray, np.ndarray]
LEXICAL = {"hash"}
"""Dense members that are lexical embedders (``HashEmbedder.lexical``): ``auto`` gives them no weight."""


def read_questions(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")]


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


def top(row: np.ndarray, keyword: bool, candidates: int = CANDIDATES) -> Member:
    """The member's candidates (index, score), best first, as the store returns them."""
    pool = np.flatnonzero(row > 0) if keyword else np.arange(len(row))
    if len(pool) == 0:
        return pool, np.zeros(0)
    k = min(candidates, len(pool))
    best = pool[np.argpartition(-row[pool], k - 1)[:k]]
    best = best[np.lexsort((best, -row[best]))]
    return best, row[best].astype(np.float64)


def auto(
    kw: Member,
    vec: Member,
    ceiling: float,
    prior: tuple[float, float] = (0.5, 0.5),
    sharpness: float = 1.0,
    candidates: int = CANDIDATES,
    lexical: bool = False,
) -> tuple[list[int], list[float]]:
    """``auto`` as the retriever runs it (``lexical``: the dense member is a lexical embedder, e.g. ``hash``)."""
    (ki, ks), (vi, vs) = kw, vec
    a, b = fusion.keyword_values(ks, ceiling), fusion.vector_values(vs)
    fa, fb = fusion.floor_value(a, complete=len(a) < candidates), fusion.floor_value(b, complete=False)
    weights = fusion.query_weights(a, fa, b, fb, prior=prior, sharpness=sharpness, vector_informative=not lexical)
    vector_ids = vi.tolist()
    seen = set(vector_ids)
    ids = vector_ids + [i for i in ki.tolist() if i not in seen]
    position = {i: p for p, i in enumerate(ids)}
    kpos = np.fromiter((position[i] for i in ki.tolist()), dtype=np.intp, count=len(ki))
    fused = fusion.fuse_union(len(ids), kpos, a, fa, b, fb, weights)
    order = fusion.best_first(fused, kpos, weights)
    return [ids[p] for p in order.tolist()], fused[order].tolist()


def features(kw: Member, vec: Member, ceiling: float, candidates: int = CANDIDATES) -> dict[str, float]:
    """What ``auto`` can see of a query: the vector weight, both separations, the best cosine, the members' top-10 overlap."""
    (ki, ks), (vi, vs) = kw, vec
    a, b = fusion.keyword_values(ks, ceiling), fusion.vector_values(vs)
    fa, fb = fusion.floor_value(a, complete=len(a) < candidates), fusion.floor_value(b, complete=False)
    weights = fusion.query_weights(a, fa, b, fb, prior=(0.5, 0.5), sharpness=1.0)
    return {
        "vector_weight": weights[1],
        "keyword_separation": fusion.separation(a, fa),
        "vector_separation": fusion.separation(b, fb),
        "best_cosine": float(b[0]) if len(b) else 0.0,
        "top10_overlap": len(set(ki[:10].tolist()) & set(vi[:10].tolist())) / 10,
    }


def minmax_convex(kw: Member, vec: Member) -> list[int]:
    fused: dict[int, float] = {}
    for ids, scores in (kw, vec):
        if len(scores):
            span = scores.max() - scores.min()
            norm = (scores - scores.min()) / span if span > 0 else np.ones_like(scores)
            for i, v in zip(ids.tolist(), norm, strict=True):
                fused[i] = fused.get(i, 0.0) + 0.5 * v
    return sorted(fused, key=lambda i: -fused[i])


def rrf(kw: Member, vec: Member, k: int = 60) -> list[int]:
    fused: dict[int, float] = {}
    for ids, _ in (kw, vec):
        for rank, i in enumerate(ids.tolist(), start=1):
            fused[i] = fused.get(i, 0.0) + 0.5 / (k + rank)
    return sorted(fused, key=lambda i: -fused[i])


class Analysis:
    """The cached matrices, the judgements and the per-query helpers."""

    def __init__(self, scores: Path, data: Path):
        cache = np.load(scores)
        self.arrays = {name: cache[name] for name in cache.files}
        self.qids: list[str] = self.arrays["qids"].tolist()
        self.splits: list[str] = self.arrays["qsplit"].tolist()
        self.doc_ids: list[str] = self.arrays["doc_ids"].tolist()
        texts = {str(q["_id"]): str(q["text"]) for _, q in _read_jsonl(data / "queries.jsonl")}
        ood = read_questions(HERE.parent / "data" / "out_of_domain_questions.txt")
        heldout = read_questions(HERE.parent / "data" / "out_of_domain_questions_heldout.txt")
        all_texts = [*texts.values(), *ood, *heldout][: len(self.qids)]
        self.ceil = ceilings(data, all_texts)
        self.qrels = {**load_qrels(data / "qrels" / "train.tsv"), **load_qrels(data / "qrels" / "test.tsv")}
        self.dense = [name for name in ("hash", "minilm") if name in self.arrays]

    def only(self, dense: list[str]) -> None:
        """Restrict the analysis to these dense members."""
        self.dense = [name for name in self.dense if name in dense]

    def rows(self, split: str) -> list[int]:
        return [q for q, s in enumerate(self.splits) if s == split]

    def ndcg(self, order: list[int], q: int) -> float:
        return ndcg_at_k([self.doc_ids[i] for i in order[:10]], self.qrels[self.qids[q]], 10)

    def members(self, keyword: str, dense: str, q: int, candidates: int = CANDIDATES) -> tuple[Member, Member]:
        return top(self.arrays[keyword][q], True, candidates), top(self.arrays[dense][q], False, candidates)


def quality(an: Analysis, splits: tuple[str, ...] = ("train", "test")) -> list[dict[str, Any]]:
    """nDCG@10 per (keyword, dense, split): members, fixed fusions, auto at several sharpness, oracle, p-values."""
    out = []
    for keyword in ("bm25", "bm25_title"):
        for dense in an.dense:
            for split in splits:
                lexical = dense in LEXICAL
                names = ("bm25", "dense", "convex", "rrf", "auto_s0", "auto_s0.5", "auto", "auto_s2", "auto_c50", "auto_fused")
                per: dict[str, list[float]] = {k: [] for k in names}
                seen: dict[str, list[float]] = {}
                for q in an.rows(split):
                    kw, vec = an.members(keyword, dense, q)
                    for name, value in features(kw, vec, an.ceil[keyword][q]).items():
                        seen.setdefault(name, []).append(value)
                    per["auto_fused"].append(an.ndcg(auto(kw, vec, an.ceil[keyword][q])[0], q))
                    per["bm25"].append(an.ndcg(kw[0].tolist(), q))
                    per["dense"].append(an.ndcg(vec[0].tolist(), q))
                    per["convex"].append(an.ndcg(minmax_convex(kw, vec), q))
                    per["rrf"].append(an.ndcg(rrf(kw, vec), q))
                    for s, name in ((0.0, "auto_s0"), (0.5, "auto_s0.5"), (1.0, "auto"), (2.0, "auto_s2")):
                        per[name].append(an.ndcg(auto(kw, vec, an.ceil[keyword][q], sharpness=s, lexical=lexical)[0], q))
                    per["auto_c50"].append(an.ndcg(auto(*an.members(keyword, dense, q, 50), an.ceil[keyword][q], candidates=50, lexical=lexical)[0], q))
                means = {k: float(np.mean(v)) for k, v in per.items()}
                best = "bm25" if means["bm25"] >= means["dense"] else "dense"
                out.append({
                    "keyword": keyword,
                    "dense": dense,
                    "split": split,
                    "queries": len(per["bm25"]),
                    "ndcg@10": means,
                    "oracle": float(np.maximum(per["bm25"], per["dense"]).mean()),
                    "best_member": best,
                    "auto_minus_best": means["auto"] - means[best],
                    "p_auto_vs_best": randomization_test(per["auto"], per[best]),
                    "p_auto_vs_bm25": randomization_test(per["auto"], per["bm25"]),
                    "p_auto_vs_dense": randomization_test(per["auto"], per["dense"]),
                    "lexical": lexical,
                    "fused_vs_bm25": _fused_vs_bm25(per, seen),
                })
                print(json.dumps(out[-1]), flush=True)
    return out


def _fused_vs_bm25(per: dict[str, list[float]], seen: dict[str, list[float]]) -> dict[str, Any]:
    """``auto`` fusing both members (no lexical rule) against BM25 per query: wins, losses, p, and how each query-time signal correlates with the gain."""
    gain = np.asarray(per["auto_fused"]) - np.asarray(per["bm25"])
    return {
        "gain": float(gain.mean()),
        "p": randomization_test(per["auto_fused"], per["bm25"]),
        "wins": int((gain > 1e-12).sum()),
        "losses": int((gain < -1e-12).sum()),
        "correlation_with_gain": {name: float(np.corrcoef(values, gain)[0, 1]) if gain.std() > 0 and np.std(values) > 0 else 0.0 for name, values in seen.items()},
    }


def abstention(an: Analysis, splits: tuple[str, ...] = ("train", "test")) -> list[dict[str, Any]]:
    """Threshold sweep: OOD share with no result, SciFact nDCG@10 change; three ways of using the threshold.

    ``hybrid`` is what the retriever does (:func:`ragloom.retrievers.hybrid.abstain`):
    nothing when the query's relevance (best cosine) is below the threshold, else
    drop results whose fused score is below TAIL_RATIO x threshold. ``fused_cut``
    is the previous rule (drop every result whose fused score is below the
    threshold); ``similarity`` cuts the cosine ranking itself.
    """
    out = []
    groups = {name: an.rows(name) for name in (*splits, "ood", "ood_heldout")}
    for dense in an.dense:
        fused, vec, relevance = {}, {}, {}
        for rows in groups.values():
            for q in rows:
                kw, v = an.members("bm25", dense, q)
                fused[q] = auto(kw, v, an.ceil["bm25"][q], lexical=dense in LEXICAL)
                vec[q] = (v[0].tolist(), v[1].tolist())
                relevance[q] = fusion.query_relevance(v[1], np.asarray(fused[q][1]))

        rules = {"hybrid": partial(_shipped, fused, relevance), "fused_cut": partial(_cut, fused), "similarity": partial(_cut, vec)}
        baseline = {"hybrid": fused, "fused_cut": fused, "similarity": vec}
        for t in THRESHOLDS:
            row: dict[str, Any] = {"dense": dense, "threshold": t}
            for name, rule in rules.items():
                for split in splits:
                    base = np.mean([an.ndcg(baseline[name][q][0], q) for q in groups[split]])
                    kept = np.mean([an.ndcg(rule(q, t), q) for q in groups[split]])
                    row[f"{name}_{split}_ndcg_change"] = float(kept - base)
                for split in ("ood", "ood_heldout"):
                    row[f"{name}_{split}_empty"] = float(np.mean([not rule(q, t) for q in groups[split]]))
            out.append(row)
            print(json.dumps(row), flush=True)
    return out


def _shipped(fused: dict[int, tuple[list[int], list[float]]], relevance: dict[int, float], q: int, t: float) -> list[int]:
    """The hybrid retriever's abstention: nothing below the relevance threshold, else the fused tail cut."""
    if relevance[q] < t:
        return []
    return [i for i, s in zip(*fused[q], strict=True) if s >= TAIL_RATIO * t]


def _cut(ranked: dict[int, tuple[list[int], list[float]]], q: int, t: float) -> list[int]:
    """Every result scoring below the threshold dropped."""
    return [i for i, s in zip(*ranked[q], strict=True) if s >= t]


def choose_threshold(rows: list[dict[str, Any]], dense: str) -> float | None:
    """The smallest threshold at which >= 90 % of the fitting OOD set is empty and train nDCG@10 drops <= 0.01 (train + fit set only)."""
    for row in sorted((r for r in rows if r["dense"] == dense), key=lambda r: r["threshold"]):
        if row["hybrid_ood_empty"] >= 0.9 and row.get("hybrid_train_ndcg_change", -1.0) >= -0.01:
            return float(row["threshold"])
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scores", type=Path)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--splits", nargs="+", default=["train", "test"], help="SciFact splits to score")
    parser.add_argument("--dense", action="append", help="only these dense members (repeatable)")
    parser.add_argument("--merge", type=Path, help="an earlier --json output whose rows for other dense members are kept")
    args = parser.parse_args()
    an = Analysis(args.scores, args.data)
    if args.dense:
        an.only(args.dense)
    result = {
        "dataset": "BEIR SciFact (one chunk per abstract)",
        "candidates": CANDIDATES,
        "relevance_threshold": RELEVANCE_THRESHOLD,
        "tail_ratio": TAIL_RATIO,
        "ood_questions": len(an.rows("ood")),
        "ood_heldout_questions": len(an.rows("ood_heldout")),
        "quality": quality(an, tuple(args.splits)),
        "abstention": abstention(an, tuple(args.splits)),
    }
    result["chosen_threshold"] = {dense: choose_threshold(result["abstention"], dense) for dense in an.dense}
    if args.merge:
        earlier = json.loads(args.merge.read_text(encoding="utf-8"))
        for key in ("quality", "abstention"):
            result[key] = [row for row in earlier[key] if row["dense"] not in an.dense] + result[key]
        result["chosen_threshold"] = {**earlier.get("chosen_threshold", {}), **result["chosen_threshold"]}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
