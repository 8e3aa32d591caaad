"""Default plugin: the built-in retrievers."""

from __future__ import annotations

from typing import Any

from ragloom.hookspecs import hookimpl
from ragloom.retrievers.similarity import SimilarityConfig, SimilarityRetriever


def _similarity(config: SimilarityConfig, context: Any) -> SimilarityRetriever:
    """Dense vector search: top_k nearest chunks, optional threshold and filter."""
    return SimilarityRetriever(config, store=context.store, embedder=context.embedder, namespace=context.namespace)


@hookimpl
def register_retrievers(register):  # type: ignore[no-untyped-def]
    register("similarity", _similarity, config=SimilarityConfig)
