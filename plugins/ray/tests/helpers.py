"""A corpus, pipelines in-process and on Ray from one config, and a store snapshot to compare them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ragloom import Pipeline, PipelineConfig

WORDS = "river lamp copper garden violin harbor orbit maple signal canyon ember thistle quartz meadow".split()

#: the ray executor on the test's 2-CPU cluster: every stage fits at once
RAY_OPTIONS: dict[str, Any] = {
    "load_tasks": 2,
    "load_cpus": 0.25,
    "embedders": 1,
    "embedder_cpus": 0.25,
    "writers": 1,
    "writer_cpus": 0.25,
    "batch_size": 4,
    "progress_bars": False,
}


def text(seed: int, words: int) -> str:
    """Deterministic prose with paragraph breaks."""
    out = []
    for i in range(words):
        out.append(WORDS[(seed * 7 + i * 3 + i // 5) % len(WORDS)])
        if i % 37 == 36:
            out.append("\n\n")
    return " ".join(out).strip() + "\n"


def make_corpus(root: Path, files: int = 36) -> Path:
    """Text and Markdown files in two folders, a JSONL file of records, an empty file, a bad JSON file, a skipped suffix."""
    corpus = root / "corpus"
    (corpus / "a").mkdir(parents=True)
    (corpus / "b" / "deep").mkdir(parents=True)
    for i in range(files):
        folder = corpus / ("a" if i % 2 else "b/deep")
        suffix = ".md" if i % 5 == 0 else ".txt"
        (folder / f"doc{i:03d}{suffix}").write_text((f"# Title {i}\n\n" if suffix == ".md" else "") + text(i, 60 + 13 * i), encoding="utf-8")
    rows = [{"id": f"r{i}", "text": text(100 + i, 40), "topic": WORDS[i % len(WORDS)]} for i in range(12)]
    (corpus / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (corpus / "empty.txt").write_text("", encoding="utf-8")
    (corpus / "broken.json").write_text('{"id": 1, "text": ', encoding="utf-8")
    (corpus / "image.xyz").write_bytes(b"\x00\x01")
    return corpus


def pipeline(store: dict[str, Any], base_dir: Path, *, ray: dict[str, Any] | None = None, on_error: str = "skip") -> Pipeline:
    """The same TOML-equivalent pipeline; ``ray`` options switch the executor and change nothing else."""
    ingest: dict[str, Any] = {"on_error": on_error, "commit_every": 5, "batch_size": 64}
    if ray is not None:
        ingest["executor"] = "ray"
        ingest["ray"] = ray
    data = {
        "chunker": {"type": "recursive", "size": 300, "overlap": 30},
        "embedder": {"type": "hash", "dim": 64},
        "store": store,
        "ingest": ingest,
    }
    return Pipeline.from_config(PipelineConfig.from_dict(data, base_dir=base_dir))


def snapshot(p: Pipeline) -> dict[str, Any]:
    """Every visible chunk: id -> (document, source, text, span, metadata, tags), and its vector."""
    store, ns = p.store, p.namespace
    count = store.count(ns)
    dim = store.dimension()
    if not count or dim is None:
        return {"chunks": {}, "vectors": np.zeros((0, 0), dtype=np.float32), "sources": store.sources(ns), "count": count}
    results = store.search(ns, np.ones(dim, dtype=np.float32), top_k=count + 10)
    assert len(results) == count, "a chunk is visible twice or not at all"
    chunks = {r.chunk_id: (r.document_id, r.source, r.text, tuple(r.span), json.dumps(r.metadata, sort_keys=True, default=str), tuple(r.tags)) for r in results}
    assert len(chunks) == count, "duplicate chunk ids"
    ids = sorted(chunks)
    vectors = store.get_vectors(ns, ids)  # type: ignore[attr-defined]
    return {"chunks": chunks, "vectors": np.asarray(vectors), "ids": ids, "sources": store.sources(ns), "count": count}


def assert_same_store(ray_side: Pipeline, local: Pipeline) -> None:
    """Identical chunk ids, documents, sources, texts, spans, metadata, tags; vectors to 1e-6; counts."""
    a, b = snapshot(ray_side), snapshot(local)
    assert a["count"] == b["count"]
    assert a["sources"] == b["sources"]
    assert a["chunks"] == b["chunks"]
    if a["count"]:
        np.testing.assert_allclose(a["vectors"], b["vectors"], atol=1e-6)


def comparable(result: Any) -> dict[str, Any]:
    """An IngestResult as a dict (the order of failures and removals is the listing order on both sides)."""
    return result.to_dict()


def edit_corpus(corpus: Path) -> None:
    """Change one file, add one, delete one, rewrite the JSONL with one record changed and one gone."""
    changed = sorted((corpus / "a").glob("*.txt"))[0]
    changed.write_text(text(999, 120), encoding="utf-8")
    (corpus / "a" / "new.txt").write_text(text(555, 90), encoding="utf-8")
    sorted((corpus / "b" / "deep").glob("*.txt"))[0].unlink()
    lines = (corpus / "records.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["text"] = "a rewritten record about lamps"
    (corpus / "records.jsonl").write_text("\n".join([json.dumps(first), *lines[2:]]) + "\n", encoding="utf-8")
