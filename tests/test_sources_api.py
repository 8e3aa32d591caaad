"""Sources in the Python API: ids that are not paths, directories, clear(), per-source counts; top_k checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom import ConfigError, Document, Pipeline, PipelineConfig


@pytest.fixture(params=["memory", "duckdb"])
def pipeline(request: pytest.FixtureRequest, tmp_path: Path) -> Pipeline:
    options = {"path": str(tmp_path / "kb.duckdb")} if request.param == "duckdb" else {}
    built = Pipeline.builder().base_dir(tmp_path).store(request.param, **options).build()
    yield built
    built.close()


def test_non_path_sources_are_removed_as_stored(pipeline: Pipeline, tmp_path: Path) -> None:
    pipeline.ingest_documents(
        [
            Document.create("Ticket: the lamp flickers at 20 percent.", "ticket:42"),
            Document.create("Page about the lamp's warranty.", "https://example.com/warranty"),
            Document.create("Record 7 of the app's database.", "records/7"),
        ]
    )
    assert pipeline.sources() == sorted(["ticket:42", "https://example.com/warranty", "records/7"])
    assert pipeline.remove_source("ticket:42") == 1
    assert pipeline.remove_source("https://example.com/warranty") == 1
    assert pipeline.remove_source("records/7") == 1  # stored as given, not as <base_dir>/records/7
    assert pipeline.sources() == []
    assert not (tmp_path / "ticket:42").exists()


def test_remove_a_directory_and_clear(pipeline: Pipeline, corpus: Path) -> None:
    pipeline.ingest(corpus)
    counts = pipeline.source_counts()
    assert len(counts) == 12 and sum(counts.values()) == pipeline.stats()["chunks"]
    (corpus / "sub").mkdir()
    (corpus / "sub" / "extra.md").write_text("# Extra\n\nA note.\n")
    pipeline.ingest(corpus / "sub")
    assert pipeline.remove_source(corpus / "sub") == 1
    assert pipeline.match_sources(corpus / "nothing-here") == []
    assert pipeline.remove_source(corpus) == sum(counts.values())
    pipeline.ingest(corpus)
    assert pipeline.clear() == sum(counts.values()) + 1 and pipeline.sources() == []  # sub/extra.md is back


@pytest.mark.parametrize("retriever", ["similarity", "hybrid", "bm25", "mmr"])
def test_top_k_at_most_zero_is_a_config_error(retriever: str, corpus: Path) -> None:
    with pytest.raises(ConfigError, match=r"top_k"):
        Pipeline.builder().retriever(retriever, top_k=0).build()
    data = {"retriever": {"type": retriever, "top_k": -2}}
    with pytest.raises(ConfigError, match=r"'top_k' must be > 0: -2 @ \$\.retriever"):
        PipelineConfig.from_dict(data)
    pipeline = Pipeline.builder().retriever(retriever).build()
    pipeline.ingest(corpus)
    for bad in (0, -2, 2.5, True):
        with pytest.raises(ConfigError, match=r"invalid value .* @ top_k: expected an integer > 0"):
            pipeline.query("lamp", top_k=bad)
    with pytest.raises(ConfigError, match="top_n"):
        pipeline.query("lamp", top_n=0)
    assert len(pipeline.query("lamp", top_k=2)) == 2


def test_a_filter_on_a_key_no_chunk_has_is_reported(corpus: Path) -> None:
    pipeline = Pipeline.builder().build()
    pipeline.ingest(corpus)
    with pytest.warns(UserWarning, match="no stored chunk has the metadata key 'product_line'"):
        assert pipeline.query("lamp", filter={"product_line": "support"}) == []
    assert "no stored chunk has the metadata key 'product_line'" in pipeline.explain_empty("lamp", filter={"product_line": "support"})
    assert pipeline.explain_empty("lamp", filter={"source": "nowhere"}) == "the filter excluded every stored chunk"
    assert "threshold 0.99" in pipeline.explain_empty("lamp", threshold=0.99)
    assert "store holds nothing" in Pipeline.builder().build().explain_empty("lamp")
