"""Retrievers: the protocol and the built-ins (similarity, bm25, hybrid, mmr, multi_query)."""

from ragloom.retrievers.base import Retriever
from ragloom.retrievers.bm25 import BM25Retriever, BM25RetrieverConfig
from ragloom.retrievers.hybrid import HybridConfig, HybridRetriever, HybridWeights
from ragloom.retrievers.mmr import MMRConfig, MMRRetriever, mmr_select
from ragloom.retrievers.multi_query import MultiQueryConfig, MultiQueryRetriever, clean_variants, parse_variants
from ragloom.retrievers.similarity import SimilarityConfig, SimilarityRetriever

__all__ = [
    "BM25Retriever",
    "BM25RetrieverConfig",
    "HybridConfig",
    "HybridRetriever",
    "HybridWeights",
    "MMRConfig",
    "MMRRetriever",
    "MultiQueryConfig",
    "MultiQueryRetriever",
    "Retriever",
    "SimilarityConfig",
    "SimilarityRetriever",
    "clean_variants",
    "mmr_select",
    "parse_variants",
]
