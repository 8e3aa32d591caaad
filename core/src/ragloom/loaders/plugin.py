"""Default plugin: the built-in loaders."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragloom.hookspecs import hookimpl
from ragloom.loaders.csvfile import CSV_SUFFIXES, CsvLoader, CsvLoaderConfig
from ragloom.loaders.dispatch import AutoLoader, AutoLoaderConfig, LoaderSet
from ragloom.loaders.html import HTML_SUFFIXES, HtmlLoader, HtmlLoaderConfig
from ragloom.loaders.json import JSON_SUFFIXES, JsonLoader, JsonLoaderConfig
from ragloom.loaders.jsonl import JSONL_SUFFIXES, JsonlLoader, JsonlLoaderConfig
from ragloom.loaders.markdown import MARKDOWN_SUFFIXES, MarkdownLoader, MarkdownLoaderConfig
from ragloom.loaders.pdf import PDF_SUFFIXES, PdfLoader, PdfLoaderConfig
from ragloom.loaders.text import TEXT_SUFFIXES, TextLoader, TextLoaderConfig

if TYPE_CHECKING:
    from ragloom.plugins import BuildContext


def _text(config: TextLoaderConfig, context: BuildContext) -> TextLoader:
    """Plain text files: UTF-8 with or without BOM, other encodings detected."""
    return TextLoader(config)


def _markdown(config: MarkdownLoaderConfig, context: BuildContext) -> MarkdownLoader:
    """Markdown files; YAML frontmatter becomes metadata."""
    return MarkdownLoader(config)


def _json(config: JsonLoaderConfig, context: BuildContext) -> JsonLoader:
    """JSON files: one document per file or per array item; chosen fields in metadata."""
    return JsonLoader(config)


def _jsonl(config: JsonlLoaderConfig, context: BuildContext) -> JsonlLoader:
    """JSON Lines files, streamed: one document per line."""
    return JsonlLoader(config)


def _csv(config: CsvLoaderConfig, context: BuildContext) -> CsvLoader:
    """CSV and TSV files, streamed: one document per row."""
    return CsvLoader(config)


def _html(config: HtmlLoaderConfig, context: BuildContext) -> HtmlLoader:
    """HTML files: block-aware text; title, description, lang, canonical URL in metadata."""
    return HtmlLoader(config)


def _pdf(config: PdfLoaderConfig, context: BuildContext) -> PdfLoader:
    """PDF files (pdfminer.six): one document per file or per page; info and page numbers in metadata."""
    return PdfLoader(config)


def _auto(config: AutoLoaderConfig, context: BuildContext) -> AutoLoader:
    """Picks the loader for each file by its suffix (and each URL by its scheme)."""
    return AutoLoader(LoaderSet(context))


@hookimpl
def register_loaders(register):  # type: ignore[no-untyped-def]
    register("text", _text, config=TextLoaderConfig, suffixes=TEXT_SUFFIXES)
    register("markdown", _markdown, config=MarkdownLoaderConfig, suffixes=MARKDOWN_SUFFIXES)
    register("json", _json, config=JsonLoaderConfig, suffixes=JSON_SUFFIXES)
    register("jsonl", _jsonl, config=JsonlLoaderConfig, suffixes=JSONL_SUFFIXES)
    register("csv", _csv, config=CsvLoaderConfig, suffixes=CSV_SUFFIXES)
    register("html", _html, config=HtmlLoaderConfig, suffixes=HTML_SUFFIXES)
    register("pdf", _pdf, config=PdfLoaderConfig, suffixes=PDF_SUFFIXES)
    register("auto", _auto, config=AutoLoaderConfig)
