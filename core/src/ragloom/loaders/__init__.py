"""Loaders: the protocol, file helpers and the built-in loaders (text, markdown, json, jsonl, csv, html, pdf, auto)."""

from ragloom.loaders.base import Loader, decode_text, is_url, iter_files, resolve_source
from ragloom.loaders.csvfile import CsvLoader, CsvLoaderConfig
from ragloom.loaders.dispatch import AutoLoader, LoaderSet
from ragloom.loaders.html import HtmlContent, HtmlLoader, HtmlLoaderConfig, decode_html, extract_html
from ragloom.loaders.json import JsonLoader, JsonLoaderConfig
from ragloom.loaders.jsonl import JsonlLoader, JsonlLoaderConfig
from ragloom.loaders.markdown import MarkdownLoader, MarkdownLoaderConfig
from ragloom.loaders.pdf import PdfLoader, PdfLoaderConfig, pages_for_span
from ragloom.loaders.text import TextLoader, TextLoaderConfig

__all__ = [
    "AutoLoader",
    "CsvLoader",
    "CsvLoaderConfig",
    "HtmlContent",
    "HtmlLoader",
    "HtmlLoaderConfig",
    "JsonLoader",
    "JsonLoaderConfig",
    "JsonlLoader",
    "JsonlLoaderConfig",
    "Loader",
    "LoaderSet",
    "MarkdownLoader",
    "MarkdownLoaderConfig",
    "PdfLoader",
    "PdfLoaderConfig",
    "TextLoader",
    "TextLoaderConfig",
    "decode_html",
    "decode_text",
    "extract_html",
    "is_url",
    "iter_files",
    "pages_for_span",
    "resolve_source",
]
