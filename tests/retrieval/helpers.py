"""Small real parts for retrieval tests: a store without optional capabilities, a fixed-vector embedder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragloom.stores.memory import MemoryStore
from ragloom.testing.store_contract import make_chunks
from ragloom.types import Chunk

NS = "t"


class VectorOnlyStore:
    """The memory store with its optional capabilities (keyword search, vectors) hidden."""

    capabilities: frozenset[str] = frozenset()

    def __init__(self, inner: MemoryStore | None = None):
        self._inner = inner or MemoryStore()

    def __getattr__(self, name: str) -> Any:
        if name in ("keyword_search", "get_vectors"):
            raise AttributeError(name)
        return getattr(self._inner, name)


class TableEmbedder:
    """A real embedder whose vectors are looked up in a table (unknown texts: the ``default`` vector)."""

    def __init__(self, table: dict[str, Sequence[float]], default: Sequence[float]):
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in table.items()}
        self.default = np.asarray(default, dtype=np.float32)
        self.dim = len(self.default)
        self.model_id = "table"
        self.batch_size = 16
        self.embedded: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.extend(texts)
        return np.stack([self.table.get(t, self.default) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self.table.get(text, self.default)


def commit(store: Any, source: str, texts: list[str], vectors: Sequence[Sequence[float]], **options: Any) -> list[Chunk]:
    """Write and commit one document of ``source``."""
    chunks = make_chunks(source, len(texts), texts=texts, **options)
    with store.session(NS) as session:
        stage = session.stage(source)
        stage.write(chunks, np.asarray(vectors, dtype=np.float32))
        stage.commit()
    return chunks
