"""Chunkers: the protocol and the built-in ``fixed`` and ``recursive`` chunkers."""

from ragloom.chunkers.base import Chunker, fingerprint_of, spans_to_chunks
from ragloom.chunkers.fixed import FixedChunker, FixedConfig
from ragloom.chunkers.recursive import RecursiveChunker, RecursiveConfig

__all__ = ["Chunker", "FixedChunker", "FixedConfig", "RecursiveChunker", "RecursiveConfig", "fingerprint_of", "spans_to_chunks"]
