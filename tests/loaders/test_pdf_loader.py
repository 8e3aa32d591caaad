"""The pdf loader on real PDFs written by tests/loaders/pdfgen.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from pdfgen import make_pdf

from ragloom.config import Secret
from ragloom.errors import LoaderError
from ragloom.loaders import PdfLoader, PdfLoaderConfig, pages_for_span
from ragloom.loaders.pdf import pdf_date
from ragloom.types import make_document_id

PAGES = [
    "The Lumen Lamp manual\nChapter one: unpacking",
    "Grüße aus Köln — Ωμέγα, 日本語, emoji 😀",
    "",
    "Last page: warranty terms",
]
INFO = {"Title": "Lumen Lamp Manual ✓", "Author": "Zoë Ångström", "CreationDate": "D:20240131120500+01'00'", "ModDate": "D:2024"}


@pytest.fixture
def manual(tmp_path: Path) -> Path:
    path = tmp_path / "manual.pdf"
    path.write_bytes(make_pdf(PAGES, info=INFO))
    return path


def test_whole_document_with_page_offsets(manual: Path) -> None:
    [doc] = PdfLoader().load(str(manual))
    assert doc.text == "\n\n".join(PAGES)
    assert doc.id == make_document_id(str(manual))
    offsets = doc.metadata["page_offsets"]
    assert [doc.text[o : o + len(p)] for o, p in zip(offsets, PAGES, strict=True)] == PAGES
    assert doc.metadata["page_count"] == 4
    assert doc.metadata["title"] == "Lumen Lamp Manual ✓"
    assert doc.metadata["author"] == "Zoë Ångström"
    assert doc.metadata["creation_date"] == "2024-01-31T12:05:00+01:00"
    assert doc.metadata["modification_date"] == "2024-01-01"
    warranty = doc.text.index("warranty")
    assert pages_for_span(doc.metadata, warranty, warranty + 8) == [4]
    assert pages_for_span(doc.metadata, doc.text.index("Chapter"), doc.text.index("Köln")) == [1, 2]
    assert pages_for_span(doc.metadata, 0, len(doc.text)) == [1, 2, 3, 4]


def test_split_pages(manual: Path) -> None:
    docs = list(PdfLoader(PdfLoaderConfig(split_pages=True)).load(str(manual)))
    assert [d.metadata["page"] for d in docs] == [1, 2, 4]  # the empty page is left out
    assert [d.text for d in docs] == [PAGES[0], PAGES[1], PAGES[3]]
    assert docs[1].id == make_document_id(str(manual), "page:2")
    assert all(d.metadata["title"] == "Lumen Lamp Manual ✓" and "page_offsets" not in d.metadata for d in docs)
    assert pages_for_span(docs[1].metadata, 0, 3) == [2]
    kept = list(PdfLoader(PdfLoaderConfig(split_pages=True, skip_empty_pages=False)).load(str(manual)))
    assert [d.metadata["page"] for d in kept] == [1, 2, 3, 4]


def test_pages_for_span_without_pdf_metadata() -> None:
    assert pages_for_span({"file_name": "a.txt"}, 0, 5) == []


def test_uncompressed_pdf_without_info(tmp_path: Path) -> None:
    path = tmp_path / "plain.pdf"
    path.write_bytes(make_pdf(["only page"], compress=False))
    [doc] = PdfLoader().load(str(path))
    assert doc.text == "only page"
    assert doc.metadata == {"file_name": "plain.pdf", "page_count": 1, "page_offsets": [0]}


def test_encrypted_pdf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "locked.pdf"
    path.write_bytes(make_pdf(["classified lamp plans"], info={"Title": "Locked"}, user_password="s3cret"))
    with pytest.raises(LoaderError, match="encrypted; set `password`") as info:
        list(PdfLoader().load(str(path)))
    assert info.value.source == str(path)
    monkeypatch.setenv("PDF_PASSWORD", "wrong")
    with pytest.raises(LoaderError, match="password is wrong"):
        list(PdfLoader(PdfLoaderConfig(password=Secret("PDF_PASSWORD"))).load(str(path)))
    monkeypatch.setenv("PDF_PASSWORD", "s3cret")
    [doc] = PdfLoader(PdfLoaderConfig(password=Secret("PDF_PASSWORD"))).load(str(path))
    assert doc.text == "classified lamp plans"
    assert doc.metadata["title"] == "Locked"


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 3],
        lambda data: data.replace(b"obj", b"jbo"),
        lambda data: b"%PDF-1.4\n" + b"\x00garbage" * 50,
        lambda data: b"",
        lambda data: b"just text, not a PDF",
    ],
)
def test_corrupt_pdf_is_a_loader_error(tmp_path: Path, damage) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "broken.pdf"
    path.write_bytes(damage(make_pdf(PAGES, info=INFO)))
    with pytest.raises(LoaderError) as info:
        list(PdfLoader().load(str(path)))
    assert info.value.source == str(path)


def test_limits(manual: Path) -> None:
    with pytest.raises(LoaderError, match="max_file_bytes"):
        list(PdfLoader(PdfLoaderConfig(max_file_bytes=100)).load(str(manual)))
    with pytest.raises(LoaderError, match=r"\(page 2\).*max_text_chars"):
        list(PdfLoader(PdfLoaderConfig(max_text_chars=60)).load(str(manual)))


@pytest.mark.parametrize(
    ("raw", "iso"),
    [
        ("D:20240131120500Z", "2024-01-31T12:05:00+00:00"),
        ("D:20240131120500-05'30'", "2024-01-31T12:05:00-05:30"),
        ("D:202401", "2024-01-01"),
        ("20240131", "2024-01-31"),
        ("yesterday", None),
    ],
)
def test_pdf_dates(raw: str, iso: str | None) -> None:
    assert pdf_date(raw) == iso
