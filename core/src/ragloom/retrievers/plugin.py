"""Default plugin: the built-in retrievers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragloom.hookspecs import hookimpl
from ragloom.retrievers.bm25 import BM25Retriever, BM25RetrieverConfig
from ragloom.retrievers.hybrid import HybridConfig, HybridRetriever
from ragloom.retrievers.mmr import MMRConfig, MMRRetriever
from ragloom.retrievers.multi_query import MultiQueryConfig, MultiQueryRetriever, build_multi_query
from ragloom.retrievers.similarity import SimilarityConfig, SimilarityRetriever

if TYPE_CHECKING:
    from ragloom.plugins import BuildContext


def _similarity(config: SimilarityConfig, context: BuildContext) -> SimilarityRetriever:
    """Dense vector search: top_k nearest chunks, optional threshold and filter."""
    what = "the similarity retriever"
    return SimilarityRetriever(config, store=context.require_store(what), embedder=context.require_embedder(what), namespace=context.namespace)


def _bm25(config: BM25RetrieverConfig, context: BuildContext) -> BM25Retriever:
    """Keyword search (BM25) through the store's keyword index."""
    return BM25Retriever(config, store=context.require_store("the bm25 retriever"), namespace=context.namespace)


def _hybrid(config: HybridConfig, context: BuildContext) -> HybridRetriever:
    """BM25 + vector search, fused per query on scores comparable across queries (mode "auto", default), "convex" or "rrf"."""
    what = "the hybrid retriever"
    return HybridRetriever(config, store=context.require_store(what), embedder=context.require_embedder(what), namespace=context.namespace)


def _mmr(config: MMRConfig, context: BuildContext) -> MMRRetriever:
    """Maximal marginal relevance: relevant and diverse results among the fetch_k nearest."""
    what = "the mmr retriever"
    return MMRRetriever(config, store=context.require_store(what), embedder=context.require_embedder(what), namespace=context.namespace)


def _multi_query(config: MultiQueryConfig, context: BuildContext) -> MultiQueryRetriever:
    """LLM query variants searched concurrently on a base retriever, merged by best score."""
    return build_multi_query(config, context)


@hookimpl
def register_retrievers(register):  # type: ignore[no-untyped-def]
    register("similarity", _similarity, config=SimilarityConfig)
    register("bm25", _bm25, config=BM25RetrieverConfig)
    register("hybrid", _hybrid, config=HybridConfig)
    register("mmr", _mmr, config=MMRConfig)
    register("multi_query", _multi_query, config=MultiQueryConfig)
