"""Loaders: the protocol, file helpers and the built-in ``text``, ``markdown`` and ``auto`` loaders."""

from ragloom.loaders.base import Loader, is_url, iter_files, resolve_source
from ragloom.loaders.dispatch import AutoLoader, LoaderSet
from ragloom.loaders.html import HtmlContent, HtmlLoader, HtmlLoaderConfig, extract_html
from ragloom.loaders.markdown import MarkdownLoader, MarkdownLoaderConfig
from ragloom.loaders.text import TextLoader, TextLoaderConfig

__all__ = [
    "AutoLoader",
    "HtmlContent",
    "HtmlLoader",
    "HtmlLoaderConfig",
    "Loader",
    "LoaderSet",
    "MarkdownLoader",
    "MarkdownLoaderConfig",
    "TextLoader",
    "TextLoaderConfig",
    "extract_html",
    "is_url",
    "iter_files",
    "resolve_source",
]
