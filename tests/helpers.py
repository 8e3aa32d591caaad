"""Helpers shared by the core tests (importable because tests/ is on pytest's pythonpath)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig


class CountingEmbedder(HashEmbedder):
    """The real hash embedder, counting how many texts it embeds."""

    def __init__(self, dim: int = 512):
        super().__init__(HashEmbedderConfig(dim=dim))
        self.calls = 0
        self.texts = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        return super().embed_documents(texts)
