"""Error hints of the DuckDB store name only what works there."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom import DimensionMismatchError, Document, Pipeline


def _pipeline(path: Path, *, dim: int, namespace: str = "kb") -> Pipeline:
    return Pipeline.builder().namespace(namespace).embedder("hash", dim=dim).store("duckdb", path=str(path)).build()


def test_dimension_mismatch_suggests_a_new_store_path_which_works(tmp_path: Path) -> None:
    with _pipeline(tmp_path / "kb.duckdb", dim=64) as first:
        first.ingest_documents([Document.create("The lamp glows warm.", "note:1")])
    with pytest.raises(DimensionMismatchError) as info:
        _pipeline(tmp_path / "kb.duckdb", dim=32)
    message = str(info.value)
    assert "another [store] path" in message and "new store path / namespace" not in message
    with pytest.raises(DimensionMismatchError):  # a new namespace in the same file cannot work
        _pipeline(tmp_path / "kb.duckdb", dim=32, namespace="fresh")
    with _pipeline(tmp_path / "other.duckdb", dim=32) as other:  # what the hint suggests does
        other.ingest_documents([Document.create("The lamp glows warm.", "note:1")])
        assert other.query("lamp")[0].source == "note:1"
