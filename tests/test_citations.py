"""Citations of records in files holding many documents locate the record, then the span within it."""

from __future__ import annotations

import json
from pathlib import Path

from test_cli import ragloom

from ragloom import Pipeline

CSV = 'part,note\nbulb,"replace the bulb\nevery two years"\n\ncable,check the cable yearly\nbase,the base never needs service\n'
JSONL = '{"text": "The remote needs two AAA batteries."}\n\n{"text": "The dimmer remembers its last level."}\n'
FAQ = [{"q": "Colour?", "a": "Warm white only."}, {"q": "Travel?", "a": "Fold the arm before packing the lamp."}]


def _files(folder: Path) -> Path:
    folder.mkdir()
    (folder / "parts.csv").write_text(CSV, encoding="utf-8")
    (folder / "notes.jsonl").write_text(JSONL, encoding="utf-8")
    (folder / "faq.json").write_text(json.dumps(FAQ, indent=2), encoding="utf-8")
    return folder


def test_citation_names_row_line_item_and_span(tmp_path: Path) -> None:
    folder = _files(tmp_path / "data")
    builder = Pipeline.builder().loader("csv", content_columns=["note"]).loader("json", content_field="a")
    pipeline = builder.loader("jsonl", content_field="text").build()
    pipeline.ingest(folder)
    lines = CSV.splitlines()

    cable = pipeline.query("check the cable yearly", top_k=1)[0]
    assert cable.locator == "row 2, line 5"  # the quoted newline and the blank line are counted as file lines
    assert lines[cable.metadata["line"] - 1].startswith("cable,")
    assert cable.citation() == f"{folder / 'parts.csv'} (row 2, line 5) [0:22]" and cable.text == "check the cable yearly"

    bulb = pipeline.query("replace the bulb every two years", top_k=1)[0]
    assert bulb.locator == "row 1, line 2" and lines[1].startswith("bulb,")

    dimmer = pipeline.query("dimmer remembers its last level", top_k=1)[0]
    assert dimmer.citation() == f"{folder / 'notes.jsonl'} (line 3) [0:36]"
    assert json.loads(JSONL.splitlines()[2])["text"] == dimmer.text

    travel = pipeline.query("fold the arm before packing", top_k=1)[0]
    assert travel.citation() == f"{folder / 'faq.json'} (item 1) [0:37]" and FAQ[1]["a"] == travel.text


def test_cli_query_prints_the_record_position(tmp_path: Path) -> None:
    _files(tmp_path / "data")
    (tmp_path / "ragloom.toml").write_text(
        '[[sources]]\npath = "data"\n[loaders.csv]\ncontent_columns = ["note"]\n[store]\ntype = "duckdb"\npath = "kb.duckdb"\n',
        encoding="utf-8",
    )
    assert ragloom("ingest", cwd=tmp_path).returncode == 0
    human = ragloom("query", "check the cable yearly", "-k", "1", cwd=tmp_path).stdout.splitlines()[0]
    assert human.startswith("1. [") and human.endswith("data/parts.csv [0:22] (row 2, line 5)")
    found = json.loads(ragloom("query", "check the cable yearly", "-k", "1", "--json", cwd=tmp_path).stdout)["results"][0]
    assert found["citation"] == f"{tmp_path / 'data' / 'parts.csv'} (row 2, line 5) [0:22]"
