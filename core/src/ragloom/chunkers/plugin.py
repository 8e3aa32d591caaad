"""Default plugin: the built-in chunkers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragloom.chunkers.fixed import FixedChunker, FixedConfig
from ragloom.chunkers.markdown import MarkdownChunker, MarkdownConfig
from ragloom.chunkers.recursive import RecursiveChunker, RecursiveConfig
from ragloom.chunkers.semantic import SemanticChunker, SemanticConfig
from ragloom.chunkers.sentence import SentenceChunker, SentenceConfig
from ragloom.hookspecs import hookimpl

if TYPE_CHECKING:
    from ragloom.plugins import BuildContext


def _fixed(config: FixedConfig, context: BuildContext) -> FixedChunker:
    """Fixed-size character windows with overlap."""
    return FixedChunker(config)


def _recursive(config: RecursiveConfig, context: BuildContext) -> RecursiveChunker:
    """Separator-aware recursive splitting (paragraph, line, sentence, word); chars or tokens."""
    return RecursiveChunker(config, base_dir=context.base_dir)


def _sentence(config: SentenceConfig, context: BuildContext) -> SentenceChunker:
    """Whole sentences packed up to a size (abbreviation-aware); chars or tokens."""
    return SentenceChunker(config, base_dir=context.base_dir)


def _markdown(config: MarkdownConfig, context: BuildContext) -> MarkdownChunker:
    """Markdown sections by heading, code fences and tables kept whole, heading path in metadata."""
    return MarkdownChunker(config)


def _semantic(config: SemanticConfig, context: BuildContext) -> SemanticChunker:
    """Breaks where the embedding similarity of neighbouring sentences drops."""
    return SemanticChunker(config, embedder=context.embedder)


@hookimpl
def register_chunkers(register):  # type: ignore[no-untyped-def]
    register("fixed", _fixed, config=FixedConfig)
    register("recursive", _recursive, config=RecursiveConfig)
    register("sentence", _sentence, config=SentenceConfig)
    register("markdown", _markdown, config=MarkdownConfig)
    register("semantic", _semantic, config=SemanticConfig)
