"""Hostile input: whatever the bytes, the only exception a loader lets out is LoaderError."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pdfgen import make_pdf

from ragloom.errors import LoaderError
from ragloom.loaders import (
    CsvLoader,
    CsvLoaderConfig,
    HtmlLoader,
    HtmlLoaderConfig,
    JsonlLoader,
    JsonlLoaderConfig,
    JsonLoader,
    JsonLoaderConfig,
    MarkdownLoader,
    PdfLoader,
    TextLoader,
)
from ragloom.types import Document

FIXTURES = Path(__file__).parent / "fixtures"
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

LOADERS: dict[str, tuple[str, Callable[[], object]]] = {
    "text": (".txt", TextLoader),
    "markdown": (".md", MarkdownLoader),
    "json": (
        ".json",
        lambda: JsonLoader(JsonLoaderConfig(items_path="data.entries", content_field="answer.text", id_field="slug")),
    ),
    "json-plain": (".json", JsonLoader),
    "jsonl": (".jsonl", lambda: JsonlLoader(JsonlLoaderConfig(content_field="text", id_field="id", max_line_bytes=4096))),
    "csv": (".csv", lambda: CsvLoader(CsvLoaderConfig(content_columns=("body",), metadata_columns=("title",), id_column="id"))),
    "csv-plain": (".csv", CsvLoader),
    "html": (".html", lambda: HtmlLoader(HtmlLoaderConfig(selector="main p, li"))),
    "html-plain": (".html", HtmlLoader),
}
SAMPLES = {
    ".txt": "Grüße, Lumen Lamp.\n".encode() * 3,
    ".md": b"---\ntitle: Care\ntags: [a, b]\ndate: 2024-01-02\n---\n# Care\n\nWipe *gently*.\n",
    ".json": (FIXTURES / "faq.json").read_bytes(),
    ".jsonl": (FIXTURES / "reviews.jsonl").read_bytes(),
    ".csv": (FIXTURES / "products.csv").read_bytes(),
    ".html": (FIXTURES / "page.html").read_bytes(),
}


def load_only_loader_errors(name: str, data: bytes) -> list[Document]:
    suffix, make = LOADERS[name]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"input{suffix}"
        path.write_bytes(data)
        try:
            docs = list(make().load(str(path)))  # type: ignore[attr-defined]
        except LoaderError as exc:
            assert exc.source == str(path)
            return []
    assert all(isinstance(d, Document) and isinstance(d.text, str) for d in docs)
    assert len({d.id for d in docs}) == len(docs)
    return docs


names = st.sampled_from(sorted(LOADERS))


@FUZZ
@given(name=names, data=st.binary(max_size=2048))
def test_random_bytes(name: str, data: bytes) -> None:
    load_only_loader_errors(name, data)


@FUZZ
@given(name=names, cut=st.floats(0, 1), flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=4))
def test_truncated_and_damaged_samples(name: str, cut: float, flips: list[tuple[float, int]]) -> None:
    data = bytearray(SAMPLES[LOADERS[name][0]])
    for where, byte in flips:
        data[int(where * (len(data) - 1))] = byte
    load_only_loader_errors(name, bytes(data[: int(cut * len(data))]))


@FUZZ
@given(name=names, depth=st.integers(1, 60_000), opener=st.sampled_from(["[", '{"a":', "<div>", "<b>", '"', "<table><tr><td>"]))
def test_deep_nesting(name: str, depth: int, opener: str) -> None:
    load_only_loader_errors(name, (opener * depth + "x").encode())


@settings(max_examples=12, deadline=None)
@given(name=names, size=st.integers(100_000, 600_000), char=st.sampled_from(["a", "é", ",", '"', "<", " ", "\t", "{"]))
def test_huge_single_line(name: str, size: int, char: str) -> None:
    load_only_loader_errors(name, (char * size).encode())


def test_csv_huge_field_is_a_loader_error(tmp_path: Path) -> None:
    path = tmp_path / "huge.csv"
    path.write_bytes(b"t\n" + b"x" * 300_000)  # over max_text_chars (the csv field limit is raised to it)
    with pytest.raises(LoaderError, match="max_text_chars"):
        list(CsvLoader(CsvLoaderConfig(max_text_chars=200_000)).load(str(path)))


@settings(max_examples=40, deadline=None)
@given(cut=st.floats(0, 1), flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=6))
def test_damaged_pdfs(cut: float, flips: list[tuple[float, int]]) -> None:
    data = bytearray(
        make_pdf(["Page one of the lamp manual", "Seite zwei: Grüße"], info={"Title": "Manual"}, compress=bool(flips))
    )
    for where, byte in flips:
        data[int(where * (len(data) - 1))] = byte
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input.pdf"
        path.write_bytes(bytes(data[: max(int(cut * len(data)), 1)]))
        try:
            list(PdfLoader().load(str(path)))
        except LoaderError as exc:
            assert exc.source == str(path)


@settings(max_examples=15, deadline=None)
@given(depth=st.integers(1, 3_000), opener=st.sampled_from(["[", "{a: ", "- ", "&a [*a, "]))
def test_markdown_frontmatter_nesting(depth: int, opener: str) -> None:
    load_only_loader_errors("markdown", ("---\nkey: " + opener * depth + "\n---\nbody\n").encode())
