"""Default plugin: the built-in loaders."""

from __future__ import annotations

from typing import Any

from ragloom.hookspecs import hookimpl
from ragloom.loaders.dispatch import AutoLoader, AutoLoaderConfig, LoaderSet
from ragloom.loaders.html import HTML_SUFFIXES, HtmlLoader, HtmlLoaderConfig
from ragloom.loaders.markdown import MARKDOWN_SUFFIXES, MarkdownLoader, MarkdownLoaderConfig
from ragloom.loaders.text import TEXT_SUFFIXES, TextLoader, TextLoaderConfig


def _text(config: TextLoaderConfig, context: Any) -> TextLoader:
    """Plain UTF-8 text files."""
    return TextLoader(config)


def _markdown(config: MarkdownLoaderConfig, context: Any) -> MarkdownLoader:
    """Markdown files; YAML frontmatter becomes metadata."""
    return MarkdownLoader(config)


def _html(config: HtmlLoaderConfig, context: Any) -> HtmlLoader:
    """HTML files: block-aware text, title/description/lang/canonical URL in metadata."""
    return HtmlLoader(config)


def _auto(config: AutoLoaderConfig, context: Any) -> AutoLoader:
    """Picks the loader for each file by its suffix (and each URL by its scheme)."""
    return AutoLoader(LoaderSet(context))


@hookimpl
def register_loaders(register):  # type: ignore[no-untyped-def]
    register("text", _text, config=TextLoaderConfig, suffixes=TEXT_SUFFIXES)
    register("markdown", _markdown, config=MarkdownLoaderConfig, suffixes=MARKDOWN_SUFFIXES)
    register("html", _html, config=HtmlLoaderConfig, suffixes=HTML_SUFFIXES)
    register("auto", _auto, config=AutoLoaderConfig)
