"""Embedders: the protocol and the built-in ``hash`` embedder."""

from ragloom.embedders.base import DEFAULT_BATCH_SIZE, Embedder, embed_in_batches
from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig

__all__ = ["DEFAULT_BATCH_SIZE", "Embedder", "HashEmbedder", "HashEmbedderConfig", "embed_in_batches"]
