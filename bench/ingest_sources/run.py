"""Many small sources: files/s of a whole ``Pipeline.ingest`` into the memory and DuckDB stores.

    python bench/ingest_sources/run.py                  # 10,000 Markdown files of ~2 kB
    python bench/ingest_sources/run.py --files 1000 --json out.json

Generates ``--files`` Markdown files of about 2 kB (a heading and paragraphs of
seeded random words), then for each store runs, in one process and one run:
the first ingest of the directory and an unchanged re-ingest (same pipeline),
with the ``hash`` embedder and the default ``recursive`` chunker. Reports
files/s and the DuckDB/memory ratio for both. Only the public Pipeline API is
used, so the same script measures an older checkout (put its ``core/src`` and
``plugins/duckdb/src`` first on ``PYTHONPATH``).

Numbers depend on the machine and its load: compare ratios measured in one run.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ragloom import Pipeline

WORDS = (
    "lamp light warm cold desk bulb switch cable power socket glass shade brass copper room window "
    "table chair wall floor ceiling paper note order error warranty repair return shipping price "
    "colour white black amber green blue bright dim timer sensor battery charge hour week month"
).split()


def make_corpus(root: Path, files: int, size: int = 2000, seed: int = 7) -> int:
    """Write ``files`` Markdown files of about ``size`` characters; return the bytes written."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    total = 0
    for i in range(files):
        parts = [f"# Note {i}: {' '.join(rng.choices(WORDS, k=4))}\n"]
        length = len(parts[0])
        while length < size:
            paragraph = " ".join(rng.choices(WORDS, k=rng.randint(25, 60))).capitalize() + "."
            parts.append(paragraph)
            length += len(paragraph) + 2
        text = "\n\n".join(parts)
        # spread over folders of 500 files, as a real corpus would be
        folder = root / f"part{i // 500:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"note{i:05d}.md").write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


def pipeline_for(kind: str, workdir: Path) -> Pipeline:
    builder = Pipeline.builder().embedder("hash")
    if kind == "memory":
        builder = builder.store("memory")
    else:
        builder = builder.store("duckdb", path=str(workdir / "bench.duckdb"))
    return builder.build()


def measure(kind: str, corpus: Path, files: int, workdir: Path) -> dict[str, Any]:
    pipeline = pipeline_for(kind, workdir)
    try:
        start = time.perf_counter()
        first = pipeline.ingest(corpus)
        first_s = time.perf_counter() - start
        start = time.perf_counter()
        again = pipeline.ingest(corpus)
        again_s = time.perf_counter() - start
        assert first.sources == files and again.unchanged_sources == files and again.embedded == 0, (first, again)
        return {
            "store": kind,
            "files": files,
            "chunks": first.chunks,
            "first_s": round(first_s, 2),
            "first_files_per_s": round(files / first_s, 1),
            "reingest_s": round(again_s, 2),
            "reingest_files_per_s": round(files / again_s, 1),
        }
    finally:
        pipeline.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--label", default="", help="a name for this run (e.g. before / after)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="ragloom-bench-sources-"))
    try:
        corpus = workdir / "corpus"
        size = make_corpus(corpus, args.files)
        rows = [measure(kind, corpus, args.files, workdir) for kind in ("memory", "duckdb")]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    memory, duckdb = rows
    ratios = {
        "first": round(duckdb["first_files_per_s"] / memory["first_files_per_s"], 2),
        "reingest": round(duckdb["reingest_files_per_s"] / memory["reingest_files_per_s"], 2),
    }
    import ragloom

    report = {
        "label": args.label,
        "ragloom": str(Path(ragloom.__file__).resolve().parent),
        "python": sys.version.split()[0],
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "corpus_bytes": size,
        "rows": rows,
        "duckdb_over_memory": ratios,
    }
    print(f"{args.files} Markdown files, {size / args.files:.0f} bytes each on average ({args.label or 'this checkout'})\n")
    print("| store | chunks | first ingest | files/s | unchanged re-ingest | files/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(
            f"| {row['store']} | {row['chunks']} | {row['first_s']} s | {row['first_files_per_s']} | "
            f"{row['reingest_s']} s | {row['reingest_files_per_s']} |"
        )
    print(f"\nDuckDB / memory files/s: first ingest {ratios['first']}x, unchanged re-ingest {ratios['reingest']}x")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
