"""Benchmarks of the ragloom-qdrant store in qdrant-client's local mode; prints Markdown tables.

    python bench/qdrant/bench_qdrant.py                       # 10k and 100k chunks, SciFact
    python bench/qdrant/bench_qdrant.py --sizes 10000 --queries 10
    python bench/qdrant/bench_qdrant.py --json bench/results/qdrant.json

Run it under the shared benchmark lock (``flock /work/wt/bench.lock ...``). With
``--stores qdrant-memory qdrant-folder --label old`` and ``PYTHONPATH`` pointing at
an older copy of ``ragloom_qdrant`` it measures that revision the same way.

1. ingest (a write session: ``stage.write`` + ``commit`` per source of 1,000
   chunks, precomputed 384-d vectors of SciFact text windows) and top-10 query
   latency p50/p95 (unfiltered, and with a metadata filter) at each size, for
   the qdrant store in local mode (in memory and in a folder) beside the
   memory and DuckDB stores;
2. the store-independent keyword index on SciFact (5,183 abstracts, recursive
   chunks, 100 abstracts per source): build time from ``iter_chunks`` of a qdrant store (a local folder), time to load the
   saved index, the memory store's native index build over the same chunks for
   reference, and that both rank identically (nDCG@10 of BM25 on the test qrels).

Numbers depend on the machine: compare the ratios measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.chunkers.recursive import RecursiveChunker, RecursiveConfig
from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.evaluation import load_qrels, ndcg_at_k
from ragloom.filters import parse_filter
from ragloom.keyword import BM25Index
from ragloom.stores.keyword_index import StoreKeywordIndex, keyword_index_for
from ragloom.stores.memory import MemoryStore
from ragloom.types import Chunk, Document
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig
from ragloom_qdrant import QdrantStore, QdrantStoreConfig

#: SciFact beside the clone (``/work/main`` → ``/work/shared``) or beside a worktree (``/work/wt/<name>``)
DATA = next((p / "shared" / "data" / "scifact" for p in Path(__file__).resolve().parents[3:5] if (p / "shared" / "data" / "scifact").exists()), Path("scifact"))
NS = "bench"
DIM = 384
PER_SOURCE = 1000


def _corpus() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / "corpus.jsonl").open(encoding="utf-8")]


def _windows(corpus: list[dict[str, Any]], size: int) -> tuple[list[str], np.ndarray]:
    text = " ".join(doc["text"] for doc in corpus)
    stride = max(1, (len(text) - 400) // size)
    texts = [text[i * stride : i * stride + 400] for i in range(size)]
    embedder = HashEmbedder(HashEmbedderConfig(dim=DIM))
    vectors = np.concatenate([embedder.embed_documents(texts[i : i + 20_000]) for i in range(0, size, 20_000)])
    return texts, vectors


def _chunks(texts: list[str]) -> list[Chunk]:
    out = []
    for i, text in enumerate(texts):
        source = f"/bench/s{i // PER_SOURCE}.txt"
        out.append(
            Chunk(id=f"{source}:{i}", document_id=source, index=i % PER_SOURCE, text=text, start=0, end=len(text), source=source,
                  metadata={"lang": "en" if i % 4 else "de", "n": i}, content_hash="h", metadata_hash="m")
        )  # fmt: skip
    return out


def _ingest(store: Any, chunks: list[Chunk], vectors: np.ndarray) -> float:
    start = time.perf_counter()
    with store.session(NS) as session:
        for first in range(0, len(chunks), PER_SOURCE):
            part = chunks[first : first + PER_SOURCE]
            stage = session.stage(part[0].source)
            stage.write(part, vectors[first : first + PER_SOURCE])
            stage.commit()
    return time.perf_counter() - start


def _query_ms(store: Any, queries: np.ndarray, filter: Any = None) -> tuple[float, float]:
    """p50 and p95 of top-10 search latency, ms."""
    times = []
    store.search(NS, queries[0], top_k=10, filter=filter)  # warm caches
    for query in queries:
        start = time.perf_counter()
        store.search(NS, query, top_k=10, filter=filter)
        times.append((time.perf_counter() - start) * 1000)
    return float(np.percentile(times, 50)), float(np.percentile(times, 95))


STORES = ["memory", "duckdb", "qdrant-memory", "qdrant-folder"]


def _open(kind: str, tmp: Path) -> tuple[str, Any]:
    if kind == "memory":
        return "memory", MemoryStore()
    if kind == "duckdb":
        return "duckdb (file, exact)", DuckDBStore(DuckDBStoreConfig(index="exact"), path=tmp / "kb.duckdb")
    if kind == "qdrant-memory":
        return "qdrant local (in memory)", QdrantStore(QdrantStoreConfig(path=":memory:"))
    return "qdrant local (folder)", QdrantStore(path=tmp / "qdrant")


def bench_stores(sizes: list[int], n_queries: int, kinds: list[str], label: str) -> list[dict[str, Any]]:
    corpus = _corpus()
    rows: list[dict[str, Any]] = []
    print(f"{PER_SOURCE:,} chunks per source, {n_queries} queries\n")
    print("| store | chunks | ingest s | chunks/s | top-10 p50 / p95 ms | filtered top-10 p50 / p95 ms | load |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for size in sizes:
        texts, vectors = _windows(corpus, size)
        chunks = _chunks(texts)
        queries = vectors[np.random.default_rng(7).choice(size, n_queries, replace=False)]
        where = parse_filter({"lang": "de"})
        for kind in kinds:
            with tempfile.TemporaryDirectory() as tmp:
                name, store = _open(kind, Path(tmp))
                load = os.getloadavg()[0]
                seconds = _ingest(store, chunks, vectors)
                assert store.count(NS) == size, (name, store.count(NS))
                plain = _query_ms(store, queries)
                filtered = _query_ms(store, queries, where)
                load = max(load, os.getloadavg()[0])
                store.close()
                if label:
                    name = f"{name} [{label}]"
                row = {"store": name, "chunks": size, "ingest_s": round(seconds, 2), "chunks_per_s": round(size / seconds, 1),
                       "p50_ms": round(plain[0], 2), "p95_ms": round(plain[1], 2), "filtered_p50_ms": round(filtered[0], 2),
                       "filtered_p95_ms": round(filtered[1], 2), "queries": n_queries, "load": round(load, 1)}  # fmt: skip
                rows.append(row)
                print(f"| {name} | {size:,} | {seconds:.1f} | {size / seconds:,.0f} | {plain[0]:.1f} / {plain[1]:.1f} | {filtered[0]:.1f} / {filtered[1]:.1f} | {load:.1f} |", flush=True)
    return rows


def _docs(results: list[Any]) -> list[str]:
    """Document ids in rank order, each once (a document may have several chunks)."""
    return list(dict.fromkeys(r.document_id for r in results))[:10]


def _ndcg(ranked: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    return statistics.mean(ndcg_at_k(ranked[q], qrels[q], 10) for q in ranked)


class ChunksOnly:
    """A memory store seen as a store without keyword search (``chunks`` + ``vectors`` only), with a location."""

    capabilities = frozenset({"chunks", "vectors"})

    def __init__(self, inner: MemoryStore, location: Path):
        self.inner = inner
        self.location = location

    def __getattr__(self, name: str) -> Any:
        if name in ("keyword_search", "keyword_ceiling"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def bench_keyword_index(kind: str = "qdrant") -> dict[str, Any]:
    corpus = _corpus()
    queries = {q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open(encoding="utf-8"))}
    qrels = load_qrels(DATA / "qrels" / "test.tsv")
    chunker = RecursiveChunker(RecursiveConfig(size=1000, overlap=0))
    embedder = HashEmbedder(HashEmbedderConfig(dim=DIM))
    by_source: dict[str, list[Chunk]] = {}
    for number, doc in enumerate(corpus):  # 100 abstracts per source: local mode's commits scan the collection
        document = Document(id=doc["_id"], text=f"{doc['title']}\n{doc['text']}", source=f"/scifact/part{number // 100}")
        by_source.setdefault(document.source, []).extend(chunker.chunk(document))
    chunks = [c for part in by_source.values() for c in part]
    vectors = embedder.embed_documents([c.text for c in chunks])
    with tempfile.TemporaryDirectory() as tmp:
        store: Any
        load = os.getloadavg()[0]
        if kind == "qdrant":
            store = QdrantStore(path=Path(tmp) / "qdrant")
        else:
            store = ChunksOnly(MemoryStore(), Path(tmp) / "plain")
        start = time.perf_counter()
        with store.session(NS) as session:
            position = 0
            for source, part in by_source.items():
                stage = session.stage(source)
                stage.write(part, vectors[position : position + len(part)])
                stage.commit()
                position += len(part)
        ingest = time.perf_counter() - start
        index = keyword_index_for(store, NS)
        start = time.perf_counter()
        index.refresh()
        build = time.perf_counter() - start
        start = time.perf_counter()
        native = BM25Index()
        native.add([c.id for c in chunks], [c.text for c in chunks])
        native.search("warm up", top_k=1)
        native_build = time.perf_counter() - start
        fresh = StoreKeywordIndex(store, NS)  # what a new process does: load the saved file, check the generations
        start = time.perf_counter()
        fresh.keyword_search(NS, "warm up", top_k=1)
        load_time = time.perf_counter() - start
        assert (fresh.loads, fresh.builds) == (1, 0)
        ranked = {qid: _docs(fresh.keyword_search(NS, text, top_k=30)) for qid, text in queries.items() if qid in qrels}
        memory = MemoryStore()
        with memory.session(NS) as session:
            position = 0
            for source, part in by_source.items():
                stage = session.stage(source)
                stage.write(part, vectors[position : position + len(part)])
                stage.commit()
                position += len(part)
        reference = {qid: _docs(memory.keyword_search(NS, text, top_k=30)) for qid, text in queries.items() if qid in qrels}
        store.close()
    same = sum(ranked[q] == reference[q] for q in ranked)
    print("| SciFact keyword index | value |")
    print("| --- | ---: |")
    print(f"| chunks | {len(chunks):,} |")
    print(f"| store | {kind} |")
    print(f"| ingest into the store, s | {ingest:.1f} |")
    print(f"| build from iter_chunks (enumerate + analyse + index), s | {build:.2f} |")
    print(f"| load of the saved index (new process), s | {load_time:.2f} |")
    print(f"| BM25Index over the same texts in memory (reference), s | {native_build:.2f} |")
    print(f"| nDCG@10 {kind} store + keyword index / memory store native | {_ndcg(ranked, qrels):.4f} / {_ndcg(reference, qrels):.4f} |")
    print(f"| queries ranked identically | {same} / {len(ranked)} |")
    return {"store": kind, "chunks": len(chunks), "ingest_s": round(ingest, 2), "build_s": round(build, 3), "load_s": round(load_time, 3),
            "native_build_s": round(native_build, 3), "ndcg10": round(_ndcg(ranked, qrels), 4), "ndcg10_native": round(_ndcg(reference, qrels), 4),
            "identical": same, "queries": len(ranked), "load": round(max(load, os.getloadavg()[0]), 1)}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--stores", nargs="+", choices=STORES, default=STORES)
    parser.add_argument("--label", default="", help="appended to the store names (e.g. the revision measured)")
    parser.add_argument("--skip-keyword", action="store_true")
    parser.add_argument("--skip-stores", action="store_true")
    parser.add_argument("--keyword-store", choices=["qdrant", "memory"], default="qdrant", help="the store the keyword index is built from")
    parser.add_argument("--per-source", type=int, default=PER_SOURCE, help="chunks per source (one stage and commit each)")
    parser.add_argument("--json", type=Path, help="write the figures (and the machine's load) to this file")
    args = parser.parse_args(argv)
    if not DATA.exists():
        sys.exit(f"SciFact is expected in {DATA}")
    report: dict[str, Any] = {"benchmark": "qdrant", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cores": os.cpu_count(),
                              "load_before": [round(x, 1) for x in os.getloadavg()], "per_source": args.per_source}  # fmt: skip
    if not args.skip_keyword:
        report["keyword_index"] = bench_keyword_index(args.keyword_store)
        print(flush=True)
    if not args.skip_stores:
        globals()["PER_SOURCE"] = args.per_source
        report["stores"] = bench_stores(args.sizes, args.queries, args.stores, args.label)
    report["load_after"] = [round(x, 1) for x in os.getloadavg()]
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
