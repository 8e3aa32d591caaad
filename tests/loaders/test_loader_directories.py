"""A single-format loader given a directory loads only its own files, recursively, in sorted order."""

from __future__ import annotations

from pathlib import Path

import pytest
from pdfgen import make_pdf

from ragloom.loaders.csvfile import CsvLoader
from ragloom.loaders.html import HtmlLoader
from ragloom.loaders.json import JsonLoader
from ragloom.loaders.jsonl import JsonlLoader
from ragloom.loaders.markdown import MarkdownLoader
from ragloom.loaders.pdf import PdfLoader


@pytest.fixture
def folder(fixtures: Path) -> Path:
    """The checked-in samples plus a nested folder, a hidden file and files of other kinds."""
    (fixtures / "sub").mkdir()
    (fixtures / "sub" / "more.json").write_text('{"text": "nested json"}')
    (fixtures / "sub" / "more.htm").write_text("<p>nested html</p>")
    (fixtures / "sub" / "notes.md").write_text("# Notes\n\nnested markdown\n")
    (fixtures / "sub" / "extra.ndjson").write_text('"nested line"\n')
    (fixtures / ".hidden.json").write_text('{"text": "hidden"}')
    (fixtures / "intro.markdown").write_text("# Intro\n")
    (fixtures / "manual.pdf").write_bytes(make_pdf(["Manual page one."]))
    (fixtures / "readme.txt").write_text("not for these loaders\n")
    return fixtures


@pytest.mark.parametrize(
    ("loader", "names"),
    [
        (JsonLoader(), ["faq.json", "more.json"]),
        (JsonlLoader(), ["reviews.jsonl", "extra.ndjson"]),
        (CsvLoader(), ["parts.tsv", "products.csv"]),
        (HtmlLoader(), ["page.html", "more.htm"]),
        (MarkdownLoader(), ["intro.markdown", "notes.md"]),
        (PdfLoader(), ["manual.pdf"]),
    ],
)
def test_directory_loads_only_matching_files(folder: Path, loader: object, names: list[str]) -> None:
    docs = list(loader.load(str(folder)))  # type: ignore[attr-defined]
    assert [Path(source).name for source in dict.fromkeys(doc.source for doc in docs)] == names
