"""Embedders: the protocol and the built-ins (``hash``, ``openai``)."""

from ragloom.embedders.base import DEFAULT_BATCH_SIZE, Embedder, embed_in_batches
from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.embedders.openai import OpenAIEmbedder, OpenAIEmbedderConfig

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "Embedder",
    "HashEmbedder",
    "HashEmbedderConfig",
    "OpenAIEmbedder",
    "OpenAIEmbedderConfig",
    "embed_in_batches",
]
