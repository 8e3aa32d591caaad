"""The loaders inside a pipeline: mixed directories, on_error, metadata reaching query results."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pdfgen import make_pdf

from ragloom import LoaderError, Pipeline
from ragloom.loaders import pages_for_span


@pytest.fixture
def mixed(fixtures: Path) -> Path:
    """A folder with one file of every kind, plus one no loader handles."""
    (fixtures / "intro.md").write_text(
        "---\ntitle: Intro\naudience: owners\n---\n# Welcome\n\nThe Lumen Lamp glows in three colours.\n"
    )
    (fixtures / "notes.txt").write_text("Battery notes: the lamp runs ten hours on one charge.\n")
    (fixtures / "manual.pdf").write_bytes(
        make_pdf(
            ["Manual page one: assembly of the stand.", "Manual page two: the dimmer dial has five steps."],
            info={"Title": "Lumen Manual", "Author": "Lumen Inc."},
        )
    )
    (fixtures / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return fixtures


def test_mixed_directory_in_one_call(mixed: Path) -> None:
    pipeline = Pipeline.builder().build()
    result = pipeline.ingest(mixed)
    assert [Path(s).name for s in result.skipped] == ["photo.png"]
    assert result.failed == ()
    assert result.sources == 8
    # md 1 + txt 1 + json 1 (an object) + jsonl 3 lines + csv 3 rows + tsv 2 rows + html 1 + pdf 1
    assert result.documents == 13
    stored = {Path(s).name for s in pipeline.store.sources(pipeline.namespace)}
    assert stored == {
        "intro.md",
        "notes.txt",
        "faq.json",
        "reviews.jsonl",
        "products.csv",
        "parts.tsv",
        "page.html",
        "manual.pdf",
    }
    again = pipeline.ingest(mixed)
    assert again.embedded == 0 and again.unchanged == 13


def test_loader_metadata_reaches_query_results(mixed: Path) -> None:
    pipeline = (
        Pipeline.builder()
        .loader(
            "json", items_path="data.entries", content_field="answer.text", id_field="slug", metadata_fields=("topic", "rank")
        )
        .loader("jsonl", content_field="text", metadata_fields=("stars",))
        .loader("csv", content_columns=("body",), metadata_columns=("title", "category"))
        .build()
    )
    (mixed / "parts.tsv").unlink()  # [loaders.csv] options apply to every CSV file; this one has other columns
    pipeline.ingest(mixed)

    [hit] = pipeline.query("battery plane", filter={"topic": "travel"})
    assert hit.text == "Yes, the battery is under 100 Wh." and hit.metadata["rank"] == 3 and hit.metadata["id"] == "travel"
    assert {h.metadata["item"] for h in pipeline.query("light", top_k=10, filter={"rank": {"$gte": 2}})} == {1, 2}

    [hit] = pipeline.query("cable", filter={"line": 5})
    assert hit.text == "The cable is short." and hit.metadata["stars"] == 2

    [hit] = pipeline.query("warm light", filter={"$and": [{"file_name": "products.csv"}, {"row": 2}]})
    assert hit.metadata["title"] == "Colour, warm" and hit.metadata["category"] == "light"

    [hit] = pipeline.query("shade cloth", filter={"lang": "en-GB"})
    assert hit.metadata["title"] == "Lumen Lamp – Care Guide"
    assert hit.metadata["canonical_url"] == "/guides/care"
    assert hit.metadata["description"].startswith("How to clean")

    hits = pipeline.query("dimmer dial steps", filter={"author": "Lumen Inc."})
    assert hits and all(h.metadata["title"] == "Lumen Manual" for h in hits)
    dimmer = next(h for h in hits if "dimmer" in h.text)
    assert 2 in pages_for_span(dimmer.metadata, *dimmer.span)

    [hit] = pipeline.query("colours", filter={"audience": "owners"})
    assert hit.metadata["title"] == "Intro"


def test_pdf_pages_in_query_results(mixed: Path) -> None:
    pipeline = Pipeline.builder().loader("pdf", split_pages=True).build()
    pipeline.ingest(mixed / "manual.pdf")
    [hit] = pipeline.query("dimmer", filter={"page": 2})
    assert "five steps" in hit.text
    assert hit.metadata["page_count"] == 2


def test_on_error_skip_reports_every_failure_and_keeps_old_data(mixed: Path) -> None:
    pipeline = Pipeline.builder().ingest_options(on_error="skip").build()
    pipeline.ingest(mixed)
    reviews = mixed / "reviews.jsonl"
    reviews.write_text('{"text": "A new first review."}\n{"text": broken\n')
    (mixed / "manual.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf")
    (mixed / "products.csv").write_text("a,b\n1,2,3\n")
    result = pipeline.ingest(mixed)
    failed = {Path(f.source).name: f.reason for f in result.failed}
    assert set(failed) == {"reviews.jsonl", "manual.pdf", "products.csv"}
    assert "invalid JSON" in failed["reviews.jsonl"]
    assert "not a readable PDF" in failed["manual.pdf"]
    assert failed["products.csv"] == "row has 3 values but there are 2 columns (wrong delimiter ','?)"
    assert all(f.source.startswith(str(mixed)) for f in result.failed)
    # the failing sources keep their previous generation, whole and not doubled
    texts = [h.text for h in pipeline.query("review", top_k=50, filter={"file_name": "reviews.jsonl"})]
    assert len(texts) == 3 and "A new first review." not in texts
    assert len(pipeline.query("manual", top_k=50, filter={"file_name": "manual.pdf"})) >= 1


def test_on_error_fail_stops_with_the_path_and_writes_nothing_half(mixed: Path) -> None:
    bad = mixed / "zz-bad.jsonl"  # sorted last: everything before it is ingested first
    bad.write_text('{"text": "good line one"}\n{"text": "good line two"}\n{oops}\n')
    pipeline = Pipeline.builder().ingest_options(on_error="fail").build()
    with pytest.raises(LoaderError) as info:
        pipeline.ingest(mixed)
    assert info.value.source == str(bad) and info.value.position == "line 3"
    assert str(bad) in str(info.value)
    assert str(bad) not in pipeline.store.sources(pipeline.namespace)
    assert pipeline.query("good line", top_k=50, filter={"file_name": "zz-bad.jsonl"}) == []


def test_on_error_fail_keeps_the_previous_generation(mixed: Path) -> None:
    only = mixed / "reviews.jsonl"
    pipeline = Pipeline.builder().ingest_options(on_error="fail").build()
    pipeline.ingest(only)
    before = sorted(c.text for c in pipeline.store.chunks(pipeline.namespace))
    shutil.copy(only, mixed / "backup.jsonl")
    only.write_text('{"text": "replacement"}\n[unclosed\n')
    with pytest.raises(LoaderError, match="line 2"):
        pipeline.ingest(only)
    assert sorted(c.text for c in pipeline.store.chunks(pipeline.namespace)) == before


def test_cli_reports_skipped_and_failed_files(mixed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragloom.cli import main

    (mixed / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj <<")
    config = tmp_path / "ragloom.toml"
    config.write_text('[ingest]\non_error = "skip"\n\n[loaders.html]\nselector = "main"\n\n[loaders.pdf]\nsplit_pages = true\n')
    main(["-c", str(config), "ingest", str(mixed)])
    out = capsys.readouterr().out
    assert "skipped (no loader for this file type):" in out and "photo.png" in out
    assert "failed:" in out and "broken.pdf: not a readable PDF" in out
