"""The SciFact sample of ``data/`` (real text) and HNSW recall against exact search on it.

Shared by ``test_duckdb_hnsw.py`` (hash embedder) and the sentence-transformers
plugin's tests (MiniLM vectors), which load this file by path.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from ragloom.chunkers.recursive import RecursiveChunker, RecursiveConfig
from ragloom.types import Chunk, Document
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig

SAMPLE = Path(__file__).parent / "data" / "scifact-sample.jsonl.gz"
NS = "scifact"


def load_sample() -> tuple[list[Chunk], list[str]]:
    """Chunks of the sample's abstracts (recursive chunker, 500 characters) and its query texts."""
    chunker = RecursiveChunker(RecursiveConfig(size=500, overlap=0))
    chunks: list[Chunk] = []
    queries: list[str] = []
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record["kind"] == "doc":
                document = Document.create(f"{record['title']}\n\n{record['text']}", f"scifact/{record['_id']}")
                chunks.extend(chunker.chunk(document))
            else:
                queries.append(record["text"])
    return chunks, queries


def hnsw_recall(path: Path, chunks: list[Chunk], vectors: np.ndarray, queries: np.ndarray, config: DuckDBStoreConfig) -> float:
    """Recall@10 of the store's HNSW answers against its exact answers over the same file."""
    with DuckDBStore(DuckDBStoreConfig(), path=path) as store:
        with store.session(NS) as session:
            start = 0
            while start < len(chunks):  # chunks of one source come together
                end = start
                while end < len(chunks) and chunks[end].source == chunks[start].source:
                    end += 1
                stage = session.stage(chunks[start].source)
                stage.write(chunks[start:end], vectors[start:end])
                stage.commit()
                start = end
        exact = [[r.chunk_id for r in store.search(NS, q, top_k=10)] for q in queries]
    with DuckDBStore(config, path=path) as store:
        assert store.plan(NS) == "hnsw"
        approximate = [[r.chunk_id for r in store.search(NS, q, top_k=10)] for q in queries]
    hits = sum(len(set(a) & set(e)) for a, e in zip(approximate, exact, strict=True))
    return hits / sum(len(e) for e in exact)
