"""ragloom plugin: local sentence-transformers embeddings and cross-encoder reranking.

Importing this package never imports torch; models load when a pipeline
builds the component.
"""

from __future__ import annotations

from ragloom_sentence_transformers.cross_encoder import CrossEncoderConfig, CrossEncoderReranker
from ragloom_sentence_transformers.embedder import SentenceTransformersConfig, SentenceTransformersEmbedder

__version__ = "0.1.0"
__all__ = ["CrossEncoderConfig", "CrossEncoderReranker", "SentenceTransformersConfig", "SentenceTransformersEmbedder"]
