"""ragloom-qdrant: the ``qdrant`` store for ragloom (a Qdrant server, or qdrant-client's local mode).

``QdrantStore`` is imported lazily, so discovering the plugin does not import
qdrant-client.
"""

from __future__ import annotations

from typing import Any

from ragloom_qdrant.config import QdrantStoreConfig

__all__ = ["QdrantStore", "QdrantStoreConfig"]


def __getattr__(name: str) -> Any:
    if name == "QdrantStore":
        from ragloom_qdrant.store import QdrantStore

        return QdrantStore
    raise AttributeError(f"module 'ragloom_qdrant' has no attribute {name!r}")
