"""Default plugin: the built-in chunkers."""

from __future__ import annotations

from typing import Any

from ragloom.chunkers.fixed import FixedChunker, FixedConfig
from ragloom.chunkers.recursive import RecursiveChunker, RecursiveConfig
from ragloom.hookspecs import hookimpl


def _fixed(config: FixedConfig, context: Any) -> FixedChunker:
    """Fixed-size character windows with overlap."""
    return FixedChunker(config)


def _recursive(config: RecursiveConfig, context: Any) -> RecursiveChunker:
    """Separator-aware recursive splitting (paragraph, line, sentence, word)."""
    return RecursiveChunker(config)


@hookimpl
def register_chunkers(register):  # type: ignore[no-untyped-def]
    register("fixed", _fixed, config=FixedConfig)
    register("recursive", _recursive, config=RecursiveConfig)
