"""Chunkers: the protocol and the built-in ``fixed``, ``recursive``, ``sentence``, ``markdown`` and ``semantic`` chunkers."""

from ragloom.chunkers.base import Chunker, fingerprint_of, spans_to_chunks
from ragloom.chunkers.fixed import FixedChunker, FixedConfig
from ragloom.chunkers.markdown import MarkdownChunker, MarkdownConfig
from ragloom.chunkers.recursive import RecursiveChunker, RecursiveConfig
from ragloom.chunkers.semantic import SemanticChunker, SemanticConfig
from ragloom.chunkers.sentence import SentenceChunker, SentenceConfig

__all__ = [
    "Chunker",
    "FixedChunker",
    "FixedConfig",
    "MarkdownChunker",
    "MarkdownConfig",
    "RecursiveChunker",
    "RecursiveConfig",
    "SemanticChunker",
    "SemanticConfig",
    "SentenceChunker",
    "SentenceConfig",
    "fingerprint_of",
    "spans_to_chunks",
]
