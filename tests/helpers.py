"""Helpers shared by the core tests (importable because tests/ is on pytest's pythonpath)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.stores.memory import MemoryStore


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


class FlushCountingStore(MemoryStore):
    """The memory store, counting its write sessions' flushes."""

    def __init__(self) -> None:
        super().__init__()
        self.flushes = 0

    def session(self, namespace: str) -> Any:
        session = super().session(namespace)
        flush = session.flush

        def counted() -> None:
            self.flushes += 1
            flush()

        session.flush = counted  # type: ignore[method-assign]
        return session
