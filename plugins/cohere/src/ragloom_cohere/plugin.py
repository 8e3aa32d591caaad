"""The entry point: registers the ``cohere`` reranker and the ``cohere`` embedder."""

from __future__ import annotations

from ragloom.plugin import BuildContext, hookimpl
from ragloom_cohere.embed import CohereEmbedConfig, CohereEmbedder
from ragloom_cohere.rerank import CohereRerankConfig, CohereReranker


def _cohere_reranker(config: CohereRerankConfig, context: BuildContext) -> CohereReranker:
    """Cohere Rerank v2 (rerank-v3.5 by default), batched, with a keep-order fallback."""
    return CohereReranker(config)


def _cohere_embedder(config: CohereEmbedConfig, context: BuildContext) -> CohereEmbedder:
    """Cohere Embed v2: search_document for chunks, search_query for queries."""
    return CohereEmbedder(config)


@hookimpl
def register_rerankers(register):  # type: ignore[no-untyped-def]
    register("cohere", _cohere_reranker, config=CohereRerankConfig)


@hookimpl
def register_embedders(register):  # type: ignore[no-untyped-def]
    register("cohere", _cohere_embedder, config=CohereEmbedConfig)
