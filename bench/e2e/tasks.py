"""What one benchmark subprocess does: one framework, one measurement; prints one JSON object.

    python bench/e2e/tasks.py '{"task": "ingest", ...}'

Peak RSS is the subprocess's own ``ru_maxrss`` (so each framework is measured
alone); ``rss_before_mb`` is the RSS once the inputs are loaded and the
libraries imported, before the measured work starts.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one BLAS thread per framework: the 2-core box is shared

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from corpora import scifact_documents, scifact_queries  # noqa: E402
from frameworks import CountingEmbedder, LangChain, LlamaIndex, Ragloom  # noqa: E402

from ragloom.embedders.base import embed_in_batches  # noqa: E402


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def make(spec: dict[str, Any], embedder: CountingEmbedder, workdir: Path, retriever: str = "similarity") -> Any:
    name = spec["framework"]
    if name.startswith("ragloom"):
        return Ragloom(embedder, spec["store"], workdir, retriever)
    if name == "llamaindex":
        return LlamaIndex(embedder, keyword=spec.get("keyword", False))
    if name == "langchain":
        return LangChain(embedder, keyword=spec.get("keyword", False), record_manager=spec.get("record_manager", False), workdir=workdir)
    raise SystemExit(f"unknown framework {name}")


def timed(embedder: CountingEmbedder, fn: Any, *args: Any) -> dict[str, float]:
    embedder.reset()
    began, began_cpu = time.perf_counter(), time.process_time()
    fn(*args)
    seconds, cpu = time.perf_counter() - began, time.process_time() - began_cpu
    return {"seconds": seconds, "cpu_seconds": cpu, "embedded_texts": embedder.texts, "embed_seconds": embedder.seconds}


def ingest(spec: dict[str, Any]) -> dict[str, Any]:
    embedder = CountingEmbedder(spec.get("embedder", "hash"))
    with tempfile.TemporaryDirectory(prefix="e2e-") as tmp:
        workdir = Path(tmp)
        framework = make(spec, embedder, workdir)
        out: dict[str, Any] = {}
        if spec["corpus"] == "scifact":
            pairs = scifact_documents(limit=spec.get("limit"))
            out["documents"] = len(pairs)
            out["rss_before_mb"] = current_rss_mb()
            out["first"] = timed(embedder, framework.ingest_pairs, pairs)
            out["chunks"] = framework.chunks()
            if spec.get("reingest"):
                out["unchanged"] = timed(embedder, framework.ingest_pairs, pairs)
                edited = list(pairs)
                edited[len(edited) // 2] = (edited[len(edited) // 2][0], edited[len(edited) // 2][1] + " One sentence added.")
                out["one_edited"] = timed(embedder, framework.ingest_pairs, edited)
        else:
            root = Path(spec["directory"])
            out["documents"] = spec["files"]
            out["rss_before_mb"] = current_rss_mb()
            out["first"] = timed(embedder, framework.ingest_directory, root)
            out["chunks"] = framework.chunks()
            if spec.get("reingest"):
                out["unchanged"] = timed(embedder, framework.ingest_directory, root)
                victim = sorted(root.rglob("*.md"))[spec["files"] // 2]
                original = victim.read_text(encoding="utf-8")
                try:
                    victim.write_text(original + "\n\nOne paragraph added.\n", encoding="utf-8")
                    out["one_edited"] = timed(embedder, framework.ingest_directory, root)
                finally:
                    victim.write_text(original, encoding="utf-8")
        out["chunks_after"] = framework.chunks()
        if spec.get("embedder") == "minilm" and spec["framework"] == "ragloom" and spec.get("store") == "memory":
            # the embedder alone on the very chunk texts the pipeline embedded: in one call of all of them (its best case),
            # and in calls of its own batch size (256 texts) cut from the texts sorted by length, as the pipeline calls it
            texts = [chunk.text for chunk in framework.pipeline.store.chunks(framework.pipeline.namespace)]
            ways = {"one_call": ("embed_alone", lambda: embedder.embed_documents(texts)), "batched": ("embed_alone_batched", lambda: embed_in_batches(embedder, texts))}
            for kind, (key, embed) in ways.items():  # this order: one call first, as before
                if kind not in spec.get("embed_alone", ways):
                    continue
                alone = timed(embedder, embed)
                out[f"{key}_seconds"], out[f"{key}_cpu_seconds"] = alone["seconds"], alone["cpu_seconds"]
        framework.close()
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def sentence_documents(count: int, seed: int = 5) -> list[tuple[str, str]]:
    """``count`` documents of 600-1000 characters (one chunk each) built from shuffled SciFact sentences."""
    sentences = [s for _, text in scifact_documents() for s in re.split(r"(?<=\.)\s+", text) if 20 < len(s) < 400]
    rng = random.Random(seed)
    docs = []
    for i in range(count):
        parts: list[str] = []
        length = 0
        target = rng.randint(600, 950)
        while length < target:
            sentence = sentences[rng.randrange(len(sentences))]
            if length + len(sentence) + 1 > 1000:
                break
            parts.append(sentence)
            length += len(sentence) + 1
        docs.append((f"d{i}", " ".join(parts)))
    return docs


def percentiles(samples: list[float]) -> dict[str, float]:
    array = np.asarray(samples) * 1000
    return {"p50_ms": float(np.percentile(array, 50)), "p95_ms": float(np.percentile(array, 95)), "n": len(samples)}


def sample(fn: Any, queries: list[str]) -> list[float]:
    times = []
    for q in queries:
        began = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - began)
    return times


def query(spec: dict[str, Any]) -> dict[str, Any]:
    embedder = CountingEmbedder(spec.get("embedder", "hash"))
    queries = scifact_queries(limit=spec["queries"])
    docs = sentence_documents(spec["chunks"])
    out: dict[str, Any] = {"chunks_target": spec["chunks"]}
    if spec.get("vector_cache"):  # a model's corpus vectors, computed once and shared by every framework's query task
        embedder.preload([t for _, t in docs], cached_vectors(embedder, [t for _, t in docs], Path(spec["vector_cache"])))
    with tempfile.TemporaryDirectory(prefix="e2e-") as tmp:
        workdir = Path(tmp)
        retriever = spec["retriever"]
        name = spec["framework"]
        if name.startswith("ragloom"):
            framework = Ragloom(embedder, spec["store"], workdir, retriever)
            framework.ingest_pairs(docs)
            out["chunks"] = framework.chunks()
            out["corpus_embedded_live"] = embedder.misses  # corpus texts not found among the preloaded vectors
            pipeline = framework.pipeline
            store, namespace = pipeline.store, pipeline.namespace
            for q in queries[:5]:  # warm: lazy index builds, caches
                pipeline.query(q, top_k=10)
            vectors = [embedder.embed_query(q) for q in queries]
            depth = 10 if retriever == "similarity" else 100  # hybrid asks each member for 100 candidates
            # interleaved per query, so all parts see the same moment's load: the whole query, the embedder, the store's searches
            totals, embeds, searches, keywords, rests, scans = [], [], [], [], [], []
            # the bare numpy scan runs in the same loop, each time right after an embedder call as the store's search does, so it
            # finds the matrix as cold or warm as the store's search does (timed back to back over all queries, an 8 MB matrix stays
            # in cache and the scan looks 4x faster at 5k chunks; timed right after the store's search, it finds the matrix that
            # search just read while the search found what MiniLM's inference left: 1.5-1.8x apart at 5k)
            matrix = np.ascontiguousarray(store._vectors[: store._size]) if spec["store"] == "memory" and retriever == "similarity" else None
            for q, v in zip(queries, vectors, strict=True):
                began = time.perf_counter()
                pipeline.query(q, top_k=10)
                total = time.perf_counter() - began
                began = time.perf_counter()
                embedder.embed_query(q)
                embed = time.perf_counter() - began
                one_call = getattr(store, "hybrid_candidates", None) if retriever == "hybrid" else None
                began = time.perf_counter()
                if one_call is not None:  # what the hybrid retriever itself asks such a store for: both members in one call
                    one_call(namespace, v, q, top_k=depth)
                else:
                    store.search(namespace, v, top_k=depth)
                search = time.perf_counter() - began
                keyword = 0.0
                if retriever == "hybrid" and one_call is None:
                    began = time.perf_counter()
                    store.keyword_search(namespace, q, top_k=depth)
                    keyword = time.perf_counter() - began
                    keywords.append(keyword)
                if matrix is not None:
                    embedder.embed_query(q)  # the cache as the store's search found it: right after the embedder ran
                    began = time.perf_counter()
                    np.argpartition(-(matrix @ v), 10)[:10]
                    scans.append(time.perf_counter() - began)
                totals.append(total)
                embeds.append(embed)
                searches.append(search)
                rests.append(total - embed - search - keyword)
            out["total"] = percentiles(totals)
            out["embed"] = percentiles(embeds)
            out["vector_search"] = percentiles(searches)  # hybrid on a store with hybrid_candidates: both members, one call
            if retriever == "hybrid" and not keywords:
                out["search_is_one_call"] = True
            out["rest"] = percentiles(rests)
            if keywords:
                out["keyword_search"] = percentiles(keywords)
            if matrix is not None:
                out["numpy_scan"] = percentiles(scans)
                out["numpy_scan_interleaved"] = True
                out["numpy_scan_after_embed"] = True  # timed after an embedder call, as the store's search (older rows: right after that search)
                out["memory_search_top10"] = out["vector_search"]
            framework.close()
        else:
            framework = make(spec | {"keyword": retriever == "hybrid"}, embedder, workdir)
            framework.ingest_chunks(docs)  # the same ready chunks as ragloom's corpus, not split again
            out["chunks"] = framework.chunks()
            out["corpus_embedded_live"] = embedder.misses
            fn = peer_query(framework, name, retriever)
            for q in queries[:3]:
                fn(q)
            out["total"] = percentiles(sample(fn, queries))
            out["embed"] = percentiles(sample(embedder.embed_query, queries))
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def cached_vectors(embedder: CountingEmbedder, texts: list[str], path: Path) -> np.ndarray:
    """The embedder's vectors of ``texts``, read from ``path`` when an earlier task saved them."""
    if path.exists():
        vectors = np.load(path)
        if vectors.shape[0] == len(texts):
            return vectors
    vectors = embed_in_batches(embedder, texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def peer_query(framework: Any, name: str, retriever: str) -> Any:
    if name == "langchain":
        store = framework.store
        if retriever == "similarity":
            return lambda q: store.similarity_search(q, k=10)
        try:
            from langchain_classic.retrievers import EnsembleRetriever
        except ImportError:
            from langchain.retrievers import EnsembleRetriever  # type: ignore[no-redef]
        ensemble = EnsembleRetriever(retrievers=[framework.bm25, store.as_retriever(search_kwargs={"k": 10})], weights=[0.5, 0.5])
        return lambda q: ensemble.invoke(q)
    from llama_index.core import VectorStoreIndex

    index = VectorStoreIndex(framework.nodes, embed_model=framework.embed_model)  # the nodes carry their vectors: not embedded again
    vector = index.as_retriever(similarity_top_k=10)
    if retriever == "similarity":
        return lambda q: vector.retrieve(q)
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever

    fusion = QueryFusionRetriever([vector, framework.bm25], llm=MockLLM(), similarity_top_k=10, num_queries=1, mode="reciprocal_rerank", use_async=False)
    return lambda q: fusion.retrieve(q)


def bounded(spec: dict[str, Any]) -> dict[str, Any]:
    from ragloom import Pipeline

    with tempfile.TemporaryDirectory(prefix="e2e-") as tmp:
        pipeline = (
            Pipeline.builder()
            .chunker("recursive", size=1000, overlap=200)
            .embedder("hash", dim=384)
            .store("duckdb", path=str(Path(tmp) / "big.duckdb"))
            .build()
        )
        rss_before = current_rss_mb()
        began = time.perf_counter()
        result = pipeline.ingest(spec["directory"])
        seconds = time.perf_counter() - began
        chunks = pipeline.store.count(pipeline.namespace)
        pipeline.close()
    return {"seconds": seconds, "chunks": chunks, "sources": result.sources, "failed": len(result.failed), "rss_before_mb": rss_before, "peak_rss_mb": peak_rss_mb()}


def main() -> None:
    spec = json.loads(sys.argv[1])
    result = {"ingest": ingest, "query": query, "bounded": bounded}[spec["task"]](spec)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
