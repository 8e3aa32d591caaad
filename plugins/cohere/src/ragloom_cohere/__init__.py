"""ragloom plugin: Cohere's v2 Rerank and Embed endpoints."""

from __future__ import annotations

from ragloom_cohere.embed import CohereEmbedConfig, CohereEmbedder
from ragloom_cohere.rerank import CohereRerankConfig, CohereReranker

__version__ = "0.1.0"
__all__ = ["CohereEmbedConfig", "CohereEmbedder", "CohereRerankConfig", "CohereReranker"]
